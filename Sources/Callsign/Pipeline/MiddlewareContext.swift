public import Foundation
public import Logging

/// What a middleware knows about the call it is part of, beyond its ``Request``: the one carrier
/// of per-call facts, for the built-in stages and yours alike.
///
/// A stage that changes a fact passes its changed copy on with ``ChainNext/callAsFunction(_:context:)``;
/// stages above it never see the change. The timeout stage, for instance, sets
/// ``Fields/attemptDeadline`` for everything below it:
///
/// ```swift
/// struct LogAttempts: Middleware {
///     func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
///         context.logger?.debug("attempt \(context.attempt) of \(context.apiName ?? request.path)")
///         return try await next(request)
///     }
/// }
/// configuration.insert(LogAttempts(), after: .retry)   // sees every attempt
/// ```
///
/// A context is one pointer wide: its facts live in one copy-on-write box, shared by every
/// stage until one of them changes a fact.
@dynamicMemberLookup
public struct MiddlewareContext: BoxedFields, Sendable {
    /// How a call reads its response body.
    public enum BodyReading: Sendable, Hashable {
        /// Whole, in memory, up to the client's ``Limits/maximumResponseBodySize`` (`send`, `call`).
        case memory
        /// Chunk by chunk, by the caller (``APIClient/stream(_:)``).
        case stream
        /// Into a file, continuing a partial one when `resuming` (``APIClient/download(_:to:resuming:)-(Request,_,_)``).
        case file(URL, resuming: Bool)

        /// Whether the body goes to a file.
        public var isFile: Bool {
            if case .file = self { return true }
            return false
        }
    }

    /// The facts a context carries. Read and change them on the context itself —
    /// `context.attempt`, `context.logger = …` — through key-path member lookup; the call's
    /// ``deadline`` only moves earlier, with ``MiddlewareContext/tightenDeadline(to:)``.
    public struct Fields: Sendable {
        /// The API name, when the call came from a definition (or an OpenAPI operation).
        public var apiName: String? = nil
        /// The request's tag (the backend subsystem it belongs to, xAPI's), for stages below the
        /// request seam that no longer see the ``Request``.
        public var tag: String? = nil
        /// The endpoint value the call was made from (``APIClient/send(_:)-(E)``), for middlewares
        /// and mock providers that switch on it.
        public var endpoint: (any Endpoint)? = nil
        /// How the response body will be read: in memory, as a stream, or into a file.
        public var bodyReading: BodyReading = .memory
        /// Whether the offline queue is replaying a request it stored: the chain then starts below
        /// the ``MiddlewareStage/offline`` stage, since what ran above it ran when it was queued.
        public var isReplay: Bool = false
        /// Which attempt this is, from 1; the ``MiddlewareStage/retry`` stage counts them, so it is
        /// 1 above that stage.
        public var attempt: Int = 1
        /// When the call must be over, if it has a deadline: an instant of the client's
        /// ``APIClient/Configuration/clock``. The ``MiddlewareStage/deadline`` stage sets it from the
        /// request's ``CallOptions/deadline`` (its call's, definition's or `DEFAULT`'s), else the
        /// client's ``APIClient/Configuration/Timeouts/deadline``; a middleware may move it earlier
        /// with ``tightenDeadline(to:)``. A stage that waits — a retry's back-off, a rate limit — does
        /// not wait past it.
        ///
        /// It is the call's one deadline, and it is enforced: once it passes, the call ends with
        /// ``APIError/Code/timedOut``, whatever the stages below are doing. It can only move earlier;
        /// the per-attempt limit is ``attemptDeadline``.
        public internal(set) var deadline: ContinuousClock.Instant? = nil
        /// How long the call had when its deadline was last moved: what the message says when it passes.
        var deadlineLimit: Duration = .zero
        /// The client's clock, when it is not the system's (``APIClient/Configuration/clock``).
        var clockIfNotSystem: (any CallClock)? = nil
        /// When this attempt must be over — the per-attempt limit, not the call's ``deadline`` — for
        /// a transport that enforces it itself (``WireRequest/attemptDeadline``; set by the
        /// ``MiddlewareStage/timeout`` stage).
        public var attemptDeadline: ContinuousClock.Instant? = nil
        /// The attempt's idle limit (set by the ``MiddlewareStage/timeout`` stage): whoever moves the
        /// call's bytes restarts it with ``IdleWatch/touch()``.
        public var idleWatch: IdleWatch? = nil
        /// Where the call's transfer progress goes, when someone watches (a ``CallTask``'s stream, a
        /// ``CallObserver``); `nil` when nobody does.
        public var progress: ProgressReporter? = nil
        /// The call's logger: the request's own, else the client's; `nil` when neither is set.
        public var logger: Logger? = nil
        /// What is secret in this call, for anything that shows or keeps it (logs, HAR files, cache
        /// keys, the offline queue): the client's ``APIClient/Configuration/Observability/redaction``,
        /// widened by the names and values of its ``Authentication``.
        public var redaction: Redaction = .default
        /// The parameters the ``MiddlewareStage/commonParameters`` stage added to the call's own:
        /// they stay behind when a redirect leaves the origin.
        public var commonParameterNames: Set<String> = []
        /// The scheme that authorized this call, set by the ``MiddlewareStage/authentication`` stage
        /// only when the request needs authorization and goes to a trusted origin; the
        /// ``WireStage/signing`` stage asks it to sign the bytes sent.
        public var authorizingScheme: (any AuthenticationScheme)? = nil
        /// The call as the client's ``CallObserver``s see it; `nil` when the client has none.
        public var observedCall: ObservedCall? = nil
        /// Told by the ``MiddlewareStage/body`` stage when an answer's head has arrived, before its
        /// body is read: the ``MiddlewareStage/hedging`` stage stops waiting to hedge then. `nil`
        /// unless that stage asks.
        var headArrived: (@Sendable () -> Void)? = nil
        /// The WebSocket this call's handshake asks for (``APIClient/webSocket(_:options:)``), or
        /// `nil` for a plain call: the ``WireStage/transport`` stage passes it to the transport
        /// (``WireRequest/webSocket``). Such a call is never cached, hedged or shared.
        public var webSocket: WebSocketUpgrade? = nil
    }

    /// Every call starts from these facts; the box is copied only when a fact changes, so a call
    /// waiting for its turn holds one pointer to a box it shares with every other.
    private static let defaults = CopyOnWrite(Fields())
    private var storage: CopyOnWrite<Fields>

    /// All the facts at once; read and change them one by one on the context itself.
    ///
    /// Through `fields`, a fact is read or changed in its box (`context.fields.attempt`); the
    /// shorter member lookup (`context.attempt`) reads the same value through a key path, which
    /// copies the facts first: tens of nanoseconds, which Callsign's own stages, on every call,
    /// do without.
    public var fields: Fields {
        _read { yield storage.value }
        _modify { yield &storage.value }
    }

    /// A context with no facts yet: a plain call, its body read into memory.
    public init() { storage = Self.defaults }

    /// Moves the call's deadline earlier, to `instant` (of the client's
    /// ``APIClient/Configuration/clock``), for everything this context is passed to: the stages
    /// below end the call with ``APIError/Code/timedOut`` once it passes.
    ///
    /// An instant later than the call's ``Fields/deadline`` changes nothing: no middleware can give a
    /// call more time than its deadline (a middleware above the ``MiddlewareStage/deadline``
    /// stage keeps its earlier instant too). The stages below see the change; the stages above
    /// keep theirs.
    ///
    /// ```swift
    /// let hurry = AnyMiddleware { request, context, next in
    ///     var context = context
    ///     context.tightenDeadline(within: .milliseconds(300))
    ///     return try await next(request, context: context)   // over in 300 ms, or .timedOut
    /// }
    /// ```
    ///
    /// A stream's body, read after the call returns, is bounded by the deadline the
    /// ``MiddlewareStage/timeout`` stage saw: tighten it above that stage to bound the body too.
    public mutating func tightenDeadline(to instant: ContinuousClock.Instant) {
        if let deadline = fields.deadline, deadline <= instant { return }
        let limit = clock.now.duration(to: instant)
        fields.deadline = instant
        fields.deadlineLimit = max(.zero, limit)
    }

    /// Moves the call's deadline earlier, to `limit` from now on the client's
    /// ``APIClient/Configuration/clock``; a later instant than the call's ``Fields/deadline`` changes
    /// nothing (see ``tightenDeadline(to:)``).
    ///
    /// ```swift
    /// var context = context
    /// context.tightenDeadline(within: .seconds(5))
    /// return try await next(request, context: context)
    /// ```
    public mutating func tightenDeadline(within limit: Duration) {
        // A century at most: a limit of any size never reaches the clock's arithmetic.
        let limit = min(max(.zero, limit), .seconds(3_155_760_000))
        let instant = clock.now + limit
        if let deadline = fields.deadline, deadline <= instant { return }
        fields.deadline = instant
        fields.deadlineLimit = limit
    }

    /// The clock ``Fields/deadline`` is an instant of: the client's (set when the call starts).
    var clock: any CallClock {
        get { fields.clockIfNotSystem ?? SystemClock() }
        set { fields.clockIfNotSystem = type(of: newValue) == SystemClock.self ? nil : newValue }
    }
}

extension MiddlewareContext {
    /// Whether this context's ``deadline`` is earlier than `given`'s: a stage moved it, and the
    /// rest of the chain runs under it. Two loads and a comparison on every `next` that passes a
    /// changed context; nothing for one that passes its own.
    func tightensDeadline(of given: MiddlewareContext) -> Bool {
        guard let deadline = fields.deadline else { return false }
        guard let outer = given.fields.deadline else { return true }
        return deadline < outer
    }

    /// Runs the rest of a chain under this context's ``deadline``, the one place the call's
    /// deadline is enforced (for the ``MiddlewareStage/deadline`` stage and every middleware that
    /// tightens it, on both seams): once it passes, `operation` is cancelled and the call ends
    /// with ``APIError/Code/timedOut`` naming the limit.
    func enforcingDeadline<T: Sendable>(request: Request?, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        guard let end = deadlineOnTheRealClock else { return try await operation() }
        do {
            return try await Deadline.run(until: end, operation)
        } catch let expired as Deadline.Expired {
            throw deadlinePassed(request: request, underlyingError: expired)
        }
    }

    /// ``deadline`` as an instant of the real clock, for the timers that enforce it. The
    /// deadline is an instant of the client's clock; the timers race real I/O on the real one, so
    /// they get the same time left, as a real instant (a test clock's time does not run).
    var deadlineOnTheRealClock: ContinuousClock.Instant? {
        guard let deadline = fields.deadline else { return nil }
        guard let clock = fields.clockIfNotSystem else { return deadline }
        return ContinuousClock.now + max(.zero, clock.now.duration(to: deadline))
    }

    /// The error of a call whose deadline passed. Its underlying error is ``Deadline/Expired``, so
    /// that the timeout stage does not take it for a transport's own attempt timeout.
    func deadlinePassed(request: Request?, underlyingError: Deadline.Expired) -> APIError {
        APIError(
            .timedOut, localized: "the deadline of \(APIClient.describe(fields.deadlineLimit)) passed before the call completed",
            request: request, underlyingError: underlyingError)
    }
}
