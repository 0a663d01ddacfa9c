public import Foundation
public import HTTPTypes

/// One HTTP request, as a value: what to send, where, and how to read the answer.
///
/// Requests are built for you by a definition (`client.call("Name")`), an ``Endpoint``, or the
/// fluent builder (`client.get("/v1/users")`); you can also make one directly:
///
/// ```swift
/// let request = Request.get("boards", parameters: ["type": 1])
/// let response = try await client.send(request)
/// ```
///
/// `path` may be a template (`user/{user_id}/profile`); each `{name}` is filled from
/// ``parameters`` (then ``query``) and that parameter is not sent again. Parameters go into the
/// query string for GET, HEAD and DELETE (or with ``ContentType/query``) and into the body
/// otherwise, encoded by ``contentType`` (JSON unless you say otherwise).
public struct Request: Sendable {
    // Every field lives in one copy-on-write box (see `CopyOnWrite`): a request is one pointer wide.
    struct Fields: Sendable {
        var method: HTTPRequest.Method
        var path: String
        var baseURL: URL? = nil
        var parameters: Parameters
        var query: Parameters
        var headers: Headers
        var body: RequestBody? = nil
        var contentType: ContentType? = nil
        var timeout: Duration? = nil
        var tag: String? = nil
        var identifier: String? = nil
        var group: String? = nil
        var apiName: String? = nil
        var acceptedStatusCodes: StatusCodes? = nil
        var needsAuthorization: Bool
        var usesEnvelope: Bool? = nil
        var responseType: ResponseType? = nil
        var acceptsNullResponse: Bool
        var retry: RetryPolicy? = nil
        var deadline: Duration? = nil
        var cachePolicy: CachePolicy? = nil
        var storePolicy: StorePolicy? = nil
        var loadMessage: String? = nil
        var middlewares: [any Middleware]
        var commonParameterPlacement: CommonParameterPlacement? = nil
        var url: URL? = nil
        var credentialsStripped: Bool = false
        var commonParameterNames: Set<String> = []
        var vouchedOrigin: Origin? = nil
        var deadlineInstant: ContinuousClock.Instant? = nil
        var endpoint: (any Endpoint)? = nil
        var downloadDestination: URL? = nil
        var streamsBody: Bool = false
        var resumesDownload: Bool = true
        var isReplay: Bool = false
        var resolvedTarget: RequestFactory.Target? = nil
    }

    private var storage: CopyOnWrite<Fields>

    /// The HTTP method.
    public var method: HTTPRequest.Method {
        get { storage.value.method }
        _modify { yield &storage.value.method }
    }
    /// A path relative to the base URL (may be a template), or an absolute `http(s)` URL.
    public var path: String {
        get { storage.value.path }
        _modify { yield &storage.value.path }
    }
    /// The base URL for a relative path; `nil` uses the client's configured base URL.
    public var baseURL: URL? {
        get { storage.value.baseURL }
        _modify { yield &storage.value.baseURL }
    }
    /// Parameters: path template values, then query items or body fields depending on the method.
    public var parameters: Parameters {
        get { storage.value.parameters }
        _modify { yield &storage.value.parameters }
    }
    /// Parameters that always go into the query string, whatever the method.
    public var query: Parameters {
        get { storage.value.query }
        _modify { yield &storage.value.query }
    }
    /// Header fields; they win over the client's default headers of the same name. In a
    /// ``Response``'s request, every header that was sent.
    public var headers: Headers {
        get { storage.value.headers }
        _modify { yield &storage.value.headers }
    }
    /// An explicit body. When set, ``parameters`` go into the query string (or, for a
    /// multipart body, become its leading text fields).
    public var body: RequestBody? {
        get { storage.value.body }
        _modify { yield &storage.value.body }
    }
    /// How parameters are encoded; `nil` means JSON for a body. Default `nil`.
    public var contentType: ContentType? {
        get { storage.value.contentType }
        _modify { yield &storage.value.contentType }
    }
    /// The time limit for one attempt; `nil` uses the client's. Default `nil`.
    public var timeout: Duration? {
        get { storage.value.timeout }
        _modify { yield &storage.value.timeout }
    }
    /// A tag naming the backend subsystem, for common parameters and headers. Default `nil`.
    public var tag: String? {
        get { storage.value.tag }
        _modify { yield &storage.value.tag }
    }
    /// An identifier for looking up and cancelling the call. Default `nil`.
    public var identifier: String? {
        get { storage.value.identifier }
        _modify { yield &storage.value.identifier }
    }
    /// A group for cancelling related calls together. Default `nil`.
    public var group: String? {
        get { storage.value.group }
        _modify { yield &storage.value.group }
    }
    /// The API name, when the request came from a definition.
    public var apiName: String? {
        get { storage.value.apiName }
        _modify { yield &storage.value.apiName }
    }
    /// The statuses ``Response/validate()`` accepts; `nil` means the client's (200–299).
    public var acceptedStatusCodes: StatusCodes? {
        get { storage.value.acceptedStatusCodes }
        _modify { yield &storage.value.acceptedStatusCodes }
    }
    /// Whether the request carries the client's credentials. Default `false`.
    public var needsAuthorization: Bool {
        get { storage.value.needsAuthorization }
        _modify { yield &storage.value.needsAuthorization }
    }
    /// Whether to read the body as an adaptive envelope; `nil` follows the client. Default `nil`.
    public var usesEnvelope: Bool? {
        get { storage.value.usesEnvelope }
        _modify { yield &storage.value.usesEnvelope }
    }
    /// What the body is expected to hold (from a definition's response type). Default `nil`.
    public var responseType: ResponseType? {
        get { storage.value.responseType }
        _modify { yield &storage.value.responseType }
    }
    /// Whether an empty or `null` body is acceptable (RFAPI's "Response Accept Null").
    public var acceptsNullResponse: Bool {
        get { storage.value.acceptsNullResponse }
        _modify { yield &storage.value.acceptsNullResponse }
    }
    /// The retry policy for this call; `nil` uses the definition's, else the client's.
    public var retry: RetryPolicy? {
        get { storage.value.retry }
        _modify { yield &storage.value.retry }
    }
    /// One time limit for the whole call — attempts, waits, redirects and body; `nil` uses the
    /// client's. Default `nil`.
    public var deadline: Duration? {
        get { storage.value.deadline }
        _modify { yield &storage.value.deadline }
    }
    /// How this call uses the client's HTTP cache; `nil` means ``CachePolicy/useProtocol``.
    public var cachePolicy: CachePolicy? {
        get { storage.value.cachePolicy }
        _modify { yield &storage.value.cachePolicy }
    }
    /// Whether this call is queued offline when the server cannot be reached; `nil` means
    /// ``StorePolicy/none``.
    public var storePolicy: StorePolicy? {
        get { storage.value.storePolicy }
        _modify { yield &storage.value.storePolicy }
    }
    /// A message for activity observers while the call runs (RFAPI's loading message).
    public var loadMessage: String? {
        get { storage.value.loadMessage }
        _modify { yield &storage.value.loadMessage }
    }
    /// Middlewares for this call only, run after the client's and the definition's.
    public var middlewares: [any Middleware] {
        get { storage.value.middlewares }
        _modify { yield &storage.value.middlewares }
    }
    /// Where common parameters go for this request; `nil` follows the client. Default `nil`.
    public var commonParameterPlacement: CommonParameterPlacement? {
        get { storage.value.commonParameterPlacement }
        _modify { yield &storage.value.commonParameterPlacement }
    }
    /// The URL the request was sent to, filled in when Callsign builds the request.
    public internal(set) var url: URL? {
        get { storage.value.url }
        _modify { yield &storage.value.url }
    }
    /// Set by the redirect policy after a hop to another origin: credentials are never added again.
    public internal(set) var credentialsStripped: Bool {
        get { storage.value.credentialsStripped }
        _modify { yield &storage.value.credentialsStripped }
    }
    /// The parameter names the common-parameters stage added, which leave on a hop to another origin.
    var commonParameterNames: Set<String> {
        get { storage.value.commonParameterNames }
        _modify { yield &storage.value.commonParameterNames }
    }
    /// An origin the code that built the request vouches for (an ``Endpoint``'s base URL).
    var vouchedOrigin: Origin? {
        get { storage.value.vouchedOrigin }
        _modify { yield &storage.value.vouchedOrigin }
    }
    /// When the call's deadline passes, if it has one.
    var deadlineInstant: ContinuousClock.Instant? {
        get { storage.value.deadlineInstant }
        _modify { yield &storage.value.deadlineInstant }
    }
    /// The endpoint value the request came from, for mock providers.
    var endpoint: (any Endpoint)? {
        get { storage.value.endpoint }
        _modify { yield &storage.value.endpoint }
    }
    /// Where a download's body goes, instead of memory.
    var downloadDestination: URL? {
        get { storage.value.downloadDestination }
        _modify { yield &storage.value.downloadDestination }
    }
    /// Whether the caller reads the body as a stream (``APIClient/stream(_:)``).
    var streamsBody: Bool {
        get { storage.value.streamsBody }
        _modify { yield &storage.value.streamsBody }
    }
    /// Whether a download continues a partial file left by an earlier one.
    var resumesDownload: Bool {
        get { storage.value.resumesDownload }
        _modify { yield &storage.value.resumesDownload }
    }
    /// Set while the offline queue replays this request: the chain starts below the offline stage.
    var isReplay: Bool {
        get { storage.value.isReplay }
        _modify { yield &storage.value.isReplay }
    }
    /// The resolved target of ``path``, so the transport stage does not resolve it again.
    var resolvedTarget: RequestFactory.Target? {
        get { storage.value.resolvedTarget }
        _modify { yield &storage.value.resolvedTarget }
    }

    /// Creates a request.
    ///
    /// ```swift
    /// let request = Request(method: .post, path: "boards", parameters: ["title": "Balsa Fish"])
    /// ```
    public init(
        method: HTTPRequest.Method = .get, path: String, baseURL: URL? = nil, parameters: Parameters = [:],
        query: Parameters = [:], headers: Headers = [:], body: RequestBody? = nil,
        contentType: ContentType? = nil, timeout: Duration? = nil, tag: String? = nil
    ) {
        storage = CopyOnWrite(
            Fields(
                method: method, path: path, baseURL: baseURL, parameters: parameters, query: query, headers: headers,
                body: body, contentType: contentType, timeout: timeout, tag: tag, needsAuthorization: false,
                acceptsNullResponse: false, middlewares: []))
    }

    /// The parameter key whose value (an array, usually) is sent as the whole JSON body,
    /// as RFAPI's `RFAPIRequestArrayParameterKey` was.
    ///
    /// ```swift
    /// client.call("BatchDelete", parameters: [Request.arrayParameterKey: [1, 2, 3]])
    /// ```
    public static let arrayParameterKey = "_RFArray_"

    /// Whether the method is idempotent by RFC 9110 (GET, HEAD, OPTIONS, TRACE, PUT, DELETE).
    public var isIdempotent: Bool {
        switch method {
        case .get, .head, .options, .trace, .put, .delete: true
        default: false
        }
    }

    /// The URL for messages: the built URL if there is one, else the path as written.
    var resolvedURLForDescription: String? {
        url?.absoluteString ?? (path.isEmpty ? nil : path)
    }
}

extension Request {
    /// A GET request; parameters go into the query string.
    ///
    /// ```swift
    /// Request.get("boards", parameters: ["type": 1])
    /// ```
    public static func get(_ path: String, parameters: Parameters = [:], headers: Headers = [:]) -> Request {
        Request(method: .get, path: path, parameters: parameters, headers: headers)
    }

    /// A HEAD request; parameters go into the query string.
    public static func head(_ path: String, parameters: Parameters = [:], headers: Headers = [:]) -> Request {
        Request(method: .head, path: path, parameters: parameters, headers: headers)
    }

    /// A DELETE request; parameters go into the query string.
    public static func delete(_ path: String, parameters: Parameters = [:], headers: Headers = [:]) -> Request {
        Request(method: .delete, path: path, parameters: parameters, headers: headers)
    }

    /// A POST request; parameters are encoded into the body (JSON by default).
    ///
    /// ```swift
    /// Request.post("boards", contentType: .formURLEncoded, parameters: ["type": 1, "title": "Balsa"])
    /// ```
    public static func post(
        _ path: String, contentType: ContentType = .json, parameters: Parameters = [:], headers: Headers = [:]
    ) -> Request {
        Request(method: .post, path: path, parameters: parameters, headers: headers, contentType: contentType)
    }

    /// A PUT request; parameters are encoded into the body (JSON by default).
    public static func put(
        _ path: String, contentType: ContentType = .json, parameters: Parameters = [:], headers: Headers = [:]
    ) -> Request {
        Request(method: .put, path: path, parameters: parameters, headers: headers, contentType: contentType)
    }

    /// A PATCH request; parameters are encoded into the body (JSON by default).
    public static func patch(
        _ path: String, contentType: ContentType = .json, parameters: Parameters = [:], headers: Headers = [:]
    ) -> Request {
        Request(method: .patch, path: path, parameters: parameters, headers: headers, contentType: contentType)
    }

    /// A request whose body is any `Encodable`, encoded as JSON.
    ///
    /// ```swift
    /// let request = try Request.post("boards", body: NewBoard(title: "Balsa Fish"))
    /// ```
    /// - Throws: ``APIError`` (``APIError/Code/encoding``) when the value cannot be encoded.
    public static func post(
        _ path: String, body: some Encodable, encoder: JSONEncoder = JSONEncoder(), headers: Headers = [:]
    ) throws(APIError) -> Request {
        Request(method: .post, path: path, headers: headers, body: try .json(body, encoder: encoder))
    }

    /// A copy with more parameters and headers (Malibu's `adding`); the new ones win.
    ///
    /// ```swift
    /// client.configuration.beforeEach = { $0.adding(parameters: ["userId": "12345"]) }
    /// ```
    public func adding(parameters: Parameters = [:], headers: Headers = [:]) -> Request {
        var copy = self
        copy.parameters.merge(parameters) { _, new in new }
        copy.headers = copy.headers.merging(headers)
        return copy
    }
}
