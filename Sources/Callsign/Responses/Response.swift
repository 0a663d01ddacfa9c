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
    public var request: Request {
        get { requestBox.value }
        set { requestBox = Box(newValue) }
    }
    // A request is a large value; boxed, a response stays small, and so does every async frame
    // that holds one (each call waiting for a concurrency slot holds several).
    private var requestBox: Box<Request>
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
    public var fileURL: URL?

    /// Settings from the client that decide how this response is validated and decoded.
    var settings: ResponseSettings
    /// For ``APIClient/stream(_:)``: the body, still arriving.
    var bodyStream: ResponseBodyStream?
    /// The body as it was sent, for recorders.
    var sentBody: HTTPBody?

    /// Creates a response. Transports and mocks normally do this for you.
    public init(
        request: Request, status: HTTPResponse.Status, headers: HTTPFields = [:], body: Data = Data(),
        startedAt: Date = Date(), duration: Duration = .zero
    ) {
        self.requestBox = Box(request)
        self.status = status
        self.headers = headers
        self.body = body
        self.startedAt = startedAt
        self.duration = duration
        self.settings = ResponseSettings()
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
}
