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
@dynamicMemberLookup
public struct APIDefinition: HoldsCallOptions, Sendable, Hashable {
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
    /// The options that shape each call of this API — content type, accepted statuses, time
    /// limits, retry, hedging, cache, offline queue, credentials, how the answer is read (see
    /// ``CallOptions``). Read and change each one on the definition itself:
    /// `definition.retry = .none`. Every one is `nil` (inherit) unless set.
    public var options = CallOptions()
    /// Free-form data for the app (RFAPI's "User Info").
    public var userInfo: [String: JSONValue]?
    /// A comment (RFAPI's "Notes").
    public var notes: String?
    /// Where credentials come from (only in the `DEFAULT` definition); see ``AuthenticationSource``.
    public var authentication: AuthenticationSource?
    /// A file answering this API in mock mode (see ``Mocks/init(definitions:directory:defaultDelay:realRequests:)``).
    public var mock: String?
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
        self.name = name
        self.baseURL = baseURL
        self.pathPrefix = pathPrefix
        self.path = path
        self.method = method
        self.headers = headers
        self.parameters = parameters
        options.errorClasses = errorClasses
        options.needsAuthorization = needsAuthorization
        options.contentType = contentType
        options.responseType = responseType
        options.responseClass = responseClass
        options.acceptedStatusCodes = acceptedStatusCodes
        options.timeout = timeout
        options.tag = tag
        options.usesEnvelope = usesEnvelope
    }

    /// This definition with every unset field taken from `defaults`.
    ///
    /// Headers and user info are taken whole (the definition's own set wins, as in RFAPI);
    /// parameters merge per name, the definition's winning; the options merge by
    /// ``CallOptions/merged(over:)``.
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
        result.options = options.merged(over: defaults.options)
        result.userInfo = userInfo ?? defaults.userInfo
        result.mock = mock ?? defaults.mock
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
            headers: (self.headers ?? [:]).merging(headers))
        request.options = options
        // A definition that says nothing asks for no credentials (``CredentialRule``).
        request.needsAuthorization = options.needsAuthorization ?? CredentialRule.defaultNeedsAuthorization(for: .definition)
        request.apiName = name
        if let own = self.headers, !own.isEmpty {
            request.definitionHeaderNames = Set(own.fields.map { $0.name.lowercased() }).subtracting(headers.fields.map { $0.name.lowercased() })
        }
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
