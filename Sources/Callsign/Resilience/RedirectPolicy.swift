import Foundation
import HTTPTypes

/// How Callsign follows redirects — the same rules on every transport.
///
/// - At most ``maximumHops`` hops (default 5); a cycle or one hop too many is an ``APIError``
///   with code ``APIError/Code/redirect``.
/// - 303, and 301/302 after POST, become GET without a body or body headers; 307/308 keep the
///   method and the body, if the body can be sent again.
/// - On a hop to another origin (scheme, host or port), only an allowlist of headers goes on —
///   `Accept`, `Accept-Language`, `Accept-Encoding`, `User-Agent`, `traceparent`, `tracestate`,
///   `Content-Type` when the body is kept, and the names in ``forwardedHeaders`` — and common
///   parameters leave a re-sent body. Credentials, API keys from definitions, the
///   configuration's and common headers stay with their origin, also on later hops.
/// - An https → http hop is refused unless ``allowsHTTPSDowngrade``.
///
/// ```swift
/// configuration.redirects = .none                         // hand every 3xx back to the caller
/// configuration.redirects = RedirectPolicy(maximumHops: 10)
/// ```
public struct RedirectPolicy: Sendable, Hashable {
    /// The most hops followed for one call; 0 follows none.
    public var maximumHops: Int
    /// Whether an https → http hop is followed. Default `false`.
    public var allowsHTTPSDowngrade: Bool
    /// Header names (case-insensitive) you mark as safe to send to another origin, besides the
    /// built-in allowlist. Default: none.
    ///
    /// ```swift
    /// configuration.redirects.forwardedHeaders = ["X-Request-ID"]
    /// ```
    public var forwardedHeaders: Set<String>

    /// The headers that go on to another origin whatever the policy: they describe what the
    /// client accepts and trace context, never who it is.
    static let crossOriginAllowlist: Set<String> = [
        "accept", "accept-language", "accept-encoding", "user-agent", "traceparent", "tracestate", "content-type",
    ]

    /// Creates a policy.
    public init(maximumHops: Int = 5, allowsHTTPSDowngrade: Bool = false, forwardedHeaders: Set<String> = []) {
        self.maximumHops = max(0, maximumHops)
        self.allowsHTTPSDowngrade = allowsHTTPSDowngrade
        self.forwardedHeaders = forwardedHeaders
    }

    /// `headers` without everything that must not reach another origin.
    func crossOriginHeaders(_ headers: Headers) -> Headers {
        let forwarded = Set(forwardedHeaders.map { $0.lowercased() })
        return Headers(headers.fields.filter { field in
            let name = field.name.lowercased()
            return Self.crossOriginAllowlist.contains(name) || forwarded.contains(name)
        })
    }

    /// Five hops, no downgrade.
    public static let `default` = RedirectPolicy()
    /// Follow nothing: 3xx responses are returned as they are.
    public static let none = RedirectPolicy(maximumHops: 0)
}
