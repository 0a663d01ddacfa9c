/// Adds the client-info headers (``MiddlewareStage/clientInfo``, APE's `X-Client-*`); a
/// request's own header of the same name wins.
struct ClientInfoStage: Middleware {
    let headers: Headers

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        var request = request
        request.headers = headers.merging(request.headers)
        return try await next(request)
    }
}
