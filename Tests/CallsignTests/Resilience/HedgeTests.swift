@testable import Callsign
import CallsignTesting
import Foundation
import Logging
import MetricsTestKit
import Synchronization
import Testing

/// A route that numbers its requests from 1 and tells the test when each arrives. The requests
/// in `untilClosed` hold their answer until the client closes their connection (and say so);
/// those in `untilReleased` hold it until the test yields `release` (one at a time).
private final class HeldRoute: Sendable {
    let untilClosed: Set<Int>
    let untilReleased: Set<Int>
    private let count = Mutex(0)
    let (arrivals, arrived) = AsyncStream.makeStream(of: Int.self)
    let (closings, closed) = AsyncStream.makeStream(of: Int.self)
    let (releases, release) = AsyncStream.makeStream(of: Void.self)

    init(untilClosed: Set<Int> = [], untilReleased: Set<Int> = []) {
        self.untilClosed = untilClosed
        self.untilReleased = untilReleased
    }

    func install(on server: TestServer, path: String) {
        server.route(path) { [self] request in
            let number = count.withLock { count in
                count += 1
                return count
            }
            arrived.yield(number)
            if untilClosed.contains(number) {
                await request.waitForClientToClose()
                if request.clientHasClosed { closed.yield(number) }
            }
            if untilReleased.contains(number) {
                var iterator = releases.makeAsyncIterator()
                _ = await iterator.next()
            }
            return .json(["answer": .int(number)])
        }
    }
}

private struct Answer: Decodable {
    let answer: Int
}

@Suite("Hedged requests: a second attempt when the first is slow, the first answer wins", .hangGuard)
struct HedgeTests {
    @Test(
        "the first attempt stalls; past the delay a hedge is sent and answers; the call returns it and the first attempt's connection is closed",
        arguments: TransportKind.allCases)
    func hedgeWinsLoserCancelled(kind: TransportKind) async throws {
        let clock = TestClock(waitsForAdvance: true)
        let metrics = TestMetrics()
        try await withServer(transport: kind, configure: {
            $0.clock = clock
            $0.hedging = .after(.milliseconds(200))
            $0.observability.metricsFactory = metrics
        }) { server, client in
            let route = HeldRoute(untilClosed: [1])
            route.install(on: server, path: "/quote")
            var arrivals = route.arrivals.makeAsyncIterator()
            var closings = route.closings.makeAsyncIterator()

            let call = Task { try await client.get("/quote").send() }
            #expect(await arrivals.next() == 1)
            await clock.waitUntilSleeping()
            #expect(server.hits("/quote") == 1, "nothing more is sent before the delay")
            clock.advance(by: .milliseconds(200))
            #expect(await arrivals.next() == 2)

            let response = try await call.value
            #expect(try response.decode(Answer.self).answer == 2, "the hedge's answer")
            #expect(await closings.next() == 1, "the first attempt's connection was closed")
            #expect(server.hits("/quote") == 2)
            #expect(clock.pendingSleeps == 0)
            #expect(clock.sleeps == [.milliseconds(200)])
        }
        #expect(metrics.counterTotal(label: "callsign_hedges_started_total") == 1)
        #expect(metrics.counterTotal(label: "callsign_hedges_won_total") == 1)
        let started = try metrics.expectCounter("callsign_hedges_started_total", [("api", "-"), ("method", "GET")])
        #expect(started.totalValue == 1)
    }

    @Test("two extra attempts: one per delay while no head has come; the third answers and both losers are closed")
    func twoHedges() async throws {
        let clock = TestClock(waitsForAdvance: true)
        let log = CapturingLogHandler()
        try await withServer(configure: { $0.clock = clock; $0.observability.logger = Logger(label: "hedges") { _ in log } }) { server, client in
            let route = HeldRoute(untilClosed: [1, 2])
            route.install(on: server, path: "/quote")
            var arrivals = route.arrivals.makeAsyncIterator()
            var closings = route.closings.makeAsyncIterator()

            // Per call, with no hedging in the client: the call gets the chain with the stage.
            let call = Task { try await client.get("/quote").hedging(.after(.milliseconds(100), maximumExtraAttempts: 2)).send() }
            #expect(await arrivals.next() == 1)
            await clock.waitUntilSleeping()
            clock.advance(by: .milliseconds(100))
            #expect(await arrivals.next() == 2)
            await clock.waitUntilSleeping()
            clock.advance(by: .milliseconds(100))
            #expect(await arrivals.next() == 3)
            let callAnswer = try await call.value
            #expect(try callAnswer.decode(Answer.self).answer == 3)
            let closed = Set([await closings.next(), await closings.next()].compactMap { $0 })
            #expect(closed == [1, 2])
            #expect(server.hits("/quote") == 3)
        }
        let lines = log.lines.withLock { $0 }
        #expect(lines.contains { $0.hasPrefix("debug hedging ") && $0.contains("callsign.hedge=1") })
        #expect(lines.contains { $0.hasPrefix("debug hedging ") && $0.contains("callsign.hedge=2") })
        #expect(lines.contains { $0.hasPrefix("debug hedge won ") && $0.contains("callsign.hedge=2") })
        #expect(lines.filter { $0.hasPrefix("debug sending attempt") }.count == 3, "each hedge is an attempt of its own: \(lines)")
    }

    @Test("a streamed answer can be a hedge's: its body is read whole after the race, while the loser is closed", arguments: TransportKind.allCases)
    func streamedHedge(kind: TransportKind) async throws {
        let clock = TestClock(waitsForAdvance: true)
        try await withServer(transport: kind, configure: { $0.clock = clock; $0.hedging = .after(.milliseconds(100)) }) { server, client in
            let count = Mutex(0)
            let (arrivals, arrived) = AsyncStream.makeStream(of: Int.self)
            let (closings, closed) = AsyncStream.makeStream(of: Int.self)
            server.route("/export") { request in
                let number = count.withLock { count in
                    count += 1
                    return count
                }
                arrived.yield(number)
                if number == 1 {
                    await request.waitForClientToClose()
                    if request.clientHasClosed { closed.yield(number) }
                }
                return ServerResponse(status: 200, body: .generated(count: 2_500_000))
            }
            var arrivalsIterator = arrivals.makeAsyncIterator()
            var closingsIterator = closings.makeAsyncIterator()
            let call = Task { try await client.stream(.get("/export")) }
            #expect(await arrivalsIterator.next() == 1)
            await clock.waitUntilSleeping()
            clock.advance(by: .milliseconds(100))
            #expect(await arrivalsIterator.next() == 2)
            let streamed = try await call.value
            var received = Data()
            for try await chunk in streamed.chunks { received.append(chunk) }
            #expect(received == TestServer.expectedBytes(count: 2_500_000))
            #expect(await closingsIterator.next() == 1)
        }
    }

    @Test("cancelling a hedged call cancels every attempt: each connection is closed and the call ends as cancelled")
    func cancellingTheCall() async throws {
        let clock = TestClock(waitsForAdvance: true)
        try await withServer(configure: { $0.clock = clock; $0.hedging = .after(.milliseconds(100)) }) { server, client in
            let route = HeldRoute(untilClosed: [1, 2])
            route.install(on: server, path: "/quote")
            var arrivals = route.arrivals.makeAsyncIterator()
            var closings = route.closings.makeAsyncIterator()
            let call = Task { try await client.get("/quote").send() }
            #expect(await arrivals.next() == 1)
            await clock.waitUntilSleeping()
            clock.advance(by: .milliseconds(100))
            #expect(await arrivals.next() == 2)
            call.cancel()
            let error = await apiError { _ = try await call.value }
            #expect(error?.code == .cancelled)
            let closed = Set([await closings.next(), await closings.next()].compactMap { $0 })
            #expect(closed == [1, 2])
        }
    }

    @Test("the first attempt answering before the delay sends no hedge, and its timer is cancelled")
    func answerBeforeTheDelay() async throws {
        let clock = TestClock(waitsForAdvance: true)
        let metrics = TestMetrics()
        try await withServer(configure: {
            $0.clock = clock
            $0.hedging = .after(.milliseconds(200))
            $0.observability.metricsFactory = metrics
        }) { server, client in
            let route = HeldRoute(untilReleased: [1])
            route.install(on: server, path: "/quote")
            var arrivals = route.arrivals.makeAsyncIterator()

            let call = Task { try await client.get("/quote").send() }
            #expect(await arrivals.next() == 1)
            await clock.waitUntilSleeping()
            clock.advance(by: .milliseconds(199))
            route.release.yield()
            let callAnswer = try await call.value
            #expect(try callAnswer.decode(Answer.self).answer == 1)
            #expect(clock.pendingSleeps == 0, "the timer ended with the call")
            clock.advance(by: .seconds(1))
            #expect(server.hits("/quote") == 1)
        }
        #expect(metrics.counterTotal(label: "callsign_hedges_started_total") == 0)
        #expect(metrics.counterTotal(label: "callsign_hedges_won_total") == 0)
    }

    @Test("a POST is never hedged without an Idempotency-Key (the retry stage's rule); with one, it is")
    func postNeedsAnIdempotencyKey() async throws {
        let clock = TestClock(waitsForAdvance: true)
        try await withServer(configure: { $0.clock = clock; $0.hedging = .after(.milliseconds(200)) }) { server, client in
            let plain = HeldRoute(untilReleased: [1])
            plain.install(on: server, path: "/orders")
            var arrivals = plain.arrivals.makeAsyncIterator()
            let call = Task { try await client.post("/orders").parameters(["item": 7]).send() }
            #expect(await arrivals.next() == 1)
            clock.advance(by: .seconds(10))   // would end any hedge timer already waiting
            plain.release.yield()
            let callAnswer = try await call.value
            #expect(callAnswer.status == .ok)
            #expect(server.hits("/orders") == 1)
            #expect(clock.sleeps.isEmpty, "no hedge was even planned")

            let keyed = HeldRoute(untilClosed: [1])
            keyed.install(on: server, path: "/payments")
            var keyedArrivals = keyed.arrivals.makeAsyncIterator()
            let payment = Task {
                try await client.post("/payments").header("Idempotency-Key", "pay-7").parameters(["amount": 5]).send()
            }
            #expect(await keyedArrivals.next() == 1)
            await clock.waitUntilSleeping()
            clock.advance(by: .milliseconds(200))
            #expect(await keyedArrivals.next() == 2)
            let paymentAnswer = try await payment.value
            #expect(try paymentAnswer.decode(Answer.self).answer == 2)
            let sent = server.requests.filter { $0.rawPath == "/payments" }
            #expect(sent.count == 2 && sent.allSatisfy { $0.header("Idempotency-Key") == "pay-7" && $0.body == sent[0].body })
        }
    }

    @Test("no hedge when the deadline leaves less time than the delay: not planned at the start, not sent when the delay passes")
    func deadlineTooNear() async throws {
        let clock = TestClock(waitsForAdvance: true)
        let metrics = TestMetrics()
        try await withServer(configure: {
            $0.clock = clock
            $0.hedging = .after(.seconds(400))
            $0.observability.metricsFactory = metrics
        }) { server, client in
            // 300 seconds left at the start, the delay is 400: nothing is planned. (The deadline is
            // also the transport's real-time limit: it is generous for a busy machine.)
            let early = HeldRoute(untilReleased: [1])
            early.install(on: server, path: "/near")
            var arrivals = early.arrivals.makeAsyncIterator()
            var request = Request.get("/near")
            request.deadline = .seconds(300)
            let first = Task { [request] in try await client.send(request) }
            #expect(await arrivals.next() == 1)
            clock.advance(by: .seconds(401))
            early.release.yield()
            let firstAnswer = try await first.value
            #expect(firstAnswer.status == .ok)
            #expect(clock.sleeps.isEmpty)

            // 600 seconds left: the timer is set, but when the delay has passed 200 are left — less
            // than the delay — so no hedge goes.
            let late = HeldRoute(untilReleased: [1])
            late.install(on: server, path: "/later")
            var lateArrivals = late.arrivals.makeAsyncIterator()
            var later = Request.get("/later")
            later.deadline = .seconds(600)
            let second = Task { [later] in try await client.send(later) }
            #expect(await lateArrivals.next() == 1)
            await clock.waitUntilSleeping()
            clock.advance(by: .seconds(400))
            late.release.yield()
            let secondAnswer = try await second.value
            #expect(try secondAnswer.decode(Answer.self).answer == 1)
            #expect(server.hits("/near") == 1 && server.hits("/later") == 1)
        }
        #expect(metrics.counterTotal(label: "callsign_hedges_started_total") == 0)
    }

    @Test("observedPercentile waits the fallback until 20 latencies were seen, then the API's p95; other APIs keep their own")
    func observedPercentile() async throws {
        let clock = TestClock(waitsForAdvance: true)
        let yaml = """
            DEFAULT:
              hedging: {percentile: 95, minimum: 0.05, fallback: 5}
            Quote:
              path: quote
            Other:
              path: other
            """
        try await withServer(definitions: yamlDefinitions(yaml), configure: { $0.clock = clock }) { server, client in
            let route = HeldRoute(untilReleased: Set(1...20))
            route.install(on: server, path: "/quote")
            var arrivals = route.arrivals.makeAsyncIterator()
            // Twenty calls whose heads come after 100 ms, 200 ms, … 2 s on the clock.
            for index in 1...20 {
                let call = Task { try await client.call("Quote") }
                #expect(await arrivals.next() == index)
                await clock.waitUntilSleeping()
                clock.advance(by: .milliseconds(100 * index))
                route.release.yield()
                _ = try await call.value
            }
            #expect(clock.sleeps == Array(repeating: .seconds(5), count: 20), "the fallback until 20 were seen")
            #expect(server.hits("/quote") == 20, "no call waited past the fallback")

            // The 21st waits the 95th percentile of what was seen (nearest rank: the 19th of 20).
            let slow = HeldRoute(untilClosed: [1])
            slow.install(on: server, path: "/quote")
            var slowArrivals = slow.arrivals.makeAsyncIterator()
            let call = Task { try await client.call("Quote") }
            #expect(await slowArrivals.next() == 1)
            await clock.waitUntilSleeping()
            #expect(clock.sleeps.last == .milliseconds(1900))
            clock.advance(by: .milliseconds(1900))
            #expect(await slowArrivals.next() == 2)
            _ = try await call.value

            // Another API has seen nothing yet: the fallback.
            let other = HeldRoute(untilReleased: [1])
            other.install(on: server, path: "/other")
            var otherArrivals = other.arrivals.makeAsyncIterator()
            let otherCall = Task { try await client.call("Other") }
            #expect(await otherArrivals.next() == 1)
            await clock.waitUntilSleeping()
            #expect(clock.sleeps.last == .seconds(5))
            other.release.yield()
            _ = try await otherCall.value
        }
    }

    @Test("the latency window: nearest-rank percentiles, at most 256 samples per API, at most 256 APIs")
    func latencyWindow() {
        let latencies = HedgeLatencies()
        let key = HedgeLatencies.Key.api("Quote")
        for milliseconds in 1...19 { latencies.record(.milliseconds(milliseconds), for: key) }
        #expect(latencies.percentile(95, for: key) == nil, "fewer than 20 samples")
        latencies.record(.milliseconds(20), for: key)
        #expect(latencies.percentile(95, for: key) == .milliseconds(19))
        #expect(latencies.percentile(50, for: key) == .milliseconds(10))
        for _ in 0..<1000 { latencies.record(.seconds(1), for: key) }
        #expect(latencies.count(for: key) == HedgePolicy.sampleWindow)
        #expect(latencies.percentile(50, for: key) == .seconds(1), "old samples left the window")
        for index in 0..<300 { latencies.record(.milliseconds(1), for: .api("API \(index)")) }
        #expect(latencies.count(for: key) == 0, "the API recorded longest ago was forgotten")
        #expect(latencies.count(for: .api("API 299")) == 1)
    }

    @Test("a definitions file's hedging key: seconds, false, after, percentile, with bounds and clear errors")
    func definitionsKey() throws {
        let yaml = """
            DEFAULT:
              hedging: 0.2
            Quote:
              path: quote
              hedging: {percentile: 95, minimum: 0.05, fallback: 0.3, extraAttempts: 2}
            Fixed:
              path: fixed
              hedging: {after: 0.15, extraAttempts: 0}
            Upload:
              path: upload
              hedging: false
            Plain:
              path: plain
            """
        let definitions = try APIDefinitions(data: Data(yaml.utf8), format: .yaml)
        #expect(definitions["Plain"]?.hedging == .after(.milliseconds(200)))
        #expect(
            definitions["Quote"]?.hedging
                == .observedPercentile(95, minimum: .milliseconds(50), fallback: .milliseconds(300), maximumExtraAttempts: 2))
        #expect(definitions["Fixed"]?.hedging?.isEnabled == false)
        #expect(definitions["Upload"]?.hedging == .off)
        #expect(definitions["Quote"]?.request().hedging?.maximumExtraAttempts == 2)

        let refused: [(String, String)] = [
            ("hedging: true", "must be a delay in seconds, false, or a dictionary"),
            ("hedging: -1", "more than 0"),
            ("hedging: {after: 0.1, percentile: 90, fallback: 1}", "not both"),
            ("hedging: {percentile: 100, fallback: 1}", "from 1 to 99.9"),
            ("hedging: {percentile: 95}", "needs a fallback"),
            ("hedging: {after: 0.1, extraAttempts: 9}", "from 0 to 4"),
            ("hedging: {after: 0.1, minimum: 0.05}", "belong with percentile"),
            ("hedging: {every: 1}", "unknown; use after"),
        ]
        for (line, wanted) in refused {
            let text = "Bad:\n  path: bad\n  \(line)\n"
            let error = #expect(throws: APIError.self) { try APIDefinitions(data: Data(text.utf8), format: .yaml) }
            #expect(error?.code == .invalidDefinition)
            #expect(error?.message.contains(wanted) == true, "\(line): \(error?.message ?? "")")
            #expect(error?.key?.hasPrefix("hedging") == true)
        }
    }

    @Test("the policy is bounded: extra attempts 0-4, delays at least 1 ms, percentiles 1-99.9")
    func policyBounds() {
        #expect(HedgePolicy.after(.milliseconds(200), maximumExtraAttempts: 99).maximumExtraAttempts == 4)
        #expect(HedgePolicy.after(.milliseconds(200), maximumExtraAttempts: -3).isEnabled == false)
        var policy = HedgePolicy.after(.zero)
        #expect(policy.delay.duration { _ in nil } == .milliseconds(1))
        policy.maximumExtraAttempts = 10
        #expect(policy.maximumExtraAttempts == 4)
        let observed = HedgeLatencies()
        let delay = HedgePolicy.Delay.observedPercentile(.nan, minimum: .milliseconds(50), fallback: .milliseconds(10))
        #expect(delay.duration { _ in nil } == .milliseconds(50), "the fallback is never below the floor")
        #expect(delay.duration { percentile in percentile == 95 ? .milliseconds(70) : nil } == .milliseconds(70))
        #expect(observed.percentile(95, for: .api("none")) == nil)
    }

    @Test("the stage is in no chain when nothing hedges; in the client's when it hedges; a call that asks gets it")
    func absentWhenOff() {
        let request = Request.get("https://example.com/")
        let context = MiddlewareContext()
        let plain = APIClient()
        #expect(!plain.pipeline.stages(for: request, context: context).contains { $0 is HedgeStage })
        var asking = request
        asking.hedging = .after(.milliseconds(100))
        #expect(plain.pipeline.stages(for: asking, context: context).contains { $0 is HedgeStage })
        asking.hedging = .off
        #expect(!plain.pipeline.stages(for: asking, context: context).contains { $0 is HedgeStage })
        let hedging = APIClient(configuration: .init { $0.hedging = .after(.milliseconds(100)) })
        let stages = hedging.pipeline.stages(for: request, context: context)
        let retry = stages.firstIndex { $0 is RetryStage }
        let hedge = stages.firstIndex { $0 is HedgeStage }
        let redirects = stages.firstIndex { $0 is RedirectStage }
        #expect(retry != nil && hedge != nil && redirects != nil)
        if let retry, let hedge, let redirects { #expect(retry < hedge && hedge < redirects) }
    }
}
