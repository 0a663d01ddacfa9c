import Foundation

/// Gives a call one overall time limit — attempts, waits, redirects and body reading together
/// (``MiddlewareStage/deadline``): it tightens ``MiddlewareContext/Fields/deadline`` to the call's
/// limit, and the chain enforces it below (``ChainNext/callAsFunction(_:context:)``). A
/// middleware above that set an earlier deadline keeps it.
struct DeadlineStage: Middleware {
    let timeouts: APIClient.Configuration.Timeouts

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard let limit = timeouts.deadline(for: request) else { return try await next(request) }
        var context = context
        context.tightenDeadline(within: limit)
        return try await next(request, context: context)
    }
}

extension APIClient.Configuration.Timeouts {
    /// A call's deadline, the one rule: the request's own ``CallOptions/deadline`` (its
    /// call's, its definition's or `DEFAULT`'s), else the client's ``deadline``; `nil` for none.
    /// Read by the deadline stage for one call, and by walks of several calls (pages, an event
    /// stream's reconnections), which spend one deadline over all of them.
    func deadline(for request: Request) -> Duration? {
        request.deadline ?? deadline
    }
}
