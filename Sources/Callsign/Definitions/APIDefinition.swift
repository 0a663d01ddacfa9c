public import Foundation
public import HTTPTypes

/// The rules for one API: where it lives, how to call it and what it answers (RFAPI's define).
///
/// Every field is optional; a named definition is merged over the `DEFAULT` definition field by
/// field when it is used, so most definitions only say what differs:
///
/// ```swift
/// let defaults = APIDefinition(baseURL: URL(string: "https://example.com/"), pathPrefix: "api/v2/", method: .get)
/// let topics = APIDefinition(name: "TopicListRecommended", path: "topics/recommended", responseType: .objects)
/// let definitions = try APIDefinitions(default: defaults, [topics])
/// ```
///
/// **URL rules** (as RFAPI's): a `path` with a scheme (`https://…`) is used as it is; otherwise
/// `pathPrefix + path` is appended to the base URL — the definition's, else the default's, else
/// the client's. A base URL with a path must end in `/` (`https://example.com/base/`); one that
/// does not is refused when the definitions load, never turned into a different URL.
public struct APIDefinition: Sendable, Hashable {
    /// The API's name, used to call it. Default `nil`.
    public var name: String?
    /// The base URL. Default `nil` (inherit).
    public var baseURL: URL?
    /// A prefix put before `path` when it is relative (`api/v2/`). Default `nil`.
    public var pathPrefix: String?
    /// The path, possibly a template (`user/{user_id}/profile`), or an absolute URL. Default `nil`.
    public var path: String?
    /// The HTTP method. Default `nil` (inherit; GET if nobody says).
    public var method: HTTPRequest.Method?
    /// Header fields. A definition's own set replaces the default's whole (RFAPI's rule).
    public var headers: Headers?
    /// Parameters sent with every call; the call's parameters win per name.
    public var parameters: Parameters?
    /// Whether calls carry the client's credentials (RFAPI's "Authorization"). Default `nil` (inherit; false).
    public var needsAuthorization: Bool?
    /// How parameters are encoded into the body (RFAPI's "Serializer"). Default `nil` (inherit; JSON).
    public var contentType: ContentType?
    /// What the body holds (RFAPI's "Response Type"). Default `nil` (inherit; raw).
    public var responseType: ResponseType?
    /// The name of the type the body decodes into (RFAPI's "Response Class"), for
    /// documentation and error messages.
    public var responseClass: String?
    /// The types a failed call's body decodes into, by status (`Error Class` / `errorClass`: one
    /// name, or a dictionary of statuses and ranges to names; see ``ErrorClasses``). Default `nil`
    /// (inherit; none).
    public var errorClasses: ErrorClasses?
    /// Whether an empty or `null` body is acceptable (RFAPI's "Response Accept Null").
    public var acceptsNullResponse: Bool?
    /// How the pages of this API are walked (`pagination` in a file): ``APIClient/pages(_:parameters:pagination:)``
    /// and ``APIClient/items(_:parameters:as:at:pagination:)`` use it when the call gives no
    /// pagination of its own. Default `nil` (inherit; ``Pagination/link``).
    ///
    /// ```swift
    /// var users = APIDefinition(name: "ListUsers", path: "users")
    /// users.pagination = .cursor(at: "meta.next_cursor", parameter: "cursor")
    /// ```
    public var pagination: Pagination?
    /// The accepted statuses. Default `nil` (inherit; 200–299).
    public var acceptedStatusCodes: StatusCodes?
    /// The time limit for one attempt. Default `nil` (inherit; the client's).
    public var timeout: Duration?
    /// The backend subsystem tag (for common parameters and headers). Default `nil`.
    public var tag: String?
    /// Whether the body is an adaptive envelope (`{"code", "msg", "data"}`). Default `nil` (inherit).
    public var usesEnvelope: Bool?
    /// Free-form data for the app (RFAPI's "User Info").
    public var userInfo: [String: JSONValue]?
    /// A comment (RFAPI's "Notes").
    public var notes: String?
    /// Where credentials come from (only in the `DEFAULT` definition); see ``AuthenticationSource``.
    public var authentication: AuthenticationSource?
    /// How failed attempts are retried. Default `nil` (inherit; the client's).
    public var retry: RetryPolicy?
    /// One time limit for the whole call. Default `nil` (inherit; the client's).
    public var deadline: Duration?
    /// Whether a slow call sends a hedge (`hedging:` in a file: seconds, `false`, or a
    /// dictionary; see ``HedgePolicy``). Default `nil` (inherit; the client's, off unless set).
    ///
    /// ```swift
    /// var search = APIDefinition(name: "Search", path: "search")
    /// search.hedging = .observedPercentile(95, minimum: .milliseconds(50), fallback: .milliseconds(300))
    /// ```
    public var hedging: HedgePolicy?
    /// A file answering this API in mock mode (see ``Mocks/init(definitions:directory:defaultDelay:realRequests:)``).
    public var mock: String?
    /// How calls use the client's HTTP cache (`cache:` in a file). Default `nil` (inherit; ``CachePolicy/useProtocol``).
    public var cachePolicy: CachePolicy?
    /// Whether calls are queued offline when the server cannot be reached (`storePolicy:` in a
    /// file). Default `nil` (inherit; ``StorePolicy/none``).
    public var storePolicy: StorePolicy?
    /// Whether a stored response is served, however stale, when the server cannot be reached
    /// (RFAPI's `Offline Policy` 1, or `servesStaleWhenOffline:` in a file). Default `nil`
    /// (inherit; the cache's ``HTTPCache/servesStaleWhenOffline``).
    public var servesStaleWhenOffline: Bool?
    /// What the body is written in (RFAPI's `Response Serializer`, or `responseFormat:` in a
    /// file). Default `nil` (inherit; ``ResponseFormat/json``).
    public var responseFormat: ResponseFormat?
    /// RFAPI values that have no meaning here, kept as written, each with a load warning: an
    /// `Expire` beside a cache policy that never expires anything (`Cache Policy` 2 or 5),
    /// `Cache Policy` 3 without an `Expire`, or a `Response Serializer` for a format Callsign
    /// does not decode (`AFXMLParserResponseSerializer`, `AFImageResponseSerializer`, …).
    public var recognizedButUnused: [String: JSONValue]?

    /// Creates a definition; every field is optional.
    public init(
        name: String? = nil, baseURL: URL? = nil, pathPrefix: String? = nil, path: String? = nil,
        method: HTTPRequest.Method? = nil, headers: Headers? = nil, parameters: Parameters? = nil,
        needsAuthorization: Bool? = nil, contentType: ContentType? = nil, responseType: ResponseType? = nil,
        responseClass: String? = nil, acceptedStatusCodes: StatusCodes? = nil, timeout: Duration? = nil,
        tag: String? = nil, usesEnvelope: Bool? = nil, errorClasses: ErrorClasses? = nil
    ) {
        self.errorClasses = errorClasses
        self.name = name
        self.baseURL = baseURL
        self.pathPrefix = pathPrefix
        self.path = path
        self.method = method
        self.headers = headers
        self.parameters = parameters
        self.needsAuthorization = needsAuthorization
        self.contentType = contentType
        self.responseType = responseType
        self.responseClass = responseClass
        self.acceptedStatusCodes = acceptedStatusCodes
        self.timeout = timeout
        self.tag = tag
        self.usesEnvelope = usesEnvelope
    }

    /// This definition with every unset field taken from `defaults`.
    ///
    /// Headers and user info are taken whole (the definition's own set wins, as in RFAPI);
    /// parameters merge per name, the definition's winning.
    public func merged(over defaults: APIDefinition) -> APIDefinition {
        var result = self
        result.baseURL = baseURL ?? defaults.baseURL
        result.pathPrefix = pathPrefix ?? defaults.pathPrefix
        result.path = path ?? defaults.path
        result.method = method ?? defaults.method
        result.headers = headers ?? defaults.headers
        if let own = parameters, let inherited = defaults.parameters {
            result.parameters = inherited.merging(own) { _, mine in mine }
        } else {
            result.parameters = parameters ?? defaults.parameters
        }
        result.needsAuthorization = needsAuthorization ?? defaults.needsAuthorization
        result.contentType = contentType ?? defaults.contentType
        result.responseType = responseType ?? defaults.responseType
        result.responseClass = responseClass ?? defaults.responseClass
        result.errorClasses = errorClasses ?? defaults.errorClasses
        result.acceptsNullResponse = acceptsNullResponse ?? defaults.acceptsNullResponse
        result.pagination = pagination ?? defaults.pagination
        result.acceptedStatusCodes = acceptedStatusCodes ?? defaults.acceptedStatusCodes
        result.timeout = timeout ?? defaults.timeout
        result.tag = tag ?? defaults.tag
        result.usesEnvelope = usesEnvelope ?? defaults.usesEnvelope
        result.userInfo = userInfo ?? defaults.userInfo
        result.retry = retry ?? defaults.retry
        result.deadline = deadline ?? defaults.deadline
        result.hedging = hedging ?? defaults.hedging
        result.mock = mock ?? defaults.mock
        result.cachePolicy = cachePolicy ?? defaults.cachePolicy
        result.storePolicy = storePolicy ?? defaults.storePolicy
        result.servesStaleWhenOffline = servesStaleWhenOffline ?? defaults.servesStaleWhenOffline
        result.responseFormat = responseFormat ?? defaults.responseFormat
        return result
    }

    /// Builds the request this (merged) definition describes for one call.
    ///
    /// The call's parameters win over the definition's; the call's headers win per name over
    /// the definition's, and over the authentication's. The path template is filled when the
    /// request is sent.
    public func request(parameters: Parameters = [:], headers: Headers = [:]) -> Request {
        var request = Request(
            method: method ?? .get,
            path: (path.map { Self.hasScheme($0) } ?? false) ? (path ?? "") : (pathPrefix ?? "") + (path ?? ""),
            baseURL: baseURL,
            parameters: (self.parameters ?? [:]).merging(parameters) { _, call in call },
            headers: (self.headers ?? [:]).merging(headers),
            contentType: contentType,
            timeout: timeout,
            tag: tag)
        request.apiName = name
        if let own = self.headers, !own.isEmpty {
            request.definitionHeaderNames = Set(own.fields.map { $0.name.lowercased() }).subtracting(headers.fields.map { $0.name.lowercased() })
        }
        request.acceptedStatusCodes = acceptedStatusCodes
        request.needsAuthorization = needsAuthorization ?? false
        request.usesEnvelope = usesEnvelope
        request.responseType = responseType
        request.responseClass = responseClass
        request.errorClasses = errorClasses
        request.acceptsNullResponse = acceptsNullResponse ?? false
        request.pagination = pagination
        request.retry = retry
        request.deadline = deadline
        request.hedging = hedging
        request.cachePolicy = cachePolicy
        request.storePolicy = storePolicy
        request.servesStaleWhenOffline = servesStaleWhenOffline
        request.responseFormat = responseFormat
        return request
    }

    /// Whether a path is an absolute URL (has a scheme such as `https:`).
    static func hasScheme(_ path: String) -> Bool {
        // RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then "://" here.
        // Byte by byte: this runs for every call, and most paths fail at their first byte.
        var bytes = path.utf8.makeIterator()
        guard let first = bytes.next(), isLetter(first) else { return false }
        while let byte = bytes.next() {
            if byte == UInt8(ascii: ":") {
                return bytes.next() == UInt8(ascii: "/") && bytes.next() == UInt8(ascii: "/")
            }
            guard isLetter(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "+")
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            else { return false }
        }
        return false
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
    }
}

extension APIDefinition {
    /// The URL this (merged) definition calls, with placeholders left in, for listings and
    /// messages: `https://example.com/api/v2/user/{user_id}/profile`. `nil` when there is no base
    /// URL for a relative path.
    ///
    /// - Parameter fallbackBase: the client's base URL, used when the definition has none.
    public func urlTemplate(fallbackBase: URL? = nil) -> String? {
        let relative = (pathPrefix ?? "") + (path ?? "")
        if let path, Self.hasScheme(path) { return path }
        guard let base = baseURL ?? fallbackBase else { return nil }
        let trimmed = relative.hasPrefix("/") ? String(relative.dropFirst()) : relative
        let baseText = base.absoluteString
        return (baseText.hasSuffix("/") ? baseText : baseText + "/") + trimmed
    }
}
