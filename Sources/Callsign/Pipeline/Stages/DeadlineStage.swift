import Foundation

/// Gives a call one overall time limit — attempts, waits, redirects and body reading together
/// (``MiddlewareStage/deadline``); sets ``MiddlewareContext/deadline`` for the stages below.
struct DeadlineStage: Middleware {
    let clock: any CallClock
    let defaultDeadline: Duration?

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard let limit = request.deadline ?? defaultDeadline else { return try await next(request) }
        var context = context
        context.deadline = clock.now + limit
        let bounded = context
        do {
            return try await Deadline.run(within: limit) { try await next(request, context: bounded) }
        } catch is Deadline.Expired {
            throw APIError(
                .timedOut, localized: "the deadline of \(APIClient.describe(limit)) passed before the call completed", request: request)
        }
    }
}
