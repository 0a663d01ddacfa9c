/// Credentials (``MiddlewareStage/authentication``): asks ``CredentialRule`` whether a request
/// gets them — a check no scheme can skip, made here before any scheme sees the request — then
/// lets the ``AuthenticationScheme`` add them, and sends the request once more when the scheme
/// reauthorizes it after the answer (a refreshed token after a 401).
struct AuthenticationStage: Middleware {
    let authentication: Authentication
    let gate: CredentialRule.Gate

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard gate.admits(request, context: context) else { return try await next(request) }

        let withExtras = addingExtras(to: request)
        // A call that brings its own Authorization brought its own credentials: the scheme
        // leaves it alone (no token is fetched, nothing is refreshed).
        guard let scheme = authentication.scheme, !callOwns("Authorization", in: request) else { return try await next(withExtras) }
        var authorized = try await scheme.authorize(withExtras, context: context)
        // Any other header the call set itself wins over the scheme's too (RFAPI's context
        // headers did), and then the scheme leaves the call alone as well.
        guard !keepCallsOwnHeaders(of: request, in: &authorized) else { return try await next(authorized) }
        var context = context
        context.fields.authorizingScheme = scheme
        let response = try await next(authorized, context: context)
        guard let again = try await scheme.reauthorize(authorized, after: response, context: context) else { return response }
        return try await next(again, context: context)
    }

    /// Whether the request has this header from the call itself (not from its definition).
    private func callOwns(_ name: String, in request: Request) -> Bool {
        request.headers.contains(name) && !request.definitionHeaderNames.contains(name.lowercased())
    }

    /// Restores every header of the call's own that the scheme replaced; `true` when there was one.
    private func keepCallsOwnHeaders(of request: Request, in authorized: inout Request) -> Bool {
        var replaced = false
        var checked: Set<String> = []
        for field in request.headers.fields where checked.insert(field.name.lowercased()).inserted && callOwns(field.name, in: request) {
            let own = request.headers.values(for: field.name)
            guard authorized.headers.values(for: field.name) != own else { continue }
            authorized.headers.remove(field.name)
            for value in own { authorized.headers.add(field.name, value) }
            replaced = true
        }
        return replaced
    }

    /// The request with RFAPI's authorization headers and parameters added; a header the call
    /// set itself wins.
    private func addingExtras(to request: Request) -> Request {
        guard !authentication.headers.isEmpty || !authentication.parameters.isEmpty else { return request }
        var request = request
        request.headers = request.headers.merging(Headers(authentication.headers.fields.filter { !callOwns($0.name, in: request) }))
        switch authentication.parameterPlacement {
        case .query:
            for (key, value) in authentication.parameters {
                request.query[key] = value
                request.parameters.removeValue(forKey: key)
            }
        case .parameters:
            request.parameters.merge(authentication.parameters) { _, auth in auth }
        }
        return request
    }
}
