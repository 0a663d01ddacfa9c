public import Foundation

/// Credentials for requests that need authorization, added only when the request goes to one of
/// the client's own origins: an ``AuthenticationScheme`` (basic, bearer, an API key, refreshed
/// tokens, or your own), plus RFAPI's extra authorization headers and parameters.
///
/// Which requests need authorization: a call by name when its definition says
/// `needsAuthorization: true` (the default is `false`); a call no definition built (the
/// builder, ``Endpoint`` values) when it goes to the origin of
/// ``APIClient/Configuration/baseURL``, unless it opts out with `.authorized(false)` — and to
/// any other origin only when it sets ``CallOptions/needsAuthorization`` to `true`.
/// ``CredentialRule`` holds this rule and its table of defaults, one per way of calling.
///
/// ```swift
/// configuration.authentication = .basic(username: "ape", password: "group")
/// configuration.authentication = .bearer("eyJhbGciOi…")
/// configuration.authentication = .authorization("Token token=ASDF")          // any Authorization value
/// configuration.authentication = .apiKey(key, name: "X-API-Key", in: .header)
/// configuration.authentication = .tokens(MyTokenProvider()) { error in await showLogin() }
/// configuration.authentication = Authentication(HMACSigning(keyID: "app-1", key: key))   // your own scheme
///
/// // RFAPI's authorization headers and parameters, alone or with any of the above:
/// var auth = Authentication.bearer(token)
/// auth.headers["X-Device"] = deviceID
/// auth.parameters["api_key"] = "…"
/// ```
///
/// Credentials go only to the client's trusted origins, an explicit set: the origin of
/// ``APIClient/Configuration/baseURL``, those of the base URLs and absolute paths in trusted
/// definitions (built in code or loaded from a local file — definitions fetched from a server
/// only with `fetch(from:using:trustingOrigins: true)`), an ``Endpoint``'s own base URL, and
/// ``additionalOrigins``. A request to any other origin never receives credentials, and neither
/// does a request that was redirected to another origin. The check lives in the
/// ``MiddlewareStage/authentication`` stage, so no scheme can skip it.
public struct Authentication: Sendable {
    /// How the client proves who it is; `nil` for RFAPI's headers and parameters alone.
    public var scheme: (any AuthenticationScheme)?
    /// Extra headers added to authorized requests (RFAPI's `authorizationHeader`). Default none.
    public var headers: Headers
    /// Parameters added to authorized requests (RFAPI's `authorizationParameters`); they win
    /// over a call's parameter of the same name. Default none.
    public var parameters: Parameters
    /// Where ``parameters`` go. Default ``CommonParameterPlacement/parameters``.
    public var parameterPlacement: CommonParameterPlacement
    /// More origins that may receive credentials, besides the client's base URLs. Default none.
    public var additionalOrigins: [URL]

    /// Authentication by `scheme`, with no extra headers or parameters.
    ///
    /// ```swift
    /// configuration.authentication = Authentication(HMACSigning(keyID: "app-1", key: key))
    /// ```
    public init(_ scheme: (any AuthenticationScheme)?) {
        self.scheme = scheme
        headers = [:]
        parameters = [:]
        parameterPlacement = .parameters
        additionalOrigins = []
    }

    /// HTTP basic authentication (RFC 7617).
    public static func basic(username: String, password: String) -> Authentication {
        Authentication(BasicAuthentication(username: username, password: password))
    }

    /// A bearer token (RFC 6750).
    public static func bearer(_ token: String) -> Authentication { Authentication(BearerAuthentication(token: token)) }

    /// Any `Authorization` header value, such as `Token token=…`.
    public static func authorization(_ value: String) -> Authentication {
        Authentication(APIKeyAuthentication(name: "Authorization", location: .header, value: value))
    }

    /// A key in a header, a query parameter or a cookie (an OpenAPI `apiKey` scheme).
    ///
    /// ```swift
    /// configuration.authentication = .apiKey(key, name: "X-API-Key", in: .header)
    /// ```
    public static func apiKey(_ key: String, name: String, in location: APIKeyAuthentication.Location) -> Authentication {
        Authentication(APIKeyAuthentication(name: name, location: location, value: key))
    }

    /// Only headers and parameters, without an `Authorization` header (RFAPI's style).
    public static func headers(_ headers: Headers, parameters: Parameters = [:]) -> Authentication {
        var authentication = Authentication(nil)
        authentication.headers = headers
        authentication.parameters = parameters
        return authentication
    }

    /// Tokens from a ``TokenProvider``: fetched when first needed, refreshed before they expire
    /// and after a 401 — exactly one refresh at a time, however many requests need it. A request
    /// rejected with a stale token is sent once more with the new one. When a refresh fails,
    /// every waiting request fails with the same ``APIError`` (``APIError/Code/authentication``)
    /// and `onSessionExpired` runs once.
    ///
    /// Copies of this value share the same tokens, so clients configured with it refresh together.
    ///
    /// - Parameters:
    ///   - provider: where tokens come from.
    ///   - refreshBefore: how long before its expiry a token is refreshed. Default 30 seconds.
    ///   - onSessionExpired: called once per failed refresh, for example to show a login screen.
    public static func tokens(
        _ provider: some TokenProvider, refreshBefore: Duration = .seconds(30),
        onSessionExpired: (@Sendable (APIError) async -> Void)? = nil
    ) -> Authentication {
        Authentication(TokenAuthentication(provider, refreshBefore: refreshBefore, onSessionExpired: onSessionExpired))
    }

    /// Forgets the current credential (for example after logout); with tokens, the next request
    /// fetches a new one.
    public func signOut() async {
        await scheme?.signOut()
    }

    /// Every name whose value is secret because of this authentication: `Authorization`, the
    /// scheme's own, and the extra headers' and parameters' names (lowercased).
    var secretNames: Set<String> {
        var names: Set<String> = ["authorization"]
        names.formUnion(scheme?.secretNames.map { $0.lowercased() } ?? [])
        names.formUnion(headers.fields.map { $0.name.lowercased() })
        names.formUnion(parameters.keys.map { $0.lowercased() })
        return names
    }
}

