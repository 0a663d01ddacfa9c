@testable import Callsign
import CallsignSQLite
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// Queued requests go out by themselves once their origin can be reached again: no `replay()`.
/// The server is stopped and started again on one port (held by a ``RefusingPort`` between, so
/// no parallel test takes it); time between probes comes from a ``TestClock``.
@Suite("The offline queue drains itself when the server comes back", .hangGuard)
struct OfflineDrainTests {
    /// A client on `port` whose offline POSTs go to `queue`, its clock `clock`.
    private func client(
        port: Int, queue: any OfflineQueueStorage, clock: TestClock, configure: (inout APIClient.Configuration) -> Void = { _ in }
    ) -> APIClient {
        APIClient(
            configuration: .init {
                $0.baseURL = URL(string: "http://127.0.0.1:\(port)/")
                $0.offline.queue = queue
                $0.retry = .none
                $0.clock = clock
                $0.timeouts.attempt = .seconds(600)  // a hang guard: a refused port ends at once
                configure(&$0)
            })
    }

    /// A server that is down: its port held (no parallel test takes it, and a server can start on
    /// it again), a clock whose sleeps wait for the test, and a client on both with a memory queue.
    private final class Outage {
        let refusing: RefusingPort
        let clock = TestClock(waitsForAdvance: true)
        let queue = MemoryOfflineQueue()
        let client: APIClient
        var port: Int { refusing.port }

        init(configure: (inout APIClient.Configuration) -> Void = { _ in }) throws {
            refusing = try RefusingPort()
            client = OfflineDrainTests().client(port: refusing.port, queue: queue, clock: clock, configure: configure)
        }

        /// Frees the port; called at the end of the test, which keeps the outage until then.
        func end() { refusing.release() }
    }

    /// An offline POST of note `number`; it must be queued, since the server is down. It carries
    /// its own Idempotency-Key: a connection the stopped server left in the pool fails only after
    /// the request was written, and a POST that may arrive twice is queued only with a key.
    private func queueNote(_ number: Int, through client: APIClient, sentBy: String = "will be sent once the server can be reached") async {
        var request = Request.post("notes", parameters: ["n": .int(number)], headers: ["Idempotency-Key": UUID().uuidString])
        request.storePolicy = .offline
        let error = await apiError { _ = try await client.send(request) }
        #expect(error?.code == .queuedOffline, "\(String(describing: error))")
        #expect(error?.message.contains(sentBy) == true, "\(error?.message ?? "")")
    }

    /// The notes a server was sent: their numbers and Idempotency-Keys, in order.
    private final class Notes: Sendable {
        private let list = Mutex<[(n: Int, key: String)]>([])
        var numbers: [Int] { list.withLock { $0.map(\.n) } }
        var keys: [String] { list.withLock { $0.map(\.key) } }
        var count: Int { list.withLock { $0.count } }

        /// Has `server` answer POST /notes with 201 and note it here.
        func record(on server: TestServer) {
            server.route("/notes") { [self] request in
                let number = (try? JSONValue(parsing: request.body)["n"]?.intValue) ?? -1
                list.withLock { $0.append((number, request.header("Idempotency-Key") ?? "")) }
                return ServerResponse(status: 201)
            }
        }
    }

    /// A server on `port` that notes the notes it is sent.
    private func notesServer(port: Int) async throws -> (TestServer, Notes) {
        let server = try await TestServer.start(port: port)
        let notes = Notes()
        notes.record(on: server)
        return (server, notes)
    }

    /// Reads `events` until `count` requests were sent.
    ///
    /// With `retelling`, a drain that says it waits again after the server is back — on a loaded
    /// machine the first request or probe right after a refused connection can still fail, and the
    /// drain then waits for a probe on a clock that only the test moves — is told the origin
    /// answers, as an app that saw an answer would (``Reachability/record(_:for:)``), at most three
    /// times. Exactly-once delivery is still what the tests check; the waits are returned.
    private static func sent(
        _ count: Int, from events: inout AsyncStream<OfflineDrainEvent>.Iterator, retelling origin: (Reachability, URL)? = nil
    ) async -> (events: [OfflineDrainEvent], retold: Int) {
        var seen: [OfflineDrainEvent] = []
        var sent = 0
        var retold = 0
        while sent < count, let event = await events.next() {
            seen.append(event)
            switch event {
            case .item(let item):
                if case .sent = item.outcome { sent += 1 }
            case .waiting:
                guard let (reachability, url) = origin, retold < 3 else { break }
                retold += 1
                reachability.record(.reachable, for: url)
            default:
                break
            }
        }
        return (seen, retold)
    }

    @Test("a POST queued while the server is down is delivered once, with its Idempotency-Key, by the probe after the server is back — no replay()")
    func deliveredByTheProbe() async throws {
        let outage = try Outage()
        defer { outage.end() }
        let (port, clock, queue, client) = (outage.port, outage.clock, outage.queue, outage.client)
        var events = client.drainEvents.makeAsyncIterator()
        await queueNote(1, through: client)
        let key = try #require(await queue.list(.pending).first?.idempotencyKey)
        #expect(client.reachability.status(of: try #require(URL(string: "http://127.0.0.1:\(port)/"))) == .unreachable)

        let (server, notes) = try await notesServer(port: port)
        await clock.waitUntilSleeping()  // the drain waits for its first probe
        #expect(clock.sleeps == [.seconds(1)])
        #expect(notes.count == 0, "nothing is sent before the probe is due")
        clock.advance(by: .seconds(1))
        let (seen, retold) = await Self.sent(1, from: &events, retelling: (client.reachability, server.baseURL))
        #expect(notes.numbers == [1], "\(seen)")
        #expect(notes.keys == [key])
        let probes = server.requests.filter { $0.method == "HEAD" }.count
        // A probe that failed on the port that had just come back (AsyncHTTPClient's first
        // connection there can fail before the server reads it) is why the test retold; then no
        // probe need have reached the server.
        #expect((probes >= 1 || retold > 0) && probes <= 1 + retold, "the probe found the server, with no credentials needed: \(seen)")
        #expect(await queue.list(.pending).isEmpty)
        #expect(client.reachability.status(of: server.baseURL) == .reachable)
        await server.stop()
    }

    @Test("an answer from the origin to any call wakes the drain at once, without waiting for the probe")
    func wokenByEvidence() async throws {
        let outage = try Outage()
        defer { outage.end() }
        let (port, client) = (outage.port, outage.client)
        var events = client.drainEvents.makeAsyncIterator()
        await queueNote(1, through: client)
        await queueNote(2, through: client)
        let (server, notes) = try await notesServer(port: port)
        _ = try await client.get("get").send()  // the app's own call: an answer, so reachable
        let (seen, _) = await Self.sent(2, from: &events, retelling: (client.reachability, server.baseURL))
        #expect(notes.numbers == [1, 2], "in the order they were queued: \(seen)")
        #expect(server.requests.filter { $0.method == "HEAD" }.isEmpty, "no probe was needed: \(seen)")
        await server.stop()
    }

    @Test("an origin that goes down and up 20 times, found back by the probe or told by the app, loses nothing and sends nothing twice")
    func twentyCycles() async throws {
        // Real time here, with probes 10 to 50 ms apart: twenty outages in a row, whatever the
        // machine's load does to the order of events. The back-off on the injected clock has its
        // own test below.
        let outage = try Outage {
            $0.clock = SystemClock()
            $0.offline.probe = .init(first: .milliseconds(10), maximum: .milliseconds(50))
        }
        defer { outage.end() }
        let (port, queue, client) = (outage.port, outage.queue, outage.client)
        var events = client.drainEvents.makeAsyncIterator()
        let notes = Notes()
        for cycle in 0..<20 {
            await queueNote(2 * cycle, through: client)
            await queueNote(2 * cycle + 1, through: client)
            let server = try await TestServer.start(port: port)
            notes.record(on: server)
            if cycle.isMultiple(of: 2) {
                client.reachability.record(.reachable, for: server.baseURL)  // what the app learned itself
            }  // else the probe finds it
            _ = await Self.sent(2, from: &events)
            await server.stop()
        }
        #expect(notes.numbers == Array(0..<40))
        #expect(Set(notes.keys).count == 40, "one Idempotency-Key each, none sent twice")
        #expect(await queue.list(.pending).isEmpty)
    }

    @Test("the probe's back-off doubles from the first wait and stays at the maximum, on the injected clock")
    func probeBackOff() async throws {
        let outage = try Outage { $0.offline.probe = .init(first: .seconds(1), maximum: .seconds(8)) }
        defer { outage.end() }
        let (port, clock, client) = (outage.port, outage.clock, outage.client)
        var events = client.drainEvents.makeAsyncIterator()
        await queueNote(1, through: client)
        var waits: [Duration] = []
        for _ in 0..<7 {
            await clock.waitUntilSleeping()
            clock.advance(by: clock.sleeps.last ?? .zero)
            while let event = await events.next() {
                if case .waiting(let origin, let retryIn) = event {
                    #expect(origin == "http://127.0.0.1:\(port)")
                    waits.append(retryIn)
                    break
                }
            }
        }
        #expect(clock.sleeps.prefix(7) == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(8), .seconds(8)])
        #expect(waits == [.seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(8), .seconds(8), .seconds(8)])
        #expect(try await client.queuedRequests().count == 1)
    }

    @Test("paused, the drain sends nothing; resumed, it sends at once. Manual, only replay() sends")
    func pauseAndManual() async throws {
        let outage = try Outage()
        defer { outage.end() }
        let (port, clock, client) = (outage.port, outage.clock, outage.client)
        var events = client.drainEvents.makeAsyncIterator()
        await queueNote(1, through: client)
        client.pauseDrain()
        #expect(client.isDrainPaused)
        let (server, notes) = try await notesServer(port: port)
        _ = try await client.get("get").send()
        #expect(await events.next().map { if case .paused = $0 { true } else { false } } == true)
        #expect(notes.count == 0)
        client.resumeDrain()
        _ = await Self.sent(1, from: &events, retelling: (client.reachability, server.baseURL))
        #expect(notes.numbers == [1])

        let manualQueue = MemoryOfflineQueue()
        let manual = self.client(port: port, queue: manualQueue, clock: clock) { $0.offline.drain = .manual }
        await server.stop()
        await queueNote(2, through: manual, sentBy: "will be sent by replay()")
        let again = try await TestServer.start(port: port)
        notes.record(on: again)
        _ = try await manual.get("get").send()
        #expect(await manualQueue.list(.pending).count == 1, "manual: the answer wakes nothing")
        let report = try await manual.replay()
        #expect(report.sent == 1)
        #expect(notes.numbers == [1, 2])
        await again.stop()
    }

    @Test("on unmetered networks only: an expensive or constrained path holds the drain until the path changes")
    func unmeteredOnly() async throws {
        let port = try RefusingPort()
        defer { port.release() }
        let reachability = Reachability(monitorsSystemPath: false)
        reachability.update(path: .init(isSatisfied: true, isExpensive: true))
        let queue = MemoryOfflineQueue()
        let client = client(port: port.port, queue: queue, clock: TestClock(waitsForAdvance: true)) {
            $0.offline.drain = .automaticOnUnmeteredNetworks
            $0.offline.reachability = reachability
        }
        var events = client.drainEvents.makeAsyncIterator()
        await queueNote(1, through: client)
        let (server, notes) = try await notesServer(port: port.port)
        _ = try await client.get("get").send()
        #expect(notes.count == 0, "over cellular nothing goes out")
        reachability.update(path: .init(isSatisfied: true, isConstrained: true))
        #expect(notes.count == 0, "nor in Low Data Mode")
        reachability.update(path: .init(isSatisfied: true))
        _ = await Self.sent(1, from: &events, retelling: (reachability, server.baseURL))
        #expect(notes.numbers == [1])
        await server.stop()
    }

    @Test("two clients draining one SQLite queue file deliver each request once")
    func twoDrainersOneFile() async throws {
        let port = try RefusingPort()
        defer { port.release() }
        let file = Scratch.folder().appendingPathComponent("queue.sqlite")
        let clock = TestClock(waitsForAdvance: true)
        let first = client(port: port.port, queue: SQLiteOfflineQueue(url: file), clock: clock)
        let second = client(port: port.port, queue: SQLiteOfflineQueue(url: file), clock: clock)
        for number in 0..<10 { await queueNote(number, through: number.isMultiple(of: 2) ? first : second) }
        let (server, notes) = try await notesServer(port: port.port)
        _ = try await first.get("get").send()
        _ = try await second.get("get").send()
        while try await !first.queuedRequests().isEmpty {
            await clock.waitUntilSleeping()
            clock.advance(by: .seconds(60))
        }
        #expect(notes.numbers.sorted() == Array(0..<10))
        #expect(notes.count == 10 && Set(notes.keys).count == 10, "none sent twice")
        await server.stop()
    }
}

@Suite("Reachability per origin", .hangGuard)
struct ReachabilityTests {
    @Test("an answer marks an origin reachable, a refused connection unreachable; a lost network marks all, and its return makes them unknown")
    func evidenceAndPath() async throws {
        let reachability = Reachability(monitorsSystemPath: false)
        var changes = reachability.changes.makeAsyncIterator()
        let port = try RefusingPort()
        defer { port.release() }
        try await withServer(configure: { $0.offline.reachability = reachability }) { server, client in
            _ = try await client.get("get").send()
            #expect(reachability.status(of: server.baseURL) == .reachable)
            let down = try #require(URL(string: "http://127.0.0.1:\(port.port)/x"))
            _ = await apiError { _ = try await client.send(.get(down.absoluteString)) }
            #expect(reachability.status(of: down) == .unreachable)
            // A 503 is an answer: the origin is there.
            _ = try await client.get("status/503").send()
            #expect(reachability.status(of: server.baseURL) == .reachable)
            reachability.update(path: .init(isSatisfied: false))
            #expect(reachability.status(of: server.baseURL) == .unreachable)
            #expect(reachability.path.description == "no network")
            reachability.update(path: .init(isSatisfied: true))
            #expect(reachability.status(of: down) == .unknown, "learned on the old network")
            #expect(reachability.status(of: server.baseURL) == .reachable)
            let seen = [await changes.next(), await changes.next(), await changes.next(), await changes.next()]
            #expect(seen.map { $0?.status } == [.reachable, .unreachable, .unreachable, .reachable])
            #expect(seen.map { $0?.origin == nil } == [false, false, true, true])
        }
    }

    @Test("the origin read from a request head's authority is the one read from its URL")
    func originFromAuthority() throws {
        for text in ["http://Example.COM/x", "https://api.example.com:8443/v1?q", "http://127.0.0.1:8080", "http://[::1]:9000/", "https://[2001:DB8::1]/", "http://user@example.com:81/"] {
            let url = try #require(URL(string: text))
            let authority = try #require(url.host(percentEncoded: true)).contains(":") ? "[\(url.host(percentEncoded: true) ?? "")]" : url.host(percentEncoded: true)
            let withPort = url.port.map { "\(authority ?? ""):\($0)" } ?? authority
            #expect(Origin(scheme: url.scheme, authority: withPort) == Origin(url), "\(text)")
        }
        for bad in ["", "[::1", "[::1]x", "host:port", ":80", "host:+80", "host:-1", "host:1234567890123"] {
            #expect(Origin(scheme: "http", authority: bad) == nil, "\(bad)")
        }
        #expect(Origin(scheme: "HTTPS", authority: "Example.COM:") == Origin(scheme: "https", authority: "example.com:443"), "an empty port is the default")
        #expect(Origin(scheme: "http", authority: "ÉCOLE.example")?.host == "école.example", "non-ASCII hosts are lower-cased too")
    }

    @Test("a failure of an attempt that started before the origin was last seen reachable changes nothing; the app's word is always told")
    func staleFailure() async throws {
        let reachability = Reachability(monitorsSystemPath: false)
        let origin = try #require(Origin(scheme: "http", authority: "127.0.0.1:9"))
        let url = try #require(URL(string: "http://127.0.0.1:9/"))
        let before = reachability.evidenceNow()
        reachability.record(.reachable, origin: origin)
        let refused = APIError.notSent(.transport, "refused")
        reachability.observe(refused, origin: origin, attemptStarted: before)
        #expect(reachability.status(of: url) == .reachable, "the answer came after the attempt started")
        reachability.observe(refused, origin: origin, attemptStarted: reachability.evidenceNow())
        #expect(reachability.status(of: url) == .unreachable, "the attempt started after the last answer")
        // Another origin's answers do not make an attempt's failure stale.
        let attempt = reachability.evidenceNow()
        reachability.record(.reachable, origin: try #require(Origin(scheme: "http", authority: "127.0.0.1:10")))
        reachability.record(.reachable, origin: origin)
        let later = reachability.evidenceNow()
        reachability.record(.reachable, origin: try #require(Origin(scheme: "http", authority: "127.0.0.1:10")))
        reachability.observe(refused, origin: origin, attemptStarted: attempt)
        #expect(reachability.status(of: url) == .reachable, "this origin answered after the attempt started")
        reachability.observe(refused, origin: origin, attemptStarted: later)
        #expect(reachability.status(of: url) == .unreachable, "only another origin answered after it started")
        var changes = reachability.changes.makeAsyncIterator()
        reachability.record(.unreachable, for: url)
        #expect(await changes.next()?.status == .unreachable, "told though it was known")
    }

    @Test("a schedule is bounded whatever it is given")
    func scheduleBounds() {
        let wild = APIClient.Configuration.Offline.ProbeSchedule(first: .seconds(-5), maximum: .seconds(Int64.max), multiplier: Int.max)
        #expect(wild.first == .milliseconds(10))
        #expect(wild.maximum == .seconds(86_400))
        #expect(wild.multiplier == 1000)
        #expect(wild.delay(afterFailures: Int.max) == .seconds(86_400), "no overflow on the way")
        let usual = APIClient.Configuration.Offline.ProbeSchedule()
        #expect((0..<9).map { usual.delay(afterFailures: $0) } == [1, 2, 4, 8, 16, 32, 60, 60, 60].map { Duration.seconds($0) })
    }
}
