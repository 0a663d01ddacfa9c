public import Foundation
public import Logging

/// What a middleware knows about the call it is part of, beyond its ``Request``: the one carrier
/// of per-call facts, for the built-in stages and yours alike.
///
/// A stage that changes a fact passes its changed copy on with ``MiddlewareNext/callAsFunction(_:context:)``;
/// stages above it never see the change. The timeout stage, for instance, sets
/// ``attemptDeadline`` for everything below it:
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
public struct MiddlewareContext: Sendable {
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

    struct Facts: Sendable {
        var apiName: String?
        var tag: String?
        var endpoint: (any Endpoint)?
        var bodyReading: BodyReading = .memory
        var isReplay = false
        var attempt = 1
        var deadline: ContinuousClock.Instant?
        var attemptDeadline: ContinuousClock.Instant?
        var idleWatch: IdleWatch?
        var progress: ProgressReporter?
        var logger: Logger?
        var redaction: Redaction = .default
        var commonParameterNames: Set<String> = []
        var authorizingScheme: (any AuthenticationScheme)?
        var observedCall: ObservedCall?
        var headArrived: (@Sendable () -> Void)?
    }

    /// Every call starts from these facts; the box is copied only when a fact changes, so a call
    /// waiting for its turn holds one pointer to a box it shares with every other.
    private static let defaults = CopyOnWrite(Facts())
    private var facts: CopyOnWrite<Facts>

    /// A context with no facts yet: a plain call, its body read into memory.
    public init() { facts = Self.defaults }

    /// The API name, when the call came from a definition (or an OpenAPI operation).
    public var apiName: String? {
        get { facts.value.apiName }
        set { facts.value.apiName = newValue }
    }

    /// The request's tag (the backend subsystem it belongs to, xAPI's), for stages below the
    /// request seam that no longer see the ``Request``.
    public var tag: String? {
        get { facts.value.tag }
        set { facts.value.tag = newValue }
    }

    /// The endpoint value the call was made from (``APIClient/send(_:)-(E)``), for middlewares
    /// and mock providers that switch on it.
    public var endpoint: (any Endpoint)? {
        get { facts.value.endpoint }
        set { facts.value.endpoint = newValue }
    }

    /// How the response body will be read: in memory, as a stream, or into a file.
    public var bodyReading: BodyReading {
        get { facts.value.bodyReading }
        set { facts.value.bodyReading = newValue }
    }

    /// Whether the offline queue is replaying a request it stored: the chain then starts below
    /// the ``MiddlewareStage/offline`` stage, since what ran above it ran when it was queued.
    public var isReplay: Bool {
        get { facts.value.isReplay }
        set { facts.value.isReplay = newValue }
    }

    /// Which attempt this is, from 1; the ``MiddlewareStage/retry`` stage counts them, so it is
    /// 1 above that stage.
    public var attempt: Int {
        get { facts.value.attempt }
        set { facts.value.attempt = newValue }
    }

    /// When the call's overall deadline passes, if it has one (set by the
    /// ``MiddlewareStage/deadline`` stage). A stage that waits — a retry's back-off, a rate
    /// limit — must not wait past it.
    public var deadline: ContinuousClock.Instant? {
        get { facts.value.deadline }
        set { facts.value.deadline = newValue }
    }

    /// When this attempt must be over, for a transport that enforces deadlines itself (set by
    /// the ``MiddlewareStage/timeout`` stage).
    public var attemptDeadline: ContinuousClock.Instant? {
        get { facts.value.attemptDeadline }
        set { facts.value.attemptDeadline = newValue }
    }

    /// The attempt's idle limit (set by the ``MiddlewareStage/timeout`` stage): whoever moves the
    /// call's bytes restarts it with ``IdleWatch/touch()``.
    public var idleWatch: IdleWatch? {
        get { facts.value.idleWatch }
        set { facts.value.idleWatch = newValue }
    }

    /// Where the call's transfer progress goes, when someone watches (a ``CallTask``'s stream, a
    /// ``CallObserver``); `nil` when nobody does.
    public var progress: ProgressReporter? {
        get { facts.value.progress }
        set { facts.value.progress = newValue }
    }

    /// The call's logger: the request's own, else the client's; `nil` when neither is set.
    public var logger: Logger? {
        get { facts.value.logger }
        set { facts.value.logger = newValue }
    }

    /// What is secret in this call, for anything that shows or keeps it (logs, HAR files, cache
    /// keys, the offline queue): the client's ``APIClient/Configuration/Observability/redaction``,
    /// widened by the names and values of its ``Authentication``.
    public var redaction: Redaction {
        get { facts.value.redaction }
        set { facts.value.redaction = newValue }
    }

    /// The parameters the ``MiddlewareStage/commonParameters`` stage added to the call's own:
    /// they stay behind when a redirect leaves the origin.
    public var commonParameterNames: Set<String> {
        get { facts.value.commonParameterNames }
        set { facts.value.commonParameterNames = newValue }
    }

    /// The scheme that authorized this call, set by the ``MiddlewareStage/authentication`` stage
    /// only when the request needs authorization and goes to a trusted origin; the
    /// ``WireStage/signing`` stage asks it to sign the bytes sent.
    public var authorizingScheme: (any AuthenticationScheme)? {
        get { facts.value.authorizingScheme }
        set { facts.value.authorizingScheme = newValue }
    }

    /// Told by the ``MiddlewareStage/body`` stage when an answer's head has arrived, before its
    /// body is read: the ``MiddlewareStage/hedging`` stage stops waiting to hedge then. `nil`
    /// unless that stage asks.
    var headArrived: (@Sendable () -> Void)? {
        get { facts.value.headArrived }
        set { facts.value.headArrived = newValue }
    }

    /// The call as the client's ``CallObserver``s see it; `nil` when the client has none.
    public var observedCall: ObservedCall? {
        get { facts.value.observedCall }
        set { facts.value.observedCall = newValue }
    }
}
