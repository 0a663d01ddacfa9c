import Foundation
import HTTPTypes

/// The ``MiddlewareStage/cookies`` stage: below the redirect policy, so each hop sends the
/// cookies of its own URL and stores what its answer sets; above the cache, so the cookies sent
/// are part of the cache's private partition.
struct CookieStage: Middleware {
    let jar: CookieJar

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard let url = request.url ?? URL(string: request.path), url.host != nil else { return try await next(request) }
        var request = request
        if let header = jar.cookieHeader(for: url) {
            // A Cookie the call set itself comes first: one field, as RFC 6265 §5.4 asks.
            let own = request.headers["Cookie"].map { $0 + "; " } ?? ""
            request.headers["Cookie"] = own + header
        }
        let response = try await next(request)
        // A stored answer's Set-Cookie was dropped by the cache: only fresh ones are stored.
        if response.source != .cache {
            jar.store(setCookie: response.headers[values: .setCookie], from: url)
        }
        return response
    }
}
