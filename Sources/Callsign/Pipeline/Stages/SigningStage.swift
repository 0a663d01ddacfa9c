/// Signatures over the exact bytes sent (``WireStage/signing``): the scheme that authorized the
/// call (``MiddlewareContext/Fields/authorizingScheme``, set only after the origin check) signs the wire
/// form. In the chain only when the client has an authentication scheme.
struct SigningStage: WireMiddleware {
    func intercept(_ request: WireRequest, context: MiddlewareContext, next: WireNext) async throws -> TransportResponse {
        guard let scheme = context.fields.authorizingScheme else { return try await next(request) }
        return try await next(try await scheme.sign(request, context: context))
    }
}
