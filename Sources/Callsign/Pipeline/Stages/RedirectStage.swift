import Foundation
import HTTPTypes

/// Follows redirects under a ``RedirectPolicy`` (``MiddlewareStage/redirects``), the same on
/// every transport.
struct RedirectStage: Middleware {
    let policy: RedirectPolicy

    /// Headers that describe a body, dropped when a redirect turns the request into a GET.
    static let bodyHeaders = ["Content-Type", "Content-Length", "Content-Encoding", "Content-Language", "Content-Location", "Transfer-Encoding", "Digest", "Content-Digest"]
    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        // A replayed offline request is delivered only by its own URL's answer.
        guard policy.maximumHops > 0, !context.fields.isReplay else { return try await next(request) }
        var current = request
        // Built at the first redirect: most responses are not one.
        var visited: Set<String> = []
        var hops = 0
        while true {
            let response = try await next(current)
            let code = response.status.code
            guard [301, 302, 303, 307, 308].contains(code), let location = response.headers[.location],
                let from = URL(string: current.path)
            else {
                guard hops > 0 else { return response }
                var reached = response
                reached.redirects = hops
                return reached
            }
            guard let target = URL(string: location, relativeTo: from)?.absoluteURL,
                let scheme = target.scheme?.lowercased(), URLScheme.isSupported(scheme), target.host != nil,
                // A socket path is this machine's: only a server on a socket may send there.
                !URLScheme.isUnixSocket(scheme) || URLScheme.isUnixSocket(from.scheme)
            else {
                throw APIError(.redirect, localized: "the server redirected to \"\(location)\", which is not an http(s) URL", response: response)
            }
            if hops == 0 { visited.insert(Self.key(current)) }
            hops += 1
            guard hops <= policy.maximumHops else {
                throw APIError(.redirect, localized: "more than \(policy.maximumHops) redirects", response: response)
            }
            if from.scheme?.lowercased() == "https" && scheme == "http" && !policy.allowsHTTPSDowngrade {
                throw APIError(.redirect, localized: "the server redirected from https to http; refused", response: response)
            }

            var hop = current
            hop.path = Self.literalPath(target)
            hop.baseURL = nil
            let changesToGet = code == 303 ? current.method != .head : (code == 301 || code == 302) && current.method == .post
            if changesToGet {
                hop.method = .get
                hop.body = nil
                hop.parameters = [:]
                for name in Self.bodyHeaders { hop.headers.remove(name) }
            } else if code == 307 || code == 308, let body = hop.body, !body.content.isReplayable {
                throw APIError(.redirect, localized: "a \(code) redirect needs the body again, but it was a one-shot stream", response: response)
            }
            // The query of the first URL was built from the parameters; the new URL has its own.
            hop.query = [:]
            if hop.method == .get || hop.method == .head || hop.method == .delete { hop.parameters = [:] }
            if Origin(target) != Origin(from) {
                // From here on the request has left its origin: only the allowlist goes on (the
                // transport-time merge of the configuration's headers applies it too).
                hop.credentialsStripped = true
                hop.headers = policy.crossOriginHeaders(hop.headers)
                for name in context.fields.commonParameterNames { hop.parameters[name] = nil }
            }
            let key = Self.key(hop)
            guard visited.insert(key).inserted else {
                throw APIError(.redirect, localized: "the redirects loop back to \(Redaction.default.redact(url: hop.path))", response: response)
            }
            current = hop
        }
    }

    private static func key(_ request: Request) -> String { "\(request.method.rawValue) \(request.path)" }

    /// The target as a path Callsign's URL rules take literally: braces cannot start a template.
    static func literalPath(_ url: URL) -> String { literalPath(url.absoluteString) }

    /// URL text as a path Callsign's URL rules take literally: braces cannot start a template.
    static func literalPath(_ text: String) -> String {
        text.replacingOccurrences(of: "{", with: "%7B").replacingOccurrences(of: "}", with: "%7D")
    }
}
