import Callsign
import CallsignSQLite
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// The queues every offline test runs against.
enum QueueKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqlite

    var testDescription: String { rawValue }

    func make() -> (queue: any OfflineQueueStorage, file: URL?) {
        switch self {
        case .memory: return (MemoryOfflineQueue(), nil)
        case .sqlite:
            let file = Scratch.folder().appendingPathComponent("queue.sqlite")
            return (SQLiteOfflineQueue(url: file), file)
        }
    }
}

private func lastSegment(_ url: String) -> String { url.split(separator: "/").last.map(String.init) ?? "" }

/// A port with nothing listening: a server started and stopped. These tests are of `replay()`:
/// the queue drains only when they call it (the drain has tests of its own, `OfflineDrainTests`).
private func offlineClient(
    port: Int, queue: any OfflineQueueStorage, configure: (inout APIClient.Configuration) -> Void = { _ in }
) -> APIClient {
    APIClient(configuration: .init {
        $0.baseURL = URL(string: "http://127.0.0.1:\(port)/")
        $0.retry = .none
        $0.offline.queue = queue
        $0.offline.drain = .manual
        configure(&$0)
    }, transport: TransportKind.asyncHTTPClient.make())
}

@Suite("Offline queue", .hangGuard)
struct OfflineQueueTests {
    @Test("An unreachable server queues the request with an id; replay sends it once the server is back", arguments: QueueKind.allCases)
    func queueAndReplay(kind: QueueKind) async throws {
        let (queue, _) = kind.make()
        let refusing = try RefusingPort()
        defer { refusing.release() }  // held for the whole test, so no parallel test takes the port
        let port = refusing.port
        let client = offlineClient(port: port, queue: queue)
        let error = await apiError {
            _ = try await client.post("/anything/boards").parameters(["title": "Balsa Fish"]).storePolicy(.offline).send()
        }
        #expect(error?.code == .queuedOffline)
        #expect(error?.queuedRequestID == 1)
        #expect(error?.message.contains("queued as #1") == true)
        let queued = try await client.queuedRequests()
        #expect(queued.map(\.url) == ["http://127.0.0.1:\(port)/anything/boards"])
        #expect(queued.first?.idempotencyKey?.isEmpty == false)

        // Without the store policy a failure stays a failure, and nothing is queued.
        let plain = await apiError { _ = try await client.post("/anything/x").parameters(["a": 1]).send() }
        #expect(plain?.code == .transport)
        #expect(try await client.queuedRequests().count == 1)

        let server = try await TestServer.start(port: port)  // shares the port `refusing` still holds
        let report = try await client.replay()
        #expect(report.sent == 1)
        #expect(report.remaining == 0)
        let received = try #require(server.requests.first)
        #expect(received.method == "POST")
        #expect(received.rawPath == "/anything/boards")
        #expect(String(decoding: received.body, as: UTF8.self) == #"{"title":"Balsa Fish"}"#)
        #expect(received.header("Idempotency-Key") == queued.first?.idempotencyKey)
        #expect(received.header("Content-Type") == "application/json")
        #expect(try await client.queuedRequests().isEmpty)
        await server.stop()
        try await client.transport.shutdown()
    }

    @Test("Replay keeps FIFO order, dead-letters permanent failures, stops at a transient one", arguments: QueueKind.allCases)
    func orderAndDeadLetter(kind: QueueKind) async throws {
        let (queue, _) = kind.make()
        let refusing = try RefusingPort()
        defer { refusing.release() }  // held for the whole test, so no parallel test takes the port
        let port = refusing.port
        let client = offlineClient(port: port, queue: queue)
        for name in ["one", "rejected", "two", "busy", "three"] {
            _ = await apiError { _ = try await client.put("/replay/\(name)").parameters(["n": .string(name)]).storePolicy(.offline).send() }
        }
        #expect(try await client.queuedRequests().count == 5)

        let server = try await TestServer.start(port: port)  // shares the port `refusing` still holds
        let busyAnswers = CallCounter()
        server.route("/replay/") { request in
            switch request.rawPath {
            case "/replay/rejected": return .json(["error": "invalid"], status: 422)
            case "/replay/busy": return busyAnswers.next() == 1 ? .json(["error": "busy"], status: 503) : .json(["ok": true])
            default: return .json(["ok": true])
            }
        }
        let first = try await client.replay()
        #expect(first.items.map { lastSegment($0.request.url) } == ["one", "rejected", "two", "busy"])
        #expect(first.sent == 2)
        #expect(first.deadLettered == 1)
        #expect(first.remaining == 2)
        if case .keptForLater(let error) = first.items.last?.outcome {
            #expect(error.message.contains("503"))
        } else {
            Issue.record("the 503 should keep the request for later")
        }
        let dead = try await client.queuedRequests(.deadLetter)
        #expect(dead.map { lastSegment($0.url) } == ["rejected"])
        #expect(dead.first?.lastError?.contains("422") == true)

        let second = try await client.replay()
        #expect(second.items.map { lastSegment($0.request.url) } == ["busy", "three"])
        #expect(second.remaining == 0)
        #expect(server.requests.map(\.rawPath) == ["/replay/one", "/replay/rejected", "/replay/two", "/replay/busy", "/replay/busy", "/replay/three"])
        // Every attempt of one queued request carries the same Idempotency-Key.
        let busyKeys = Set(server.requests.filter { $0.rawPath == "/replay/busy" }.compactMap { $0.header("Idempotency-Key") })
        #expect(busyKeys.count == 1)
        #expect(try await client.removeQueuedRequest(try #require(dead.first).id))
        #expect(try await client.queuedRequests(.deadLetter).isEmpty)
        await server.stop()
        try await client.transport.shutdown()
    }

    @Test("Tokens are attached at replay, never stored; requests carrying their own secrets are refused")
    func credentials() async throws {
        let file = Scratch.folder().appendingPathComponent("queue.sqlite")
        let queue = SQLiteOfflineQueue(url: file)
        let refusing = try RefusingPort()
        defer { refusing.release() }  // held for the whole test, so no parallel test takes the port
        let port = refusing.port
        let client = offlineClient(port: port, queue: queue) { $0.authentication = .bearer("queue-secret-token-123") }
        let queued = await apiError {
            _ = try await client.post("/anything/private").parameters(["note": "hello"]).authorized().storePolicy(.offline).send()
        }
        #expect(queued?.code == .queuedOffline)
        let bytes = Scratch.databaseBytes(file)
        #expect(bytes.range(of: Data("/anything/private".utf8)) != nil)
        #expect(bytes.range(of: Data("queue-secret-token-123".utf8)) == nil)

        let ownHeader = await apiError {
            _ = try await client.post("/anything/x").header("X-Api-Key", "k-123").storePolicy(.offline).send()
        }
        #expect(ownHeader?.code == .invalidRequest)
        #expect(ownHeader?.message.contains("X-Api-Key") == true)
        #expect(ownHeader?.message.contains("k-123") == false)
        let secretField = await apiError {
            _ = try await client.post("/anything/x").parameters(["password": "hunter2"]).storePolicy(.offline).send()
        }
        #expect(secretField?.code == .invalidRequest)
        #expect(Scratch.databaseBytes(file).range(of: Data("hunter2".utf8)) == nil)
        #expect(try await client.queuedRequests().count == 1)

        let server = try await TestServer.start(port: port)  // shares the port `refusing` still holds
        let report = try await client.replay()
        #expect(report.sent == 1)
        #expect(server.requests.first?.header("Authorization") == "Bearer queue-secret-token-123")
        await server.stop()
        try await client.transport.shutdown()
    }

    @Test("Two replayers sharing one SQLite queue never send the same request twice")
    func concurrentReplayers() async throws {
        let file = Scratch.folder().appendingPathComponent("queue.sqlite")
        let server = try await TestServer.start()
        let port = server.port
        // Written straight into the queue: how requests got there is another test's business, and
        // a "closed" port another test's server could take meanwhile would lose some on the way.
        let writer = SQLiteOfflineQueue(url: file)
        for index in 0..<30 {
            _ = try await writer.enqueue(
                QueuedRequest(method: "PUT", url: "http://127.0.0.1:\(port)/anything/item-\(index)", headers: ["Idempotency-Key": "item-\(index)"]))
        }
        let first = offlineClient(port: port, queue: SQLiteOfflineQueue(url: file))
        let second = offlineClient(port: port, queue: SQLiteOfflineQueue(url: file))
        // Each replays until the queue is empty; a replayer that finds the head claimed stops early.
        async let a: Int = {
            var sent = 0
            while try await !first.queuedRequests().isEmpty { sent += try await first.replay().sent }
            return sent
        }()
        async let b: Int = {
            var sent = 0
            while try await !second.queuedRequests().isEmpty { sent += try await second.replay().sent }
            return sent
        }()
        let (sentByA, sentByB) = try await (a, b)
        #expect(sentByA + sentByB == 30)
        let paths = server.requests.map(\.rawPath)
        #expect(paths == (0..<30).map { "/anything/item-\($0)" })
        await server.stop()
        for client in [first, second] { try await client.transport.shutdown() }
    }

    @Test("A read-only, full or corrupt database is a storage error at enqueue; a corrupt file is moved aside")
    func databaseFailures() async throws {
        let refusing = try RefusingPort()
        defer { refusing.release() }  // refuses connections for the whole test
        let port = refusing.port

        let full = offlineClient(port: port, queue: SQLiteOfflineQueue(url: Scratch.folder().appendingPathComponent("full.sqlite"), maximumSize: 64 << 10))
        var sawFull: APIError?
        for _ in 0..<40 {
            let error = await apiError {
                _ = try await full.post("/anything/x").body(.data(Data(repeating: 7, count: 8 << 10))).storePolicy(.offline).send()
            }
            if error?.code != .queuedOffline { sawFull = error; break }
        }
        #expect(sawFull?.code == .storage)
        #expect(sawFull?.message.contains("NOT queued") == true)
        #expect(sawFull?.message.contains("full") == true)

        let corruptFile = Scratch.folder().appendingPathComponent("corrupt.sqlite")
        try Data(repeating: 0x42, count: 8192).write(to: corruptFile)
        let corrupt = offlineClient(port: port, queue: SQLiteOfflineQueue(url: corruptFile))
        let failure = await apiError { _ = try await corrupt.post("/anything/x").storePolicy(.offline).send() }
        #expect(failure?.code == .storage)
        #expect(failure?.message.contains("corrupt") == true)
        let folder = try FileManager.default.contentsOfDirectory(atPath: corruptFile.deletingLastPathComponent().path)
        #expect(folder.contains { $0.hasPrefix("corrupt.sqlite.corrupt-") })
        // The next enqueue starts a new database instead of failing forever.
        let retried = await apiError { _ = try await corrupt.post("/anything/x").storePolicy(.offline).send() }
        #expect(retried?.code == .queuedOffline)
        for client in [full, corrupt] { try await client.transport.shutdown() }
    }
}

/// Counts calls across tasks.
final class CallCounter: Sendable {
    private let value = Mutex(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}
