public import Foundation
public import HTTPTypes
public import Logging

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
/// ``Fields/parameters`` (then ``Fields/query``) and that parameter is not sent again. Parameters go into the
/// query string for GET, HEAD and DELETE (or with ``ContentType/query``) and into the body
/// otherwise, encoded by ``CallOptions/contentType`` (JSON unless you say otherwise).
@dynamicMemberLookup
public struct Request: BoxedFields, HoldsCallOptions, Sendable {
    /// What a request holds. Read and change them on the request itself — `request.path`,
    /// `request.headers["X-Trace"] = id` — through key-path member lookup: the fields live in one
    /// copy-on-write box, so a request is one pointer wide however much it carries, and passing it
    /// down the middleware chain copies nothing.
    public struct Fields: Sendable {
        /// The HTTP method.
        public var method: HTTPRequest.Method
        /// A path relative to the base URL (may be a template), or an absolute `http(s)` URL.
        public var path: String
        /// The base URL for a relative path; `nil` uses the client's configured base URL.
        public var baseURL: URL? = nil
        /// Parameters: path template values, then query items or body fields depending on the method.
        public var parameters: Parameters
        /// Parameters that always go into the query string, whatever the method.
        public var query: Parameters
        /// Header fields; they win over the client's default headers of the same name. In a
        /// ``Response``'s request, every header that was sent.
        public var headers: Headers
        /// An explicit body. When set, ``parameters`` go into the query string (or, for a
        /// multipart body, become its leading text fields).
        public var body: RequestBody? = nil
        /// The options that shape the call — time limits, retry, cache, credentials, how the
        /// answer is read (see ``CallOptions``). Read and change each one on the request itself:
        /// `request.deadline = .seconds(5)`.
        public var options = CallOptions()
        /// An identifier for looking up and cancelling the call. Default `nil`.
        public var identifier: String? = nil
        /// A group for cancelling related calls together. Default `nil`.
        public var group: String? = nil
        /// The API name, when the request came from a definition.
        public var apiName: String? = nil
        /// For a call queued offline: calls with the same key are sent in the order they were
        /// queued, and a storage that can (`PostgresOfflineQueue`) sends different keys in
        /// parallel. `nil` (the default) uses the API name.
        ///
        /// ```swift
        /// request.orderingKey = "account-\(accountID)"   // one account's calls in order
        /// ```
        public var orderingKey: String? = nil
        /// A message for activity observers while the call runs (RFAPI's loading message).
        public var loadMessage: String? = nil
        /// Middlewares for this call only, run after the client's (``APIClient/Configuration/middlewares``).
        public var middlewares: [any Middleware] = []
        /// The URL the request was sent to, filled in when Callsign builds the request.
        public internal(set) var url: URL? = nil
        /// Set by the redirect policy after a hop to another origin: credentials are never added again.
        public internal(set) var credentialsStripped: Bool = false
        /// The (lowercased) names of headers that came from the definition rather than the call:
        /// the only ones authentication may replace. A call's own headers win over the
        /// authentication's, as RFAPI's context headers did.
        var definitionHeaderNames: Set<String> = []
        /// The path resolved against its base (scheme, authority, path), kept while ``path`` is
        /// that URL: the stages that build the wire form (the cache's key, the offline queue,
        /// encoding) parse nothing again.
        var target: RequestFactory.Target? = nil
        /// The logger for this call; `nil` uses the client's. Give a call its own logger (or the
        /// client's with more metadata) to follow it in your logs:
        ///
        /// ```swift
        /// var request = Request.get("orders")
        /// request.logger = Logger(label: "orders", metadataProvider: .init { ["order.batch": "42"] })
        /// ```
        public var logger: Logger? = nil
    }

    /// The fields' box (see ``BoxedFields``).
    private var storage: CopyOnWrite<Fields>

    /// All the fields at once; read and change them one by one on the value itself.
    public var fields: Fields {
        _read { yield storage.value }
        _modify { yield &storage.value }
    }

    /// The options that shape the call (see ``CallOptions``); read and change them one by one on
    /// the request itself: `request.retry = .none`.
    public var options: CallOptions {
        _read { yield storage.value.options }
        _modify { yield &storage.value.options }
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
        var fields = Fields(method: method, path: path, baseURL: baseURL, parameters: parameters, query: query, headers: headers, body: body)
        fields.options.contentType = contentType
        fields.options.timeout = timeout
        fields.options.tag = tag
        storage = CopyOnWrite(fields)
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
        switch self.method {
        case .get, .head, .options, .trace, .put, .delete: true
        default: false
        }
    }

    /// The URL for messages: the built URL if there is one, else the path as written.
    var resolvedURLForDescription: String? {
        self.url?.absoluteString ?? (self.path.isEmpty ? nil : self.path)
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
    /// configuration.middlewares = [.changingRequest { $0.adding(parameters: ["userId": "12345"]) }]
    /// ```
    public func adding(parameters: Parameters = [:], headers: Headers = [:]) -> Request {
        var copy = self
        copy.parameters.merge(parameters) { _, new in new }
        copy.headers = copy.headers.merging(headers)
        return copy
    }
}
