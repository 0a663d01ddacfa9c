import Foundation

/// The per-attempt time limits (``MiddlewareStage/timeout``): a request's own ``CallOptions/timeout``,
/// else the client's ``APIClient/Configuration/Timeouts/attempt``, and the idle limit
/// (``APIClient/Configuration/Timeouts/idle``). A transport that enforces attempt deadlines
/// itself is handed the instant (``WireRequest/attemptDeadline``); any other attempt, and
/// any attempt the idle limit can end sooner, is raced against one timer. A stream's body, read after the attempt, waits for each chunk under
/// the idle limit and the call's deadline (``MiddlewareContext/Fields/deadline``).
struct TimeoutStage: Middleware {
    let attempt: Duration
    /// No byte for this long ends the call; `nil` for no idle limit.
    let idle: Duration?
    /// Whether the transport ends an attempt at ``WireRequest/attemptDeadline`` itself.
    let transportEnforcesAttemptDeadlines: Bool

    init(_ timeouts: APIClient.Configuration.Timeouts, transportEnforcesAttemptDeadlines: Bool) {
        attempt = timeouts.attempt
        idle = timeouts.idle
        self.transportEnforcesAttemptDeadlines = transportEnforcesAttemptDeadlines
    }

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let consumer = context.fields.bodyReading
        // A download's length has no natural bound: only an explicit timeout limits one attempt.
        let limit = request.timeout ?? (consumer.isFile ? nil : attempt)
        var context = context
        // An attempt that must be over within the idle limit cannot stay idle for longer: no watch.
        let watch = idle.flatMap { idle in limit.map { $0 <= idle } == true ? nil : IdleWatch(limit: idle) }
        if watch != nil || context.fields.idleWatch != nil { context.fields.idleWatch = watch }
        var response: Response
        do {
            if watch == nil, let limit, transportEnforcesAttemptDeadlines, !consumer.isFile {
                // No timer task: the transport ends the attempt at the instant. (A file's body is
                // written above the transport, so only a race can bound it.)
                context.fields.attemptDeadline = .now + limit
                response = try await next(request, context: context)
            } else {
                let bounded = context
                response = try await Deadline.run(until: limit.map { .now + $0 }, idle: watch) {
                    try await next(request, context: bounded)
                }
            }
        } catch let error as Deadline.Idle {
            throw Self.idle(error.limit, request: request, response: watch?.arrivedHead)
        } catch let error as Deadline.Expired {
            guard let limit else { throw error }
            throw Self.expired(limit, request: request)
        } catch let error as APIError where error.code == .timedOut && error.underlyingError == nil {
            // A custom transport's own deadline error: say which limit it was.
            guard let limit else { throw error }
            throw Self.expired(limit, request: error.request ?? request)
        }
        if case .stream = consumer, let body = response.bodyStream {
            let head = response
            response.bodyStream = body.timed(idle: idle, until: context.deadlineOnTheRealClock) { [context] error in
                switch error {
                case let error as Deadline.Idle:
                    return Self.idle(error.limit, request: head.request, response: head)
                case let expired as Deadline.Expired:
                    let failure = context.deadlinePassed(request: head.request, underlyingError: expired)
                    return BodyStage.bodyFailure(failure, response: head)
                default:
                    return error
                }
            }
        }
        return response
    }

    private static func expired(_ limit: Duration, request: Request) -> APIError {
        APIError(.timedOut, localized: "no complete answer within \(APIClient.describe(limit))", request: request, underlyingError: Deadline.Expired())
    }

    /// The idle limit passed; with `response`, while its body arrived.
    private static func idle(_ limit: Duration, request: Request, response: Response?) -> APIError {
        let failure = APIError(
            .timedOut, localized: "no byte arrived for \(APIClient.describe(limit)): the idle limit (timeouts.idle) passed",
            request: request, underlyingError: Deadline.Idle(limit: limit))
        return response.map { BodyStage.bodyFailure(failure, response: $0) } ?? failure
    }
}
