import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// A request is queued only when no byte of it reached the server, or when arriving twice is
/// harmless; anything else is a distinct outcome the caller can tell apart.
@Suite("Offline delivery: queue only what never reached the server", .hangGuard)
struct OfflineDeliveryTests {
    /// Sends `request` with the offline store policy through a client on `kind`; returns the
    /// error and how many requests wait in the queue afterwards.
    private func sendOffline(
        _ request: Request, to baseURL: URL, kind: TransportKind, attempt: Duration = .seconds(600),
        configure: (inout APIClient.Configuration) -> Void = { _ in }
    ) async throws -> (error: APIError?, queued: Int) {
        let queue = MemoryOfflineQueue()
        var configuration = APIClient.Configuration()
        configuration.baseURL = baseURL
        configuration.offline.queue = queue
        configuration.retry = .none
        // By default a hang guard: a refused port and a reset end at once, however busy the
        // machine. Tests of a server that never answers pass the limit that ends them.
        configuration.timeouts.attempt = attempt
        configure(&configuration)
        let transport = kind.make()
        defer { Task { try? await transport.shutdown() } }
        let client = APIClient(configuration: configuration, transport: transport)
        var request = request
        request.storePolicy = .offline
        let error = await apiError { _ = try await client.send(request) }
        return (error, await queue.list(.pending).count)
    }

    /// A transport that fails every request with one of URLSession's errors, as iOS reports them.
    private struct FailingTransport: Transport {
        let code: URLError.Code
        func send(_ request: TransportRequest) async throws -> TransportResponse { throw URLError(code) }
    }

    /// An offline POST through a transport that fails with `code`: the error, and how many wait.
    private func sendOffline(failingWith code: URLError.Code, to base: String) async -> (error: APIError?, queued: Int) {
        let queue = MemoryOfflineQueue()
        let client = APIClient(
            configuration: .init {
                $0.baseURL = URL(string: base)
                $0.offline.queue = queue
                $0.retry = .none
            }, transport: FailingTransport(code: code))
        var request = Request.post("notes", parameters: ["text": "tunnel"])
        request.storePolicy = .offline
        let error = await apiError { _ = try await client.send(request) }
        return (error, await queue.list(.pending).count)
    }

    @Test("every error that means the request never left the device queues an offline POST: no network, cellular data off, roaming off, a call on the line")
    func neverLeftIsQueued() async throws {
        for code: URLError.Code in [.notConnectedToInternet, .dataNotAllowed, .internationalRoamingOff, .callIsActive, .cannotFindHost, .cannotConnectToHost, .dnsLookupFailed] {
            let outcome = await sendOffline(failingWith: code, to: "https://api.example.com/")
            #expect(outcome.error?.code == .queuedOffline, "\(code.rawValue): \(String(describing: outcome.error))")
            #expect(outcome.queued == 1, "\(code.rawValue)")
        }
        // Lost mid-exchange: it may have been sent, so an unkeyed POST is not queued; App Transport
        // Security's refusal was never sent, but never will be: an error to fix, not to queue.
        for (code, expected) in [(URLError.Code.networkConnectionLost, APIError.Code.deliveryUnknown), (.appTransportSecurityRequiresSecureConnection, .invalidRequest)] {
            let outcome = await sendOffline(failingWith: code, to: "http://api.example.com/")
            #expect(outcome.error?.code == expected, "\(code.rawValue): \(String(describing: outcome.error))")
            #expect(outcome.queued == 0)
        }
    }

    @Test("connection refused: nothing was sent, so the POST is queued", arguments: TransportKind.allCases)
    func refusedIsQueued(kind: TransportKind) async throws {
        let refusing = try RefusingPort()
        let outcome = try await sendOffline(.post("notes", parameters: ["text": "a"]), to: URL(string: "http://127.0.0.1:\(refusing.port)/")!, kind: kind)
        #expect(outcome.error?.code == .queuedOffline)
        #expect(outcome.queued == 1)
        withExtendedLifetime(refusing) {}
    }

    @Test("a slow POST (sent, no answer) is not queued: the server may have processed it", arguments: TransportKind.allCases)
    func slowPostIsNotQueued(kind: TransportKind) async throws {
        try await RawServer.withRunning([.hang]) { server in
            // The limit must fire after the POST was written: 10 s is a hundred times a slow
            // machine's loopback write.
            let outcome = try await sendOffline(.post("notes", parameters: ["text": "a"]), to: server.baseURL, kind: kind, attempt: .seconds(10))
            #expect(outcome.error?.code == .deliveryUnknown)
            #expect(outcome.error?.requestSent == true)
            #expect(outcome.error?.message.contains("may have processed") == true)
            #expect(outcome.queued == 0)
        }
    }

    @Test("a reset after the POST was written is not queued either", arguments: TransportKind.allCases)
    func resetAfterWriteIsNotQueued(kind: TransportKind) async throws {
        try await RawServer.withRunning([.pause(.milliseconds(20)), .reset]) { server in
            let outcome = try await sendOffline(.post("notes", parameters: ["text": "a"]), to: server.baseURL, kind: kind)
            #expect(outcome.error?.code == .deliveryUnknown)
            #expect(outcome.queued == 0)
        }
    }

    @Test("with an Idempotency-Key the server honours, a sent POST is queued (the server deduplicates)", arguments: TransportKind.allCases)
    func keyedPostIsQueued(kind: TransportKind) async throws {
        try await RawServer.withRunning([.hang]) { server in
            var request = Request.post("notes", parameters: ["text": "a"])
            request.headers["Idempotency-Key"] = "note-a-1"
            // Sent or not when the limit fires, a keyed request is queued: the limit can be short.
            let outcome = try await sendOffline(request, to: server.baseURL, kind: kind, attempt: .milliseconds(500))
            #expect(outcome.error?.code == .queuedOffline)
            #expect(outcome.queued == 1)
            let keyed = try await sendOffline(.post("notes", parameters: ["text": "b"]), to: server.baseURL, kind: kind, attempt: .milliseconds(500)) {
                $0.retry = RetryPolicy(maximumAttempts: 1, addsIdempotencyKey: true)
            }
            #expect(keyed.error?.code == .queuedOffline)
        }
    }

    @Test("an idempotent PUT that got no answer is queued: arriving twice changes nothing", arguments: TransportKind.allCases)
    func idempotentIsQueued(kind: TransportKind) async throws {
        try await RawServer.withRunning([.hang]) { server in
            let outcome = try await sendOffline(.put("notes/1", parameters: ["text": "a"]), to: server.baseURL, kind: kind, attempt: .milliseconds(500))
            #expect(outcome.error?.code == .queuedOffline)
        }
    }

    @Test("TLS failures are final: their own code, never retried, never queued", arguments: TransportKind.allCases)
    func tlsIsFinal(kind: TransportKind) async throws {
        // A server that answers a TLS ClientHello with plain HTTP: the handshake cannot succeed.
        try await RawServer.withRunning([rawResponse(headers: ["Content-Length: 2"], body: "ok")], waitsForRequest: false) { server in
            let https = URL(string: "https://127.0.0.1:\(server.port)/")!
            let retried = Mutex<[String]>([])
            let outcome = try await sendOffline(.post("notes", parameters: ["text": "a"]), to: https, kind: kind) {
                $0.retry = RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(1))
                $0.timeouts.attempt = .seconds(120)  // the handshake fails at once; a loaded machine must not turn it into a timeout
                $0.observability.observers = [RetryRecorder { report in retried.withLock { $0.append(report.outcome) } }]
            }
            #expect(outcome.error?.code == .tls, "\(outcome.error.map(String.init(describing:)) ?? "no error")")
            #expect(outcome.error?.requestSent == false)
            #expect(outcome.queued == 0)
            // A TLS failure is never retried. (On a loaded machine the server's early bytes can
            // also end an attempt as a reset before the handshake fails; that one may be retried.)
            #expect(retried.withLock { $0 }.allSatisfy { !$0.contains("TLS") }, "\(retried.withLock { $0 })")
        }
    }
}

/// Replay delivers only on a 2xx from the original URL.
@Suite("Offline replay: delivered means a 2xx from the original URL", .hangGuard)
struct OfflineReplayRuleTests {
    private func queued(_ server: TestServer, path: String) async -> (APIClient, MemoryOfflineQueue) {
        let queue = MemoryOfflineQueue()
        _ = await queue.enqueue(
            QueuedRequest(method: "POST", url: server.url(path).absoluteString, headers: ["Content-Type": "application/json"], body: Data("{}".utf8)))
        let client = APIClient(configuration: .init {
            $0.baseURL = server.baseURL
            $0.offline.queue = queue
            $0.offline.drain = .manual  // these are rules of replay()
            $0.retry = .none
        })
        return (client, queue)
    }

    @Test("a 302 → /login is not followed and not counted as delivered; the request stays queued")
    func redirectIsNotDelivery() async throws {
        try await TestServer.withRunning { server in
            server.route("/notes") { _ in ServerResponse(status: 302, headers: [("Location", "/login")]) }
            let (client, queue) = await queued(server, path: "/notes")
            let report = try await client.replay()
            #expect(report.sent == 0)
            #expect(report.remaining == 1)
            #expect(server.hits("/login") == 0)
            guard case .keptForLater(let error) = report.items.first?.outcome else {
                Issue.record("expected the request to be kept")
                return
            }
            #expect(error.message.contains("302"))
            #expect(await queue.list(.deadLetter).isEmpty)
        }
    }

    @Test("a 401 keeps the request (sign in again); a 422 dead-letters it, and retryDeadLetter brings it back")
    func unauthorizedAndDeadLetters() async throws {
        try await TestServer.withRunning { server in
            server.route("/private") { _ in ServerResponse(status: 401, headers: []) }
            let (client, queue) = await queued(server, path: "/private")
            let kept = try await client.replay()
            #expect(kept.remaining == 1)
            #expect(await queue.list(.deadLetter).isEmpty)
            _ = await queue.remove(1)

            let answers = Answers(first: 422)
            server.route("/strict") { _ in ServerResponse(status: answers.next(), headers: []) }
            _ = await queue.enqueue(QueuedRequest(method: "POST", url: server.url("/strict").absoluteString, headers: [:]))
            let dead = try await client.replay()
            #expect(dead.deadLettered == 1)
            let id = try #require(await queue.list(.deadLetter).first?.id)
            #expect(try await client.retryDeadLetter(id))
            #expect(try await client.retryDeadLetter(id) == false)
            let sent = try await client.replay()
            #expect(sent.sent == 1)
            #expect(sent.remaining == 0)
        }
    }
}

/// Answers `first`, then 201 for ever.
private final class Answers: Sendable {
    private let first: Int
    private let count = Mutex(0)
    init(first: Int) { self.first = first }
    func next() -> Int {
        count.withLock { count in
            defer { count += 1 }
            return count == 0 ? first : 201
        }
    }
}
