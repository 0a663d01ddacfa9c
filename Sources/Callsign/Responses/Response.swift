public import Foundation
public import HTTPTypes

/// An HTTP response with its whole body, and the request that produced it.
///
/// ```swift
/// let response = try await client.send(Boards.show(id: 7))
/// let board = try response.validate().decode(Board.self)
/// print(response.status.code, response.headers[.contentType] ?? "", response.duration)
/// ```
@dynamicMemberLookup
public struct Response: BoxedFields, Sendable {
    /// What a response holds. Read and change them on the response itself — `response.status`,
    /// `response.headers[.eTag]` — through key-path member lookup: the fields live in one
    /// copy-on-write box, so a response is one pointer wide however large its body.
    public struct Fields: Sendable {
        /// The request, as Callsign built it (its ``Request/Fields/url`` is filled in).
        public var request: Request
        /// The status line.
        public var status: HTTPResponse.Status
        /// Every response header field.
        public var headers: HTTPFields
        /// The whole body.
        public var body: Data
        /// When the request started.
        public var startedAt: Date
        /// How long the exchange took, from the first byte sent to the last byte read.
        public var duration: Duration
        /// Whether this came from the network, the cache, or the cache after a `304`.
        public var source: ResponseSource = .network
        /// The protocol the response came over: `HTTP/1.1`, or `HTTP/2` when TLS negotiated it.
        public var httpVersion: String = "HTTP/1.1"
        /// For a download, the file that holds the body (``body`` is then empty).
        public var fileURL: URL? = nil
        /// When each phase of the exchange that brought this answer ended — name lookup,
        /// connect, TLS, request sent, first byte, complete — and whether its connection was
        /// reused; empty for an answer served from the cache (see ``PhaseTimings``).
        ///
        /// ```swift
        /// print(response.timings.firstByte ?? .zero, response.timings.reusedConnection ?? false)
        /// ```
        public var timings: PhaseTimings = PhaseTimings()
        /// How many redirects were followed to reach this answer.
        public var redirects: Int = 0
        /// Settings from the client that decide how this response is validated and decoded.
        var settings: ResponseSettings
        /// The body, still arriving: below the ``MiddlewareStage/body`` stage for every response,
        /// above it only for ``APIClient/stream(_:)``.
        var bodyStream: ResponseBodyStream? = nil
        /// The body's declared `Content-Length` while it is still arriving, checked by the transport
        /// stage; a decoded body has none.
        package var declaredLength: Int? = nil
        /// The body as it was sent, for recorders.
        var sentBody: TransportBody? = nil
        /// The open WebSocket a `101` answer came with (``APIClient/webSocket(_:options:)``).
        var webSocket: (any WebSocketConnection)? = nil
    }

    /// The fields' box (see ``BoxedFields``).
    private var storage: CopyOnWrite<Fields>

    /// All the fields at once; read and change them one by one on the value itself.
    public var fields: Fields {
        _read { yield storage.value }
        _modify { yield &storage.value }
    }

    /// Creates a response. Transports and mocks normally do this for you.
    public init(
        request: Request, status: HTTPResponse.Status, headers: HTTPFields = [:], body: Data = Data(),
        startedAt: Date = Date(), duration: Duration = .zero
    ) {
        self.init(
            request: request, status: status, headers: headers, body: body, startedAt: startedAt, duration: duration,
            settings: .standard)
    }

    /// A response judged by `settings` (the client's), built in one step.
    init(
        request: Request, status: HTTPResponse.Status, headers: HTTPFields, body: Data, startedAt: Date, duration: Duration,
        settings: ResponseSettings
    ) {
        storage = CopyOnWrite(
            Fields(request: request, status: status, headers: headers, body: body, startedAt: startedAt, duration: duration, settings: settings))
    }

    /// The body as UTF-8 text (invalid bytes replaced).
    public func string() -> String { String(decoding: self.body, as: UTF8.self) }

    /// The body bytes.
    public func data() -> Data { self.body }

    /// The body parsed as JSON (a property list with ``CallOptions/responseFormat``
    /// ``ResponseFormat/propertyList``, read as ``ResponseFormat`` says).
    ///
    /// - Throws: ``APIError`` (``APIError/Code/decoding``) when the body is not JSON.
    public func json() throws(APIError) -> JSONValue {
        do {
            return try JSONValue(parsing: try jsonBody())
        } catch {
            var error = error
            error.request = self.request
            error.response = self
            throw error
        }
    }

    /// The body as JSON text: the body itself, or a property-list body (``ResponseFormat``)
    /// read through the property-list door and written as JSON, so that everything that reads
    /// JSON — envelopes, response types, decoding — reads it alike. Values past the depth limit,
    /// or (a binary list's shared values counted once per use) more than the body has bytes or
    /// a million, are refused.
    func jsonBody() throws(APIError) -> Data {
        guard self.request.responseFormat == .propertyList, !self.body.isEmpty else { return self.body }
        do throws(PropertyListReader.Problem) {
            let value = try PropertyListReader.value(
                self.body, maximumDepth: self.settings.maximumJSONDepth,
                maximumValues: max(self.body.count, Limits.default.maximumDefinitionNodes), conversion: .decodable)
            return value.jsonData()
        } catch {
            throw APIError(
                .decoding, localized: "the body is not a property list Callsign can read: \(error.reason)", request: self.request, response: self,
                underlyingError: error)
        }
    }

    /// The media type of the body, lower-cased, without parameters (`application/json`).
    public var mediaType: String? {
        self.headers.value(of: .contentType).map { Self.mediaType(of: $0[...]) }
    }

    /// A media range's type without parameters and optional whitespace, lower-cased
    /// (`" Application/JSON; charset=utf-8"` → `"application/json"`). Read on every validation,
    /// so without Foundation.
    package static func mediaType(of text: Substring) -> String {
        var type = text.prefix { $0 != ";" }
        while let first = type.utf8.first, first == 0x20 || first == 0x09 { type.removeFirst() }
        while let last = type.utf8.last, last == 0x20 || last == 0x09 { type.removeLast() }
        return type.lowercased()
    }
}

/// How one response is judged, taken from the client configuration: one shared value per client.
final class ResponseSettings: Sendable {
    let acceptedStatusCodes: StatusCodes
    let envelope: EnvelopePolicy?
    let decoder: JSONDecoder
    let validators: [any ResponseValidator]
    let maximumJSONDepth: Int
    let classes: ResponseClasses
    /// The client's language for the errors a response's checks throw; `nil` for the process's.
    let language: MessageLanguage?
    /// The client's own texts for those errors.
    let overrides: MessageOverrides?

    init(
        acceptedStatusCodes: StatusCodes = .successful, envelope: EnvelopePolicy? = nil, decoder: JSONDecoder = JSONDecoder(),
        validators: [any ResponseValidator] = [], maximumJSONDepth: Int = Limits.default.maximumJSONDepth,
        classes: ResponseClasses = ResponseClasses(), language: MessageLanguage? = nil, overrides: MessageOverrides? = nil
    ) {
        self.classes = classes
        self.language = language
        self.overrides = overrides
        self.acceptedStatusCodes = acceptedStatusCodes
        self.envelope = envelope
        self.decoder = decoder
        self.validators = validators
        self.maximumJSONDepth = maximumJSONDepth
    }

    /// The defaults, made once: a response built outside a client shares its decoder.
    static let standard = ResponseSettings()
}
