import Foundation

/// Adds credentials to requests that need them and go to a trusted origin; with tokens,
/// refreshes once on 401 and resends.
struct AuthenticationMiddleware: Middleware {
    let authentication: Authentication
    let trustedOrigins: Set<Origin>

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard request.needsAuthorization, !request.credentialsStripped, let origin = Origin(request.path),
            trustedOrigins.contains(origin) || origin == context.call.origin.vouchedOrigin
        else { return try await next(request) }

        // A call that brings its own Authorization keeps it: nothing to add, nothing to refresh.
        if callOwns("Authorization", in: request), authentication.credential.setsAuthorization {
            return try await next(authorize(request, with: nil))
        }
        switch authentication.credential {
        case .none:
            return try await next(authorize(request, with: nil))
        case .basic(let username, let password):
            let encoded = Data("\(username):\(password)".utf8).base64EncodedString()
            return try await next(authorize(request, with: "Basic \(encoded)"))
        case .bearer(let token):
            return try await next(authorize(request, with: "Bearer \(token)"))
        case .authorization(let value):
            return try await next(authorize(request, with: value))
        case .tokens(let store):
            let token = try await store.token()
            let response = try await next(authorize(request, with: token.authorizationValue))
            guard response.status.code == 401 else { return response }
            let fresh = try await store.refresh(rejected: token)
            return try await next(authorize(request, with: fresh.authorizationValue))
        }
    }

    /// Whether the request has this header from the call itself (not from its definition).
    private func callOwns(_ name: String, in request: Request) -> Bool {
        request.headers.contains(name) && !request.definitionHeaderNames.contains(name.lowercased())
    }

    /// The request with the credentials added; a header the call set itself wins.
    private func authorize(_ request: Request, with authorization: String?) -> Request {
        var request = request
        if let authorization, !callOwns("Authorization", in: request) { request.headers["Authorization"] = authorization }
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
