/// Where common parameters (and authorization parameters) go.
public enum CommonParameterPlacement: Sendable, Hashable {
    /// Always in the query string, whatever the method.
    case query
    /// With the call's parameters: the query for GET, HEAD and DELETE, the body otherwise.
    case parameters
}

/// Adds the common parameters and headers of a request's tag (xAPI).
struct CommonParametersMiddleware: Middleware {
    let parameters: (@Sendable (String?) async throws -> Parameters)?
    let headers: (@Sendable (String?) async throws -> Headers)?
    let placement: CommonParameterPlacement

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        var request = request
        var context = context
        if let parameters {
            let common = try await parameters(request.tag)
            switch request.commonParameterPlacement ?? placement {
            case .query:
                for (key, value) in common where request.query[key] == nil && request.parameters[key] == nil {
                    request.query[key] = value
                }
            case .parameters:
                context.call.commonParameterNames.formUnion(common.keys.filter { request.parameters[$0] == nil })
                request.parameters.merge(common) { own, _ in own }
            }
        }
        if let headers {
            request.headers = try await headers(request.tag).merging(request.headers)
        }
        return try await next(request, context: context)
    }
}

/// Runs `beforeEach`.
struct BeforeEachMiddleware: Middleware {
    let change: @Sendable (Request) async throws -> Request

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        try await next(try await change(request))
    }
}
