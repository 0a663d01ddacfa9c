import Foundation

extension APIClient {
    /// Sends a request for a `text/event-stream` and returns its events as they arrive.
    ///
    /// Each connection is one call through the whole pipeline (authentication and its refresh,
    /// retries before the stream starts, cookies, mocks, recording); the body is read as it
    /// arrives, under the idle limit. When the stream of an idempotent request ends or breaks,
    /// it is asked for again after the server's `retry:` delay (or the reconnection's own), with
    /// `Last-Event-ID`, as browsers' `EventSource` does — see ``ServerSentEvents/Reconnection``.
    /// The request's `deadline` (or the client's) covers the whole stream, reconnections
    /// included; cancelling the task that reads it stops it at once. A `204 No Content` ends it.
    ///
    /// ```swift
    /// for try await event in client.events(.get("prices")) {
    ///     print(event.type, event.data)
    /// }
    /// ```
    /// - Throws (while iterating): ``APIError``: the first connection's failure, a status the
    ///   request does not accept, ``APIError/Code/unacceptableContentType`` for an answer that is
    ///   not an event stream, ``APIError/Code/responseTooLarge`` for an event past
    ///   ``Limits/maximumEventSize``, ``APIError/Code/timedOut`` at the deadline, or the last
    ///   failure once the reconnections are spent.
    public func events(_ request: Request, reconnecting: ServerSentEvents.Reconnection = .standard) -> ServerSentEvents {
        ServerSentEvents(client: self, request: request, reconnection: reconnecting)
    }

    /// Calls the API with this name for a `text/event-stream` (see ``events(_:reconnecting:)``):
    /// an OpenAPI operation whose answer is an event stream, say.
    ///
    /// ```swift
    /// for try await event in try client.events("streamCompletion", parameters: ["prompt": "Hi"]) {
    ///     if event.data == "[DONE]" { break }
    ///     print(try event.decode(Chunk.self).text, terminator: "")
    /// }
    /// ```
    /// - Throws: ``APIError`` (``APIError/Code/unknownAPI``, ``APIError/Code/invalidRequest``)
    ///   when the request cannot be built; the stream's own errors come while iterating.
    public func events(
        _ name: String, parameters: Parameters = [:], headers: Headers = [:], reconnecting: ServerSentEvents.Reconnection = .standard
    ) throws(APIError) -> ServerSentEvents {
        events(try definitions.definition(named: name).request(parameters: parameters, headers: headers), reconnecting: reconnecting)
    }
}

/// The events of a `text/event-stream`, read as they arrive (``APIClient/events(_:reconnecting:)``).
/// Iterate it once.
public struct ServerSentEvents: AsyncSequence, Sendable {
    public typealias Element = ServerSentEvent
    public typealias Failure = APIError

    /// When a stream that ended or broke is asked for again.
    ///
    /// The wait before each reconnection is the server's `retry:` delay, else ``delay``, and
    /// never less than ``minimumDelay`` (500 ms). While connections keep ending quickly — within
    /// ``maximumDelay`` of being asked for, as a server that sends one event and closes does —
    /// the wait doubles with each, up to ``maximumDelay``, randomized by the retry policy's
    /// jitter (never below the server's delay); one connection that stays open that long
    /// brings it back to the server's delay. A healthy stream, whose connections last minutes,
    /// always waits exactly the server's delay; a hostile one gets a few quick reconnections,
    /// then no more than about two per ``maximumDelay``, whatever it sends.
    ///
    /// ```swift
    /// client.events(.get("feed"), reconnecting: .upTo(3, after: .seconds(1)))
    /// client.events(.post("completions"), reconnecting: .never)
    /// ```
    public struct Reconnection: Sendable, Hashable {
        /// How many times in a row a stream is asked for again without an event in between;
        /// 0 never reconnects.
        public var maximumAttempts: Int
        /// The wait before asking again, until the server's `retry:` field says otherwise.
        /// Default 3 s (as Chromium's `EventSource`).
        public var delay: Duration
        /// The longest wait that quick ends in a row grow to, and how long a connection must
        /// stay open for the next wait to be the server's delay again. Default 30 s. A server's
        /// `retry:` longer than it is still honoured.
        public var maximumDelay: Duration
        /// Whether non-idempotent requests (a `POST` that starts a completion) reconnect too.
        /// Default `false`: asking again would start the work again.
        public var includesNonIdempotent: Bool

        /// The shortest wait before a reconnection, whatever the server's `retry:` or ``delay``
        /// say: 500 ms, as Firefox's `EventSource`. A `retry: 0` would otherwise ask again as
        /// fast as the connections can be made.
        public static let minimumDelay: Duration = .milliseconds(500)

        /// Creates a reconnection rule.
        ///
        /// - Parameters:
        ///   - maximumAttempts: reconnections in a row without an event; 0 never reconnects.
        ///   - delay: the wait before asking again until the server's `retry:` says otherwise
        ///     (at least ``minimumDelay``). Default 3 s.
        ///   - maximumDelay: the longest wait quick ends in a row grow to. Default 30 s.
        ///   - includesNonIdempotent: whether a `POST` reconnects too. Default `false`.
        public init(maximumAttempts: Int, delay: Duration = .seconds(3), maximumDelay: Duration = .seconds(30), includesNonIdempotent: Bool = false) {
            self.maximumAttempts = Swift.max(0, maximumAttempts)
            self.delay = Swift.max(.zero, delay)
            self.maximumDelay = Swift.max(.zero, maximumDelay)
            self.includesNonIdempotent = includesNonIdempotent
        }

        /// Idempotent requests reconnect up to 10 times in a row, 3 s apart unless the server
        /// says otherwise; others end with their stream.
        public static let standard = Reconnection(maximumAttempts: 10)
        /// The stream ends when the server ends it or the connection breaks.
        public static let never = Reconnection(maximumAttempts: 0)
        /// Up to `attempts` reconnections in a row, `delay` apart unless the server says otherwise.
        public static func upTo(_ attempts: Int, after delay: Duration = .seconds(3)) -> Reconnection {
            Reconnection(maximumAttempts: attempts, delay: delay)
        }

        /// The wait before a reconnection: `base` (the server's `retry:` or ``delay``, raised to
        /// ``minimumDelay``) after a connection that lasted and after the first quick end,
        /// doubled for each further quick end in a row up to ``maximumDelay``. The doubling and
        /// the jitter are the retry policy's own (``RetryPolicy/jitter``); the wait never drops
        /// below `base`.
        func wait(base: Duration, quickEnds: Int, jitter: RetryPolicy.Jitter) -> Duration {
            let base = Swift.max(base, Self.minimumDelay)
            guard quickEnds > 1, maximumDelay > base else { return base }
            let backOff = RetryPolicy(baseDelay: base, maximumDelay: maximumDelay, jitter: jitter)
            return Swift.max(base, backOff.delay(afterAttempt: quickEnds))
        }
    }

    let client: APIClient
    let request: Request
    let reconnection: Reconnection

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(client: client, request: request, reconnection: reconnection)
    }

    /// Reads events, connecting and reconnecting as needed.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private let client: APIClient
        private let request: Request
        private let reconnects: Bool
        private let reconnection: Reconnection
        private let jitter: RetryPolicy.Jitter
        private var parser: ServerSentEvent.Parser
        private var chunks: ResponseBodyStream.AsyncIterator?
        private var ready: [ServerSentEvent] = []
        private var readyIndex = 0
        /// Reconnections since the last event.
        private var attempts = 0
        /// When the connection that ends next was asked for.
        private var askedAt: ContinuousClock.Instant?
        /// Connections in a row that ended within `maximumDelay` of being asked for (at most 64).
        private var quickEnds = 0
        /// Whether a connection was made yet (the first failure is always the caller's).
        private var connected = false
        /// The request's deadline (or the client's), spent over every connection.
        private var deadline: WalkDeadline
        private var finished = false

        init(client: APIClient, request: Request, reconnection: Reconnection) {
            self.client = client
            self.request = request
            self.reconnects = reconnection.maximumAttempts > 0 && (request.isIdempotent || reconnection.includesNonIdempotent)
            self.reconnection = reconnection
            self.jitter = (request.retry ?? client.configuration.retry).jitter
            self.parser = ServerSentEvent.Parser(limits: client.configuration.limits)
            self.deadline = WalkDeadline(client.configuration)
        }

        public mutating func next() async throws(APIError) -> ServerSentEvent? {
            while !finished {
                if readyIndex < ready.count {
                    defer { readyIndex += 1 }
                    attempts = 0
                    return ready[readyIndex]
                }
                ready.removeAll(keepingCapacity: true)
                readyIndex = 0
                guard var current = chunks else {
                    if !(try await connect()) { finished = true }
                    continue
                }
                let chunk: Data?
                do {
                    chunk = try await current.next()
                    chunks = current
                } catch {
                    chunks = nil
                    parser.finish()
                    try await lost(APIError.wrap(error, request: request))
                    continue
                }
                guard let chunk else {
                    chunks = nil
                    parser.finish()
                    // The server ended the stream: asked for again, if this request may be.
                    guard reconnects, attempts < reconnection.maximumAttempts else {
                        finished = true
                        continue
                    }
                    try await wait()
                    continue
                }
                ready = try parser.feed(chunk)
            }
            return nil
        }

        /// A connection broke: asked for again, or its error ends the stream.
        private mutating func lost(_ error: APIError) async throws(APIError) {
            switch error.code {
            case .cancelled, .responseTooLarge: throw error
            default: break
            }
            if deadline.passes() { throw error }
            guard reconnects, attempts < reconnection.maximumAttempts else { throw error }
            try await wait()
        }

        /// Waits the reconnection delay (the server's `retry:`, else the rule's, backed off while
        /// connections end quickly), within the deadline.
        private mutating func wait() async throws(APIError) {
            attempts += 1
            let now = client.configuration.clock.now
            // Measured from when the connection was asked for, so that a server slow to answer
            // and quick to close counts as quick too. WHATWG HTML §9.2.3 lets a user agent wait
            // longer than `retry:` after a failed attempt; a connection that ends at once is one.
            if let askedAt, now - askedAt >= reconnection.maximumDelay {
                quickEnds = 0
            } else {
                quickEnds = Swift.min(quickEnds + 1, 64)
            }
            let pause = reconnection.wait(base: parser.retry ?? reconnection.delay, quickEnds: quickEnds, jitter: jitter)
            if deadline.passes(within: pause) {
                throw APIError(.timedOut, localized: "the event stream's deadline passed before it could reconnect", request: request)
            }
            do {
                try await client.configuration.clock.sleep(for: pause)
            } catch {
                throw APIError(.cancelled, localized: "the event stream was cancelled", request: request)
            }
        }

        /// Opens the stream: `false` when the server says there is nothing more (`204`).
        private mutating func connect() async throws(APIError) -> Bool {
            var request = self.request
            if request.headers["Accept"] == nil { request.headers["Accept"] = "text/event-stream" }
            if let id = parser.lastEventID { request.headers["Last-Event-ID"] = id }
            askedAt = client.configuration.clock.now
            if let left = deadline.left(for: request) { request.deadline = left }
            let response: StreamedResponse
            do {
                response = try await client.stream(request)
            } catch {
                guard connected else { throw error }
                try await lost(error)
                return true
            }
            connected = true
            if response.response.status.code == 204 { return false }
            try response.response.validateStatus()
            guard response.response.mediaType == "text/event-stream" else {
                throw APIError(
                    .unacceptableContentType,
                    localized: "the answer is \(response.response.mediaType ?? "without a Content-Type"), not an event stream (text/event-stream)",
                    request: request, response: response.response)
            }
            chunks = response.chunks.makeAsyncIterator()
            return true
        }
    }
}
