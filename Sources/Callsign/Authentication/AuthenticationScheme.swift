import Foundation

/// A way of proving who the client is: the seam every built-in credential uses —
/// ``BasicAuthentication``, ``BearerAuthentication``, ``APIKeyAuthentication``,
/// ``TokenAuthentication`` — and yours can too.
///
/// The ``MiddlewareStage/authentication`` stage decides *whether* a request gets credentials:
/// only when it needs authorization (``CallOptions/needsAuthorization``: `nil`, the default
/// outside definitions, means yes for the client's own origin) and goes to one of the client's
/// trusted origins. No scheme can skip that check. The scheme decides *how*:
///
/// 1. ``authorize(_:context:)`` adds credentials to the request value (headers, parameters);
/// 2. ``sign(_:context:)`` may sign the request's exact bytes at the ``WireStage/signing``
///    stage, just before they are sent;
/// 3. ``reauthorize(_:after:context:)`` sees the answer and may authorize the request anew to
///    send it once more (a refreshed token after a 401);
/// 4. ``secretNames`` and ``secretValues`` name what must never show up in logs, errors, HAR
///    files and the cache's keys.
///
/// A request signed with an HMAC of its method, path, date and body digest:
///
/// ```swift
/// struct HMACSigning: AuthenticationScheme {
///     let keyID: String
///     let key: SymmetricKey
///
///     func sign(_ request: WireRequest, context: MiddlewareContext) async throws -> WireRequest {
///         var request = request
///         let date = Date().formatted(.iso8601)
///         // A body in memory is hashed; a streamed one would be read twice, so it is marked unsigned.
///         let digest = request.body.map { body in
///             body.inMemoryData.map { Data(SHA256.hash(data: $0)).base64EncodedString() } ?? "UNSIGNED-PAYLOAD"
///         } ?? Data(SHA256.hash(data: Data())).base64EncodedString()
///         let text = [request.head.method.rawValue, request.head.path ?? "/", date, digest].joined(separator: "\n")
///         let signature = Data(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)).base64EncodedString()
///         request.head.headerFields[HTTPField.Name("X-Date")!] = date
///         request.head.headerFields[HTTPField.Name("Content-Digest")!] = "sha-256=:\(digest):"
///         request.head.headerFields[.authorization] = "HMAC keyId=\"\(keyID)\", signature=\"\(signature)\""
///         return request
///     }
/// }
/// configuration.authentication = Authentication(HMACSigning(keyID: "app-1", key: key))
/// ```
///
/// Every requirement has a default that does nothing, so a scheme implements only what it needs.
public protocol AuthenticationScheme: Sendable {
    /// The request with credentials added. Called once per attempt (and per redirect hop) for
    /// requests the stage cleared. A header the call set itself wins over the one returned
    /// here, and the scheme is then left out of that call. Default: the request unchanged.
    func authorize(_ request: Request, context: MiddlewareContext) async throws -> Request

    /// The request's wire form, signed: what it returns is sent byte for byte. Default: unchanged.
    func sign(_ request: WireRequest, context: MiddlewareContext) async throws -> WireRequest

    /// Called with the answer to a request this scheme authorized: return the request authorized
    /// anew to send it once more, or `nil` to keep the answer. Default `nil`.
    func reauthorize(_ request: Request, after response: Response, context: MiddlewareContext) async throws -> Request?

    /// Header, query parameter and body field names (any case) whose values this scheme makes
    /// secret, beyond ``Redaction``'s name rule: masked everywhere, and part of the HTTP cache's
    /// private partition. Default none.
    var secretNames: Set<String> { get }

    /// Secret values the scheme knows ahead of time (a password, a key): masked wherever they
    /// show up again, in logs, error messages and HAR files. Default none.
    var secretValues: [String] { get }

    /// Forgets any credential the scheme keeps (``TokenAuthentication`` drops its token).
    /// Default: nothing to forget.
    func signOut() async
}

extension AuthenticationScheme {
    public func authorize(_ request: Request, context: MiddlewareContext) async throws -> Request { request }
    public func sign(_ request: WireRequest, context: MiddlewareContext) async throws -> WireRequest { request }
    public func reauthorize(_ request: Request, after response: Response, context: MiddlewareContext) async throws -> Request? { nil }
    public var secretNames: Set<String> { [] }
    public var secretValues: [String] { [] }
    public func signOut() async {}
}

/// HTTP basic authentication (RFC 7617): `Authorization: Basic base64(user:password)`.
///
/// ```swift
/// configuration.authentication = .basic(username: "ape", password: "group")
/// ```
public struct BasicAuthentication: AuthenticationScheme {
    /// The user name.
    public var username: String
    /// The password. Secret.
    public var password: String

    /// Creates the scheme.
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    public func authorize(_ request: Request, context: MiddlewareContext) async throws -> Request {
        var request = request
        request.headers["Authorization"] = "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
        return request
    }

    public var secretValues: [String] { [password, Data("\(username):\(password)".utf8).base64EncodedString()] }
}

/// A bearer token (RFC 6750): `Authorization: Bearer <token>`.
///
/// ```swift
/// configuration.authentication = .bearer(token)
/// ```
public struct BearerAuthentication: AuthenticationScheme {
    /// The token. Secret.
    public var token: String

    /// Creates the scheme.
    public init(token: String) { self.token = token }

    public func authorize(_ request: Request, context: MiddlewareContext) async throws -> Request {
        var request = request
        request.headers["Authorization"] = "Bearer \(token)"
        return request
    }

    public var secretValues: [String] { [token] }
}

/// A key sent in a header, a query parameter or a cookie — an OpenAPI `apiKey` security scheme,
/// or any fixed `Authorization` value (``Authentication/authorization(_:)``).
///
/// ```swift
/// configuration.authentication = .apiKey(key, name: "X-API-Key", in: .header)
/// configuration.authentication = .apiKey(key, name: "api_key", in: .query)
/// ```
public struct APIKeyAuthentication: AuthenticationScheme {
    /// Where the key goes.
    public enum Location: Sendable, Hashable {
        /// A header of that name.
        case header
        /// A query parameter of that name.
        case query
        /// A cookie of that name, added to the request's `Cookie` header (the value
        /// percent-encoded where RFC 6265 needs it, so it cannot add a second cookie).
        case cookie
    }

    /// The header, parameter or cookie name.
    public var name: String
    /// Where it goes.
    public var location: Location
    /// The key. Secret.
    public var value: String

    /// Creates the scheme.
    public init(name: String, location: Location, value: String) {
        self.name = name
        self.location = location
        self.value = value
    }

    public func authorize(_ request: Request, context: MiddlewareContext) async throws -> Request {
        var request = request
        switch location {
        case .header:
            request.headers[name] = value
        case .query:
            request.query[name] = .string(value)
            request.parameters.removeValue(forKey: name)
        case .cookie:
            let pair = try CookiePair.encode(name: name, value: value)
            request.headers["Cookie"] = request.headers["Cookie"].map { "\($0); \(pair)" } ?? pair
        }
        return request
    }

    public var secretNames: Set<String> { location == .cookie ? [] : [name.lowercased()] }
    public var secretValues: [String] { [value] }
}
