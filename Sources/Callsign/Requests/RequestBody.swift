public import Foundation

/// An explicit request body and its media type.
///
/// ```swift
/// request.body = try .json(NewBoard(title: "Balsa Fish"))
/// request.body = .text("hello")
/// request.body = .data(png, contentType: "image/png")
/// request.body = .multipart(form)
/// ```
public struct RequestBody: Sendable {
    /// The bytes.
    public var content: TransportBody
    /// The `Content-Type` to send, unless the request's headers set one.
    public var contentType: String?
    /// The multipart form, kept so parameters can be added as leading fields.
    var multipartForm: MultipartFormData?

    /// Creates a body from bytes.
    public init(content: TransportBody, contentType: String?) {
        self.content = content
        self.contentType = contentType
    }

    /// Raw bytes (`application/octet-stream` unless you say otherwise).
    public static func data(_ data: Data, contentType: String? = "application/octet-stream") -> RequestBody {
        RequestBody(content: .data(data), contentType: contentType)
    }

    /// A file, read when the request is sent (`application/octet-stream` unless you say otherwise).
    public static func file(_ url: URL, contentType: String? = "application/octet-stream") -> RequestBody {
        RequestBody(content: .file(url), contentType: contentType)
    }

    /// A one-shot stream of chunks: sent once, never replayed by a redirect or a retry.
    public static func stream<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, length: Int? = nil, contentType: String? = "application/octet-stream"
    ) -> RequestBody where Chunks.Element == Data {
        RequestBody(content: .stream(chunks, length: length), contentType: contentType)
    }

    /// UTF-8 text (`text/plain; charset=utf-8`).
    public static func text(_ text: String) -> RequestBody {
        RequestBody(content: .data(Data(text.utf8)), contentType: "text/plain; charset=utf-8")
    }

    /// Any `Encodable` as JSON (`application/json`).
    ///
    /// - Throws: ``APIError`` (``APIError/Code/encoding``) when the value cannot be encoded.
    public static func json(_ value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws(APIError) -> RequestBody {
        do {
            return RequestBody(content: .data(try encoder.encode(value)), contentType: "application/json")
        } catch {
            throw APIError(.encoding, localized: "the body could not be encoded as JSON: \(error)", underlyingError: error)
        }
    }

    /// A JSON value as the whole body — for example an array (RFAPI's whole-array parameter).
    public static func json(_ value: JSONValue) -> RequestBody {
        RequestBody(content: .data(value.jsonData()), contentType: "application/json")
    }

    /// A `multipart/form-data` body. Files named in the form are read when the request is sent.
    public static func multipart(_ form: MultipartFormData) -> RequestBody {
        var body = RequestBody(content: .data(Data()), contentType: form.contentType)
        body.multipartForm = form
        return body
    }
}
