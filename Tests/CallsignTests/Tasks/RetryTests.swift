import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// A route that fails `failures` times with `status` (and optional Retry-After), then answers 200.
func installFlaky(on server: TestServer, path: String = "/flaky", failures: Int, status: Int = 503, retryAfter: String? = nil) {
    let count = Mutex(0)
    server.route(path) { request in
        let seen = count.withLock { count -> Int in
            count += 1
            return count
        }
        guard seen > failures else {
            return .json(
                ["attempt": .int(seen)], status: status, headers: retryAfter.map { [("Retry-After", $0)] } ?? [])
        }
        return .json(["attempt": .int(seen), "key": .string(request.header("Idempotency-Key") ?? "")])
    }
}

@Suite("Retries and the deadline", .hangGuard)
struct RetryTests {
    @Test("retryable statuses are retried with exponential back-off on the injected clock")
    func backoff() async throws {
        let clock = TestClock()
        try await withServer(configure: {
            $0.clock = clock
            $0.retry = RetryPolicy(maximumAttempts: 4, baseDelay: .milliseconds(100), jitter: .none)
        }) { server, client in
            installFlaky(on: server, failures: 3)
            let response = try await client.get("/flaky").send()
            #expect(response.status == .ok)
            #expect(try response.json()["attempt"] == 4)
            #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200), .milliseconds(400)])
        }
    }

    @Test("attempts are bounded; the last response is returned; full jitter stays under the exponential value")
    func exhausted() async throws {
        let clock = TestClock()
        try await withServer(configure: {
            $0.clock = clock
            $0.retry = RetryPolicy(maximumAttempts: 3, baseDelay: .seconds(1), maximumDelay: .seconds(1))
        }) { server, client in
            installFlaky(on: server, failures: 10, status: 502)
            let response = try await client.get("/flaky").send()
            #expect(response.status.code == 502)
            #expect(server.hits("/flaky") == 3)
            #expect(clock.sleeps.count == 2)
            #expect(clock.sleeps.allSatisfy { $0 >= .zero && $0 <= .seconds(1) })
            let error = await apiError { try await client.get("/flaky").send().validate() }
            #expect(error?.code == .unacceptableStatus)
        }
    }

    @Test("statuses outside the set, and 4xx, are not retried")
    func notRetryable() async throws {
        try await withServer(configure: { $0.clock = TestClock(); $0.retry = RetryPolicy(maximumAttempts: 3) }) { server, client in
            installFlaky(on: server, failures: 1, status: 404)
            let value1 = try await client.get("/flaky").send()

            #expect(value1.status.code == 404)
            #expect(server.hits("/flaky") == 1)
        }
    }

    @Test("POST is not retried without an Idempotency-Key, and is retried with the same key when one is added")
    func idempotency() async throws {
        let clock = TestClock()
        try await withServer(configure: { $0.clock = clock; $0.retry = RetryPolicy(maximumAttempts: 3, jitter: .none) }) {
            server, client in
            installFlaky(on: server, path: "/post-once", failures: 1)
            let value2 = try await client.post("/post-once").parameters(["a": 1]).send()

            #expect(value2.status.code == 503)
            #expect(server.hits("/post-once") == 1)

            installFlaky(on: server, path: "/post-keyed", failures: 2)
            var request = Request.post("post-keyed", parameters: ["a": 1])
            request.retry = RetryPolicy(maximumAttempts: 3, addsIdempotencyKey: true, jitter: .none)
            let response = try await client.send(request)
            #expect(response.status == .ok)
            let keys = server.requests.filter { $0.rawPath == "/post-keyed" }.map { $0.header("Idempotency-Key") }
            #expect(keys.count == 3)
            #expect(Set(keys).count == 1)
            #expect(keys.first??.isEmpty == false)

            installFlaky(on: server, path: "/post-own-key", failures: 1)
            let own = try await client.post("/post-own-key").header("Idempotency-Key", "mine").send()
            #expect(own.status == .ok)
            #expect(server.hits("/post-own-key") == 2)
        }
    }

    @Test("Retry-After in seconds and as an HTTP date is honoured")
    func retryAfter() async throws {
        let clock = TestClock()
        try await withServer(configure: {
            $0.clock = clock
            $0.retry = RetryPolicy(maximumAttempts: 2)
            $0.retry.maximumRetryAfter = .seconds(7200)
        }) { server, client in
            installFlaky(on: server, path: "/seconds", failures: 1, retryAfter: "7")
            let value3 = try await client.get("/seconds").send()

            #expect(value3.status == .ok)
            #expect(clock.sleeps == [.seconds(7)])

            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            // A date an hour ahead: the wait is the time left until then, whatever this machine's
            // speed (the date is read against the real clock when the answer arrives).
            installFlaky(on: server, path: "/date", failures: 1, retryAfter: formatter.string(from: Date().addingTimeInterval(3600)))
            let value4 = try await client.get("/date").send()

            #expect(value4.status == .ok)
            let waited = try #require(clock.sleeps.last)
            #expect(waited > .seconds(3000) && waited <= .seconds(3600))
        }
    }

    @Test("a Retry-After that would pass the deadline fails at once with timedOut, without sleeping")
    func retryAfterPastDeadline() async throws {
        let clock = TestClock()
        try await withServer(configure: {
            $0.clock = clock
            $0.retry = RetryPolicy(maximumAttempts: 5)
            $0.retry.maximumRetryAfter = .seconds(86_400)
            // An hour: far more than a first attempt takes on a busy machine, far less than the wait.
            $0.timeouts.deadline = .seconds(3600)
        }) { server, client in
            installFlaky(on: server, failures: 1, retryAfter: "7200")
            let error = await apiError { _ = try await client.get("/flaky").send() }
            #expect(error?.code == .timedOut)
            #expect(error?.message.contains("after the deadline") == true)
            #expect(error?.response?.status.code == 503)
            #expect(clock.sleeps.isEmpty)
            #expect(server.hits("/flaky") == 1)
        }
    }

    @Test("connection failures before a response are retried; a break mid-body is not")
    func transportErrors() async throws {
        let clock = TestClock()
        try await withServer(configure: { $0.clock = clock; $0.retry = RetryPolicy(maximumAttempts: 3, jitter: .none) }) {
            server, client in
            let closed = await apiError { _ = try await client.get("/misbehave/close").send() }
            #expect(closed?.code == .transport)
            #expect(server.hits("/misbehave/close") == 3)

            let reset = await apiError {
                _ = try await client.get("/misbehave/reset").query(["bytes": 100_000, "after": 1000]).send()
            }
            #expect(reset != nil)
            #expect(reset?.responseStarted == true)
            #expect(server.hits("/misbehave/reset") == 1)
        }
    }

    @Test("the deadline holds with a body that drips one byte a second", arguments: TransportKind.allCases)
    func deadlineWithSlowBody(kind: TransportKind) async throws {
        try await withServer(transport: kind, configure: { $0.timeouts.deadline = .milliseconds(1500) }) { server, client in
            let clock = ContinuousClock()
            let started = clock.now
            let error = await apiError {
                _ = try await client.get("/misbehave/slow-body").query(["bytes": 3600, "interval_ms": 1000]).send()
            }
            let elapsed = clock.now - started
            #expect(error?.code == .timedOut)
            #expect(error?.message.contains("deadline") == true)
            // The whole body would take an hour: ending at all, the call ended before its last byte,
            // on its deadline and not before it.
            #expect(elapsed >= .milliseconds(1400) && elapsed < .seconds(3600), "\(elapsed)")
        }
    }
}
