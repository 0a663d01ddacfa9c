import Callsign
import CallsignTesting
import Foundation
import Synchronization

// The resilience steps: what one answer from an origin does to every other call to it, and the
// shapes of answers a list, a failure or a live feed come in. Each step adds its routes to the
// demo API and keeps its waits short (a second at most), so the whole tour stays quick.

extension DemoTour {
    /// Rate limits, the circuit breaker, hedging, pages, problem details and server-sent events.
    mutating func resilienceSteps() async throws {
        try await rateLimitStep()
        try await circuitBreakerStep()
        try await hedgingStep()
        try await paginationStep()
        await problemDetailsStep()
        try await eventsStep()
    }

    /// A 429 with Retry-After closes the origin's gate for every call, not only the one it answered.
    private mutating func rateLimitStep() async throws {
        step("Rate limits: a 429 with Retry-After closes the origin's gate, and every call to it waits")
        let arrivals = Mutex<[ContinuousClock.Instant]>([])
        server.route("/demo/limited") { _ in
            let isFirst = arrivals.withLock { arrivals in
                defer { arrivals.append(.now) }
                return arrivals.isEmpty
            }
            return isFirst
                ? .json(["error": "slow down"], status: 429, headers: [("Retry-After", "1")])
                : .json(["ok": true])
        }
        let limits = RateLimits()
        let client = APIClient(configuration: .init {
            $0.baseURL = server.baseURL
            $0.rateLimits = limits
            $0.retry = .none  // so the 429 itself comes back, and only the gate holds the calls
        })
        let refused = try await client.get("demo/limited").send()
        say("→ GET /demo/limited ← \(refused.status.code), Retry-After: \(refused.headers[.retryAfter] ?? "none")")
        guard let reopens = limits.closedUntil(server.baseURL) else {
            say("the gate did not close")
            return
        }
        let calls = 5
        let started = ContinuousClock.now
        let answered = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<calls { group.addTask { try await client.get("demo/limited").send().status.code } }
            return try await group.reduce(into: 0) { count, status in count += status == 200 ? 1 : 0 }
        }
        let seen = arrivals.withLock { Array($0.dropFirst()) }
        let early = APIClientDemoFormat.seconds(Self.rounded(max(.zero, reopens - started)))
        say("\(calls) calls started at once, \(early) before the gate reopened; \(answered) of them answered 200")
        say("requests that reached the server while the gate was closed: \(seen.filter { $0 < reopens }.count); after it opened: \(seen.filter { $0 >= reopens }.count)")
    }

    /// Consecutive 503s open the circuit; calls then fail at once until one probe closes it.
    private mutating func circuitBreakerStep() async throws {
        step("Circuit breaker: three 503s in a row open the circuit, calls fail at once, one probe closes it")
        let failing = Mutex(true)
        server.route("/demo/flaky") { _ in
            failing.withLock { $0 } ? .json(["error": "down for maintenance"], status: 503) : .json(["ok": true])
        }
        let coolDown = Duration.milliseconds(500)
        let breaker = CircuitBreaker(consecutiveFailures: 3, coolDown: coolDown)
        let transitions = breaker.transitions
        let client = APIClient(configuration: .init {
            $0.baseURL = server.baseURL
            $0.circuitBreaker = breaker
            $0.retry = .none  // every 503 is one failure the breaker counts
        })
        for _ in 1...3 {
            let response = try await client.get("demo/flaky").send()
            say("→ GET /demo/flaky ← \(response.status.code)")
        }
        let before = server.hits("/demo/flaky")
        if let rejected = await Self.failure({ () async throws(APIError) in _ = try await client.get("demo/flaky").send() }) {
            say("✗ \(rejected.code): \(rejected.message)")
        }
        say("requests the server saw for that call: \(server.hits("/demo/flaky") - before)")
        failing.withLock { $0 = false }
        try await Task.sleep(for: coolDown)  // the breaker's own cool-down, on the real clock
        let probe = try await client.get("demo/flaky").send()
        say("after a cool-down of \(APIClientDemoFormat.seconds(coolDown)), one probe: GET /demo/flaky ← \(probe.status.code)")
        // Every transition was told before the probe's answer came back; a circuit that did not
        // close would leave the loop below waiting, so it only runs when it did.
        guard breaker.state(of: server.baseURL) == .closed else {
            say("the circuit is \(breaker.state(of: server.baseURL).description)")
            return
        }
        for await change in transitions {
            say("transition: \(change.from.description) → \(change.to.description)")
            if change.to == .closed { break }
        }
    }

    /// A first attempt that stalls loses to a hedge sent after 200 ms; the slow one is cancelled.
    private mutating func hedgingStep() async throws {
        step("Hedged requests: no answer after 200 ms sends a second attempt; the first answer wins")
        let count = Mutex(0)
        let (outcomes, outcome) = AsyncStream.makeStream(of: Bool.self)
        let stall = Duration.seconds(2)
        server.route("/demo/quote") { request in
            let number = count.withLock { count in
                count += 1
                return count
            }
            if number == 1 {
                // Stalls for 2 s, unless the client gives up on it first (its connection closes).
                let closed = await SystemClock().first(of: {
                    await request.waitForClientToClose()
                    return request.clientHasClosed
                }, within: stall) ?? false
                outcome.yield(closed)
                outcome.finish()
            }
            return .json(["attempt": .int(number), "quote": "Balsa Fish, 2 boards left"])
        }
        let client = APIClient(configuration: .init {
            $0.baseURL = server.baseURL
            $0.hedging = .after(.milliseconds(200))
        })
        let started = ContinuousClock.now
        let quote = try await client.get("demo/quote").send().json()
        let elapsed = ContinuousClock.now - started
        let took = APIClientDemoFormat.seconds(Self.rounded(elapsed))
        if let attempt = quote["attempt"]?.intValue, attempt > 1 {
            say("the call returned attempt \(attempt)'s answer (the hedge's) after \(took); the first attempt alone takes \(APIClientDemoFormat.seconds(stall))")
        } else {
            say("the first attempt answered first, after \(took): the hedge was too slow this time")
        }
        say("quote: \(quote["quote"]?.stringValue ?? "")")
        var first = outcomes.makeAsyncIterator()
        if await first.next() == true {
            say("the slow first attempt was cancelled: the client closed its connection")
        } else {
            say("the slow first attempt ran to its end")
        }
        say("requests that reached the server: \(server.hits("/demo/quote"))")
    }

    /// A Link-header walk with `items(...)`, and the page limit that stops a longer one.
    private mutating func paginationStep() async throws {
        step("Pages: items(...) follows Link: <…>; rel=\"next\" page after page, up to a page limit")
        let path = "/demo/board-pages"
        let titles = ["Balsa Fish", "Longboard", "Twin Fin", "Gun", "Egg", "Mini Simmons", "Hybrid", "Quad", "Shortboard", "Foamie"]
        let lastPage = 5
        server.route(path) { request in
            let page = min(max(1, Int(request.query("page") ?? "1") ?? 1), lastPage)
            let items = (page * 2 - 2..<page * 2).map { index in
                JSONValue.object(["id": .int(index + 1), "title": .string(titles[index])])
            }
            let next: [(name: String, value: String)] = page < lastPage ? [("Link", "<\(path)?page=\(page + 1)>; rel=\"next\"")] : []
            return .json(.array(items), headers: next)
        }
        var definition = APIDefinition(name: "ListBoards", baseURL: server.baseURL, path: String(path.dropFirst()))
        definition.pagination = .link
        let client = APIClient(definitions: try APIDefinitions([definition]))

        var before = server.hits(path)
        var boards: [String] = []
        for try await board in try client.items("ListBoards", as: DemoBoard.self) { boards.append(board.title) }
        say("\(boards.count) boards from \(server.hits(path) - before) pages: \(boards.joined(separator: ", "))")

        before = server.hits(path)
        var limited = 0
        for try await _ in try client.items("ListBoards", as: DemoBoard.self, pagination: Pagination.link.limited(to: 2)) { limited += 1 }
        say("with a limit of 2 pages: \(limited) boards, \(server.hits(path) - before) pages fetched; the walk stopped before page 3")
    }

    /// An `application/problem+json` answer, read as the ``ProblemDetails`` on the error.
    private mutating func problemDetailsStep() async {
        step("Problem details (RFC 9457): a 422 application/problem+json becomes a ProblemDetails on the error")
        server.route("/demo/signups") { _ in
            ServerResponse(
                status: 422, headers: [("Content-Type", "application/problem+json")],
                body: .data(Data(#"{"type": "https://example.com/probs/taken", "title": "Name taken", "status": 422, "detail": "ada is already registered", "instance": "/demo/signups/ada"}"#.utf8)))
        }
        let client = APIClient(configuration: .init { $0.baseURL = server.baseURL })
        let error = await Self.failure { () async throws(APIError) in
            _ = try await client.post("demo/signups").parameters(["name": "ada"]).send().validate()
        }
        guard let error else {
            say("unexpectedly succeeded")
            return
        }
        say("✗ \(error.code): \(error.message)")
        if let problem = error.problem {
            say("problem: \(problem.title ?? "") — \(problem.detail ?? "") (status \(problem.status.map(String.init) ?? "none"), type \(problem.type))")
        }
    }

    /// A `text/event-stream` cut mid-event, resumed with `Last-Event-ID`, ended by a 204.
    private mutating func eventsStep() async throws {
        step("Server-sent events: a stream cut mid-event reconnects with Last-Event-ID; every event arrives once")
        let path = "/demo/swell"
        let stream = [("Content-Type", "text/event-stream")]
        server.route(path) { request in
            switch request.header("Last-Event-ID") {
            case nil:
                let body = "retry: 100\nid: 1\nevent: swell\ndata: 2 ft at Malibu\n\nid: 2\nevent: swell\ndata: 3 ft at Malibu\n\nid: 3\nevent: swell\ndata: 4 ft"
                return ServerResponse(status: 200, headers: stream, body: .data(Data((body + " at Malibu\n\n").utf8)))
                    .with(.truncate(afterBodyBytes: body.utf8.count))  // cut in the middle of event 3
            case "2"?:
                let body = "id: 3\nevent: swell\ndata: 4 ft at Malibu\n\nid: 4\nevent: tide\ndata: high at 14:05\n\n"
                return ServerResponse(status: 200, headers: stream, body: .data(Data(body.utf8)))
            default:
                return ServerResponse(status: 204)  // nothing more: the stream ends
            }
        }
        let client = APIClient(configuration: .init { $0.baseURL = server.baseURL })
        let before = server.requests.count
        for try await event in client.events(.get(String(path.dropFirst()))) {
            say("id \(event.id ?? "none"), event \(event.type): \(event.data)")
        }
        for request in server.requests.dropFirst(before) where request.rawPath == path {
            say("→ \(request.method) \(request.uri), Last-Event-ID: \(request.header("Last-Event-ID") ?? "none")")
        }
    }

    /// A duration to the millisecond, so a printed wait reads 1.003 s, not 1.002871 s.
    private static func rounded(_ duration: Duration) -> Duration {
        let (seconds, attoseconds) = duration.components
        return .seconds(seconds) + .milliseconds(attoseconds / 1_000_000_000_000_000)
    }
}
