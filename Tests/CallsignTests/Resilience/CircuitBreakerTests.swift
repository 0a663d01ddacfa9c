@testable import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// A route that fails with 503 while `failing`, and holds each answer while `holding` until the
/// test lets it go, telling the test when a request arrived.
private final class Backend: Sendable {
    let failing = Mutex(true)
    let holding = Mutex(false)
    let (arrivals, arrived) = AsyncStream.makeStream(of: Void.self)
    let (releases, release) = AsyncStream.makeStream(of: Void.self)

    func install(on server: TestServer, path: String) {
        server.route(path) { [self] _ in
            if holding.withLock({ $0 }) {
                arrived.yield()
                var iterator = releases.makeAsyncIterator()
                _ = await iterator.next()
            }
            return failing.withLock { $0 } ? .json(["down": true], status: 503) : .json(["ok": true])
        }
    }
}

@Suite("The circuit breaker: open, queue offline, one probe, closed", .hangGuard)
struct CircuitBreakerTests {
    @Test("three 503s open the circuit; an offline-capable POST is queued unsent; after the cool-down one probe goes, others fail at once; its success closes the circuit")
    func opensQueuesProbesCloses() async throws {
        let clock = TestClock()
        let breaker = CircuitBreaker(consecutiveFailures: 3, coolDown: .seconds(30))
        var transitions = breaker.transitions.makeAsyncIterator()
        // The queued POST goes out by replay() here: an automatic drain's waits would move this
        // clock, whose sleeps end at once, past the cool-down.
        try await withServer(configure: { $0.clock = clock; $0.circuitBreaker = breaker; $0.offline.drain = .manual }) { server, client in
            let backend = Backend()
            backend.install(on: server, path: "/health")
            server.route("/orders") { _ in .json(["created": true], status: 201) }

            for _ in 0..<3 {
                let response = try await client.get("/health").send()
                #expect(response.status.code == 503)
            }
            #expect(breaker.state(of: server.baseURL) == .open)
            let opened = await transitions.next()
            #expect(opened?.from == .closed && opened?.to == .open)

            let rejected = await apiError { _ = try await client.get("/health").send() }
            #expect(rejected?.code == .circuitOpen)
            #expect(rejected?.requestSent == false)
            #expect(server.hits("/health") == 3)

            let queued = await apiError { _ = try await client.post("/orders").parameters(["item": 7]).storePolicy(.offline).send() }
            #expect(queued?.code == .queuedOffline)
            #expect(server.hits("/orders") == 0)
            let pending = try await client.offlineQueue.list(.pending)
            #expect(pending.count == 1)

            // The cool-down passes; the backend is back, and holds the probe's answer.
            clock.advance(by: .seconds(30))
            backend.failing.withLock { $0 = false }
            backend.holding.withLock { $0 = true }
            let probe = Task { try await client.get("/health").send().status.code }
            var arrivals = backend.arrivals.makeAsyncIterator()
            _ = await arrivals.next()
            #expect(breaker.state(of: server.baseURL) == .halfOpen)
            let whileProbing = await apiError { _ = try await client.get("/health").send() }
            #expect(whileProbing?.code == .circuitOpen, "only one probe goes while the circuit is half-open")
            backend.release.yield()
            let probed = try await probe.value
            #expect(probed == 200)
            #expect(server.hits("/health") == 4)
            #expect(breaker.state(of: server.baseURL) == .closed)
            let halfOpen = await transitions.next()
            let closed = await transitions.next()
            #expect(halfOpen?.to == .halfOpen && closed?.from == .halfOpen && closed?.to == .closed)

            backend.holding.withLock { $0 = false }
            let report = try await client.replay()
            #expect(report.sent == 1 && report.remaining == 0)
            #expect(server.hits("/orders") == 1)
        }
    }

    @Test("a failed probe opens the circuit again; the ratio opens it among mixed outcomes; transport failures count")
    func reopensAndRatio() async throws {
        let clock = TestClock()
        let breaker = CircuitBreaker(consecutiveFailures: 100, failureRatio: 0.5, window: 4, minimumCalls: 4, coolDown: .seconds(5))
        try await withServer(configure: { $0.clock = clock; $0.circuitBreaker = breaker }) { server, client in
            let statuses = Mutex([200, 503, 200, 503, 503])
            server.route("/mixed") { _ in .json([:], status: statuses.withLock { $0.isEmpty ? 503 : $0.removeFirst() }) }
            for _ in 0..<3 { _ = try await client.get("/mixed").send() }
            #expect(breaker.state(of: server.baseURL) == .closed)
            _ = try await client.get("/mixed").send()   // 2 of the last 4 failed
            #expect(breaker.state(of: server.baseURL) == .open)
            clock.advance(by: .seconds(5))
            _ = try await client.get("/mixed").send()   // the probe: 503
            #expect(breaker.state(of: server.baseURL) == .open)
            #expect(server.hits("/mixed") == 5)
        }
        // A refused connection is a failure of its origin.
        let refusing = CircuitBreaker(consecutiveFailures: 2)
        let client = APIClient(configuration: .init { $0.retry = .none; $0.circuitBreaker = refusing })
        let url = try #require(URL(string: "http://127.0.0.1:1/"))   // a privileged port nothing listens on
        for _ in 0..<2 { _ = await apiError { _ = try await client.get(url.absoluteString).send() } }
        #expect(refusing.state(of: url) == .open)
    }

    @Test("the stage is absent from the chain when circuitBreaker is nil")
    func absentWhenOff() {
        let request = Request.get("https://example.com/")
        #expect(!APIClient().pipeline.stages(for: request, context: MiddlewareContext()).contains { $0 is CircuitBreakerStage })
        let on = APIClient(configuration: .init { $0.circuitBreaker = CircuitBreaker() })
        #expect(on.pipeline.stages(for: request, context: MiddlewareContext()).contains { $0 is CircuitBreakerStage })
    }
}
