import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// The call's one deadline (``MiddlewareContext/deadline``): a middleware anywhere in either seam
/// can move it earlier and the call then ends at that instant; nothing can move it later; and a
/// walk of several calls (pages, an event stream) spends the same deadline. The servers here
/// never answer, so a call that ends at all has ended on its deadline; the bounds on how long it
/// took are generous, for a loaded machine.
@Suite("One call deadline, tightened by middlewares and enforced", .hangGuard)
struct CallDeadlineTests {
    /// A route that answers only once the client has gone.
    static func serveSilence(_ server: TestServer) {
        server.route("/silent") { request in
            await request.waitForClientToClose()
            return ServerResponse(status: 200)
        }
    }

    /// Tightens the call's deadline to 300 ms from when it runs.
    static let hurry = AnyMiddleware { request, context, next in
        var context = context
        context.tightenDeadline(within: .milliseconds(300))
        return try await next(request, context: context)
    }

    /// Where a middleware can sit, and how a client (and the call) gets it there.
    enum Place: String, CaseIterable, CustomTestStringConvertible, Sendable {
        /// ``APIClient/Configuration/middlewares``: above the deadline stage, with a client
        /// deadline of a minute that the stage must not put back.
        case clientMiddlewares
        /// The call's own, on a client without a deadline.
        case callMiddlewares
        case afterRetry
        case beforeTimeout
        /// Below the timeout stage, just above the wire.
        case beforeEncoding
        /// A wire middleware.
        case wire

        var testDescription: String { rawValue }

        func configure(_ configuration: inout APIClient.Configuration) {
            configuration.timeouts.attempt = .seconds(600)
            configuration.timeouts.idle = .seconds(600)
            switch self {
            case .clientMiddlewares:
                configuration.timeouts.deadline = .seconds(60)
                configuration.middlewares = [CallDeadlineTests.hurry]
            case .callMiddlewares: break
            case .afterRetry: configuration.insert(CallDeadlineTests.hurry, after: .retry)
            case .beforeTimeout: configuration.insert(CallDeadlineTests.hurry, before: .timeout)
            case .beforeEncoding: configuration.insert(CallDeadlineTests.hurry, before: .encoding)
            case .wire:
                configuration.wireMiddlewares = [
                    AnyWireMiddleware { request, context, next in
                        var context = context
                        context.tightenDeadline(within: .milliseconds(300))
                        return try await next(request, context: context)
                    }
                ]
            }
        }

        func request(_ client: APIClient) -> Request {
            var request = client.get("/silent").request
            if self == .callMiddlewares { request.middlewares = [CallDeadlineTests.hurry] }
            return request
        }
    }

    @Test(
        "a middleware that tightens the deadline to 300 ms ends a call the server never answers with timedOut, wherever it sits",
        arguments: TransportKind.allCases, Place.allCases)
    func tightenedDeadlineIsEnforced(kind: TransportKind, place: Place) async throws {
        try await withServer(transport: kind, configure: place.configure) { server, client in
            Self.serveSilence(server)
            let started = ContinuousClock.now
            let error = await apiError { _ = try await client.send(place.request(client)) }
            #expect(error?.code == .timedOut)
            #expect(error?.message.contains("the deadline of 300 ms") == true, "\(error?.message ?? "")")
            #expect(error?.request?.path.hasSuffix("/silent") == true)
            // Ended by the 300 ms deadline (the message says so), not by the attempt's or the idle
            // limit's ten minutes; the bound is a hang guard, generous for a machine whose pool is
            // held for seconds (a full suite once took 17 s to get there).
            #expect(ContinuousClock.now - started < .seconds(300))
        }
    }

    @Test("a middleware cannot loosen the call's deadline, and the deadline stage keeps an earlier one set above it", arguments: TransportKind.allCases)
    func cannotLoosen(kind: TransportKind) async throws {
        /// What a middleware below saw, and what its own attempts to loosen left.
        let seen = Mutex<[ContinuousClock.Instant?]>([])
        let loosen = AnyMiddleware { request, context, next in
            var context = context
            let before = context.deadline
            context.tightenDeadline(within: .seconds(3600))
            context.tightenDeadline(to: .now + .seconds(86_400))
            seen.withLock { $0 += [before, context.deadline] }
            return try await next(request, context: context)
        }
        // The client's deadline is 300 ms; a middleware below the deadline stage asks for an hour.
        try await withServer(
            transport: kind,
            configure: {
                $0.timeouts = .init(attempt: .seconds(600), deadline: .milliseconds(300), idle: .seconds(600))
                $0.insert(loosen, after: .retry)
            }
        ) { server, client in
            Self.serveSilence(server)
            let started = ContinuousClock.now
            let error = await apiError { _ = try await client.get("/silent").send() }
            #expect(error?.code == .timedOut)
            #expect(error?.message.contains("the deadline of 300 ms") == true, "\(error?.message ?? "")")
            #expect(ContinuousClock.now - started < .seconds(300))
            let instants = seen.withLock { $0 }
            #expect(instants.count == 2)
            #expect(instants.first != nil && instants.first == instants.last, "a later instant changed nothing")
        }
        // A middleware above the deadline stage tightens to 300 ms; the call's own deadline is a
        // minute: the stage below keeps the earlier instant (it used to put the minute back).
        seen.withLock { $0 = [] }
        let probe = AnyMiddleware { request, context, next in
            seen.withLock { $0.append(context.deadline) }
            return try await next(request)
        }
        try await withServer(
            transport: kind,
            configure: {
                $0.timeouts.attempt = .seconds(60)
                $0.middlewares = [Self.hurry]
                $0.insert(probe, after: .deadline)
            }
        ) { server, client in
            Self.serveSilence(server)
            var request = client.get("/silent").request
            request.deadline = .seconds(60)
            let before = ContinuousClock.now
            let error = await apiError { _ = try await client.send(request) }
            #expect(error?.code == .timedOut)
            #expect(error?.message.contains("the deadline of 300 ms") == true, "\(error?.message ?? "")")
            let below = try #require(seen.withLock { $0.first } ?? nil)
            #expect(below <= before + .seconds(10), "the deadline below the stage is the middleware's 300 ms, not the call's minute")
        }
    }

    @Test("tightening moves the deadline only earlier, and any limit, however large or negative, is taken without trapping")
    func tighteningRule() throws {
        var context = MiddlewareContext()
        #expect(context.deadline == nil)
        context.tightenDeadline(within: .seconds(5))
        let five = try #require(context.deadline)
        context.tightenDeadline(within: .seconds(10))
        #expect(context.deadline == five)
        context.tightenDeadline(to: five + .seconds(1))
        #expect(context.deadline == five)
        context.tightenDeadline(to: five - .seconds(1))
        #expect(context.deadline == five - .seconds(1))
        // The stages above keep theirs: a copy changes alone.
        var copy = context
        copy.tightenDeadline(within: .zero)
        #expect(context.deadline == five - .seconds(1))
        #expect(try #require(copy.deadline) < five - .seconds(1))
        // Out-of-range limits: a negative one is "already passed", a huge one at most a century.
        var huge = MiddlewareContext()
        huge.tightenDeadline(within: .seconds(Int64.max))
        #expect(huge.deadline != nil)
        var negative = MiddlewareContext()
        negative.tightenDeadline(within: .seconds(-5))
        #expect(try #require(negative.deadline) <= ContinuousClock.now)
    }

    @Test("a deadline tightened above the timeout stage also bounds a stream's body read after the call returns", arguments: TransportKind.allCases)
    func tightenedDeadlineBoundsStream(kind: TransportKind) async throws {
        let oneSecond = AnyMiddleware { request, context, next in
            var context = context
            context.tightenDeadline(within: .seconds(1))
            return try await next(request, context: context)
        }
        try await withServer(transport: kind, configure: { $0.insert(oneSecond, after: .retry) }) { server, client in
            let started = ContinuousClock.now
            let error = await apiError {
                let streamed = try await client.stream(client.get("/misbehave/slow-body").query(["bytes": 3600, "interval_ms": 1000]).request)
                for try await _ in streamed.chunks {}
            }
            #expect(error?.code == .timedOut)
            #expect(error?.message.contains("the deadline of 1 s") == true, "\(error?.message ?? "")")
            // Unbounded, the body takes an hour; two minutes is far from both on a busy machine.
            #expect(ContinuousClock.now - started < .seconds(120))
        }
    }

    @Test("a page walk spends one deadline, the request's own over the client's", arguments: TransportKind.allCases)
    func pagesSpendOneDeadline(kind: TransportKind) async throws {
        let clock = TestClock()
        // The client's hour is not the walk's deadline: the request's 90 s is.
        try await withServer(transport: kind, configure: { $0.clock = clock; $0.timeouts.deadline = .seconds(3600) }) { server, client in
            server.route("/items") { request in
                let page = Int(request.query("page") ?? "1") ?? 1
                return .json(.array([.object(["page": .int(page)])]), headers: [("Link", "</items?page=\(page + 1)>; rel=\"next\"")])
            }
            var request = client.get("/items").request
            request.deadline = .seconds(90)
            var iterator = client.pages(request).makeAsyncIterator()
            _ = try await iterator.next()
            clock.advance(by: .seconds(91))
            let late = await apiError { _ = try await iterator.next() }
            #expect(late?.code == .timedOut)
            #expect(late?.message.contains("page 2") == true, "\(late?.message ?? "")")
            #expect(server.hits("/items") == 1)
        }
    }

    @Test("an event stream spends the client's deadline over its reconnections", arguments: TransportKind.allCases)
    func eventsSpendOneDeadline(kind: TransportKind) async throws {
        let clock = TestClock()
        // The first event must come within the deadline in real time too: 300 s, and a server
        // that asks for 600 s before the reconnection, more than is left.
        try await withServer(transport: kind, configure: { $0.clock = clock; $0.timeouts.deadline = .seconds(300) }) { server, client in
            server.route("/events/slow") { _ in
                ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data("retry: 600000\ndata: one\n\n".utf8)))
            }
            var received: [String] = []
            let late = await apiError { for try await event in client.events(.get("/events/slow")) { received.append(event.data) } }
            #expect(received == ["one"])
            #expect(late?.code == .timedOut, "\(String(describing: late))")
            #expect(server.hits("/events/slow") == 1, "no reconnection past the deadline")
        }
    }
}
