@testable import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Synchronization
import Testing

/// When requests reached the server, on the test clock.
final class ArrivalTimes: Sendable {
    private let times = Mutex<[ContinuousClock.Instant]>([])
    func record(_ instant: ContinuousClock.Instant) { times.withLock { $0.append(instant) } }
    var all: [ContinuousClock.Instant] { times.withLock { $0 } }
}

/// A route that answers its first request with `first` and records, on `clock`, when each later
/// one arrived.
private func installGate(on server: TestServer, path: String, clock: TestClock, first: ServerResponse) -> ArrivalTimes {
    let arrivals = ArrivalTimes()
    let answered = Mutex(false)
    server.route(path) { _ in
        let isFirst = answered.withLock { answered in
            defer { answered = true }
            return !answered
        }
        if isFirst { return first }
        arrivals.record(clock.now)
        return .json(["ok": true])
    }
    return arrivals
}

@Suite("Rate limits: one gate per origin or tag, the server's word and your limits", .hangGuard)
struct RateLimitTests {
    @Test("20 concurrent calls after one 429 Retry-After: 2 all wait at the origin's gate; none is sent in the window")
    func retryAfterHoldsEveryCall() async throws {
        let clock = TestClock()
        let limits = RateLimits()
        try await withServer(configure: { $0.clock = clock; $0.rateLimits = limits }) { server, client in
            let arrivals = installGate(
                on: server, path: "/limited", clock: clock, first: .json(["error": "slow down"], status: 429, headers: [("Retry-After", "2")]))
            let refused = try await client.get("/limited").send()
            #expect(refused.status.code == 429)
            let reopens = clock.now + .seconds(2)
            #expect(limits.closedUntil(server.baseURL) == reopens)

            // Another origin has a gate of its own: it is not held.
            try await TestServer.withRunning { other in
                let elsewhere = try await client.get(other.url("/get").absoluteString).send()
                #expect(elsewhere.status == .ok)
                #expect(clock.now < reopens)
            }

            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 { group.addTask { try await client.get("/limited").send().status.code } }
                for try await status in group { #expect(status == 200) }
            }
            let seen = arrivals.all
            #expect(seen.count == 20)
            #expect(seen.allSatisfy { $0 >= reopens }, "a call was sent while the gate was closed")
            #expect(server.hits("/limited") == 21)
            #expect(clock.sleeps.contains(.seconds(2)))
        }
    }

    @Test("a call whose deadline comes before the gate opens fails at once with timedOut and sends nothing")
    func deadlineBeforeTheGate() async throws {
        let clock = TestClock()
        try await withServer(configure: { $0.clock = clock; $0.rateLimits = RateLimits() }) { server, client in
            _ = installGate(
                on: server, path: "/limited", clock: clock, first: .json([:], status: 503, headers: [("Retry-After", "120")]))
            let unavailable = try await client.get("/limited").send()
            #expect(unavailable.status.code == 503)
            var request = Request.get("/limited")
            // The gate is judged on the injected clock, but the deadline's own timer runs on the
            // real one: a minute, so that a busy machine that holds the call a few seconds
            // before the stage runs does not end it first.
            request.deadline = .seconds(60)
            let error = await apiError { _ = try await client.send(request) }
            #expect(error?.code == .timedOut)
            #expect(error?.requestSent == false)
            #expect(error?.message.contains("after the call's deadline") == true)
            #expect(server.hits("/limited") == 1)
            #expect(clock.sleeps.isEmpty)
        }
    }

    @Test("a client limit of 2 per second spaces calls by the window: sleeps of exactly a second, sends at 0, 0, 1, 1, 2, 2 s")
    func clientLimit() async throws {
        let clock = TestClock()
        try await withServer(configure: { $0.clock = clock; $0.rateLimits = RateLimits(perOrigin: .per(2, .seconds(1))) }) { server, client in
            let start = clock.now
            let arrivals = ArrivalTimes()
            server.route("/paced") { _ in
                arrivals.record(clock.now)
                return .json(["ok": true])
            }
            for _ in 0..<6 {
                let response = try await client.get("/paced").send()
                #expect(response.status == .ok)
            }
            #expect(arrivals.all.map { $0 - start } == [.zero, .zero, .seconds(1), .seconds(1), .seconds(2), .seconds(2)])
            #expect(clock.sleeps == [.seconds(1), .seconds(1)])
        }
    }

    @Test("RateLimit, X-RateLimit-* and RateLimit-Policy on a 200 close the gate or set its limit")
    func serverFields() async throws {
        for (headers, wait) in [
            ([("X-RateLimit-Limit", "60"), ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "3")], Duration.seconds(3)),
            ([("RateLimit", "\"default\";r=0;t=5")], .seconds(5)),
            ([("RateLimit", "limit=10, remaining=0, reset=7")], .seconds(7)),
            ([("RateLimit-Policy", "\"hour\";q=1000;w=3600, \"burst\";q=1;w=10")], .seconds(10)),
        ] {
            let clock = TestClock()
            try await withServer(configure: { $0.clock = clock; $0.rateLimits = RateLimits() }) { server, client in
                let arrivals = installGate(on: server, path: "/fields", clock: clock, first: .json(["ok": true], headers: headers))
                let start = clock.now
                _ = try await client.get("/fields").send()
                _ = try await client.get("/fields").send()
                #expect(arrivals.all == [start + wait], "\(headers)")
            }
        }
    }

    @Test("a tag with its own limit has its own gate; following the server can be turned off")
    func tagsAndFollowing() async throws {
        let clock = TestClock()
        try await withServer(configure: {
            $0.clock = clock
            $0.rateLimits = RateLimits(perTag: ["search": .per(1, .seconds(10))], followsServer: false)
        }) { server, client in
            _ = installGate(on: server, path: "/tagged", clock: clock, first: .json([:], status: 429, headers: [("Retry-After", "60")]))
            let limited = try await client.get("/tagged").tag("search").send()
            #expect(limited.status.code == 429)
            let untagged = try await client.get("/tagged").send()
            #expect(untagged.status == .ok)  // not held: the server is not followed
            #expect(clock.sleeps.isEmpty)
            let tagged = try await client.get("/tagged").tag("search").send()
            #expect(tagged.status == .ok)
            #expect(clock.sleeps == [.seconds(10)])
        }
    }

    @Test("the stage is absent from the chain when rateLimits is nil")
    func absentWhenOff() throws {
        let off = APIClient()
        let on = APIClient(configuration: .init { $0.rateLimits = RateLimits() })
        let request = Request.get("https://example.com/")
        #expect(!off.pipeline.stages(for: request, context: MiddlewareContext()).contains { $0 is RateLimitStage })
        #expect(on.pipeline.stages(for: request, context: MiddlewareContext()).contains { $0 is RateLimitStage })
    }

    @Test("the fields' reader: every spelling, the strictest member, Unix resets, and hostile values ignored")
    func fieldReader() throws {
        func read(_ pairs: [(String, String)]) -> RateLimitFields.Reading {
            var fields = HTTPFields()
            for (name, value) in pairs { if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) } }
            return RateLimitFields.read(fields, now: Date(timeIntervalSince1970: 1_700_000_000))
        }
        #expect(read([("RateLimit", "\"a\";r=5;t=9, \"b\";r=0;t=30")]) == .init(remaining: 0, reset: .seconds(30)))
        #expect(read([("RateLimit-Remaining", "0"), ("RateLimit-Reset", "12")]) == .init(remaining: 0, reset: .seconds(12)))
        #expect(read([("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1700000020")]) == .init(remaining: 0, reset: .seconds(20)))
        #expect(read([("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1700000004000")]) == .init(remaining: 0, reset: .seconds(4)))
        #expect(read([("RateLimit-Policy", "100;w=60")]).policy == .per(100, .seconds(60)))
        #expect(read([("RateLimit-Policy", "\"x;y,z\";q=2;w=1")]).policy == .per(2, .seconds(1)), "separators inside a string are text")
        // Hostile or malformed: nothing is read, nothing traps.
        #expect(read([("RateLimit", "\"a\";r=-1;t=1e9")]) == .init())
        #expect(read([("RateLimit", "r=99999999999999999999999")]) == .init())
        #expect(read([("RateLimit-Policy", "\"p\";q=0;w=10, \"q\";q=5;w=0, \"r\";q=5;w=999999")]).policy == nil)
        #expect(read([("RateLimit", String(repeating: "\"a\";r=0;t=1,", count: 1000))]) == .init(), "a field past 4 KiB is not read")
        #expect(read([("RateLimit", "\"unterminated;r=0;t=3")]).remaining == nil)
        #expect(RateLimitFields.reset("99999999999999999999", now: Date()) == nil)
        #expect(RateLimitFields.reset("1", now: Date()) == .seconds(1))
        #expect(RateLimit(1_000_000, per: .seconds(1)).count <= RateLimit.maximumCount)
        #expect(RateLimit(0, per: .zero) == RateLimit(1, per: .milliseconds(1)))
    }
}
