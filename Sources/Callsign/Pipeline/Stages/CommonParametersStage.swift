/// Adds the common parameters and headers of a request's tag (``MiddlewareStage/commonParameters``,
/// xAPI's common parameters): in the chain only when the client has some.
struct CommonParametersStage: Middleware {
    let parameters: (@Sendable (String?) async throws -> Parameters)?
    let headers: (@Sendable (String?) async throws -> Headers)?
    let placement: CommonParameterPlacement

    /// `nil` when the configuration has no common values: the stage is left out.
    init?(common: APIClient.Configuration.CommonValues) {
        guard common.parameters != nil || common.headers != nil else { return nil }
        parameters = common.parameters
        headers = common.headers
        placement = common.placement
    }

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
                context.fields.commonParameterNames.formUnion(common.keys.filter { request.parameters[$0] == nil })
                request.parameters.merge(common) { own, _ in own }
            }
        }
        if let headers {
            request.headers = try await headers(request.tag).merging(request.headers)
        }
        return try await next(request, context: context)
    }
}
