public import Foundation
public import HTTPTypes

/// An HTTP response with its whole body, and the request that produced it.
///
/// ```swift
/// let response = try await client.send(Boards.show(id: 7))
/// let board = try response.validate().decode(Board.self)
/// print(response.status.code, response.headers[.contentType] ?? "", response.duration)
/// ```
public struct Response: Sendable {
    /// The request, as Callsign built it (its ``Request/url`` is filled in).
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
    /// For a download, the file that holds the body (``body`` is then empty).
    public var fileURL: URL? = nil
    /// Settings from the client that decide how this response is validated and decoded.
    var settings: ResponseSettings
    /// The body, still arriving: below the ``MiddlewareStage/body`` stage for every response,
    /// above it only for ``APIClient/stream(_:)``.
    var bodyStream: ResponseBodyStream? = nil
    /// The body's declared `Content-Length` while it is still arriving, checked by the transport
    /// stage; a decoded body has none.
    var declaredLength: Int? = nil
    /// The body as it was sent, for recorders.
    var sentBody: HTTPBody? = nil

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
        self.request = request
        self.status = status
        self.headers = headers
        self.body = body
        self.startedAt = startedAt
        self.duration = duration
        self.settings = settings
    }

    /// The body as UTF-8 text (invalid bytes replaced).
    public func string() -> String { String(decoding: body, as: UTF8.self) }

    /// The body bytes.
    public func data() -> Data { body }

    /// The body parsed as JSON.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/decoding``) when the body is not JSON.
    public func json() throws(APIError) -> JSONValue {
        do {
            return try JSONValue(parsing: body)
        } catch {
            var error = error
            error.request = request
            error.response = self
            throw error
        }
    }

    /// The media type of the body, lower-cased, without parameters (`application/json`).
    public var mediaType: String? {
        headers[.contentType].map { $0.split(separator: ";").first.map(String.init) ?? $0 }?
            .trimmingCharacters(in: .whitespaces).lowercased()
    }
}

/// How one response is judged, taken from the request and the client configuration.
struct ResponseSettings: Sendable {
    var acceptedStatusCodes: StatusCodes = .successful
    var envelope: EnvelopePolicy?
    var decoder: JSONDecoder = JSONDecoder()
    var validators: [any ResponseValidator] = []
    var maximumJSONDepth: Int = Limits.default.maximumJSONDepth

    /// The defaults, made once: a response built outside a client shares its decoder.
    static let standard = ResponseSettings()
}
