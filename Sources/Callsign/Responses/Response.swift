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
    // Every field lives in one copy-on-write box (see `CopyOnWrite`): a response is one pointer wide.
    struct Fields: Sendable {
        var request: Request
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: Data
        var startedAt: Date
        var duration: Duration
        var source: ResponseSource = .network
        var fileURL: URL? = nil
        var settings: ResponseSettings
        var bodyStream: ResponseBodyStream? = nil
        var sentBody: HTTPBody? = nil
    }

    private var storage: CopyOnWrite<Fields>

    /// The request, as Callsign built it (its ``Request/url`` is filled in).
    public var request: Request {
        get { storage.value.request }
        _modify { yield &storage.value.request }
    }
    /// The status line.
    public var status: HTTPResponse.Status {
        get { storage.value.status }
        _modify { yield &storage.value.status }
    }
    /// Every response header field.
    public var headers: HTTPFields {
        get { storage.value.headers }
        _modify { yield &storage.value.headers }
    }
    /// The whole body.
    public var body: Data {
        get { storage.value.body }
        _modify { yield &storage.value.body }
    }
    /// When the request started.
    public var startedAt: Date {
        get { storage.value.startedAt }
        _modify { yield &storage.value.startedAt }
    }
    /// How long the exchange took, from the first byte sent to the last byte read.
    public var duration: Duration {
        get { storage.value.duration }
        _modify { yield &storage.value.duration }
    }
    /// Whether this came from the network, the cache, or the cache after a `304`.
    public var source: ResponseSource {
        get { storage.value.source }
        _modify { yield &storage.value.source }
    }
    /// For a download, the file that holds the body (``body`` is then empty).
    public var fileURL: URL? {
        get { storage.value.fileURL }
        _modify { yield &storage.value.fileURL }
    }
    /// Settings from the client that decide how this response is validated and decoded.
    var settings: ResponseSettings {
        get { storage.value.settings }
        _modify { yield &storage.value.settings }
    }
    /// For ``APIClient/stream(_:)``: the body, still arriving.
    var bodyStream: ResponseBodyStream? {
        get { storage.value.bodyStream }
        _modify { yield &storage.value.bodyStream }
    }
    /// The body as it was sent, for recorders.
    var sentBody: HTTPBody? {
        get { storage.value.sentBody }
        _modify { yield &storage.value.sentBody }
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
            Fields(
                request: request, status: status, headers: headers, body: body, startedAt: startedAt,
                duration: duration, settings: settings))
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
