/// How a request's parameters are encoded (Malibu's content types).
///
/// ```swift
/// Request.post("boards", contentType: .formURLEncoded, parameters: ["title": "Balsa Fish"])
/// Request.post("upload", contentType: .custom("application/xml"), parameters: …)
/// ```
///
/// Each content type has an encoder in ``ParameterEncoders``, which you can override or
/// extend: `configuration.encoders[.custom("application/xml")] = MyXMLEncoder()`.
public struct ContentType: Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable {
        case query, formURLEncoded, json, text, multipartFormData, custom(String)
    }

    private let kind: Kind

    private init(kind: Kind) { self.kind = kind }

    /// Parameters go into the URL's query string, whatever the method; no body.
    public static let query = ContentType(kind: .query)
    /// `application/x-www-form-urlencoded` body.
    public static let formURLEncoded = ContentType(kind: .formURLEncoded)
    /// `application/json` body (the default for methods with a body).
    public static let json = ContentType(kind: .json)
    /// `text/plain; charset=utf-8` body: the `text` parameter, or the parameters as `key=value` lines.
    public static let text = ContentType(kind: .text)
    /// `multipart/form-data` body: every parameter a text part, plus data and file parts.
    public static let multipartFormData = ContentType(kind: .multipartFormData)
    /// Any other media type; register an encoder for it in ``ParameterEncoders``.
    public static func custom(_ mediaType: String) -> ContentType { ContentType(kind: .custom(mediaType)) }

    /// The media type sent in `Content-Type` (without the multipart boundary).
    public var mediaType: String {
        switch kind {
        case .query: ""
        case .formURLEncoded: "application/x-www-form-urlencoded"
        case .json: "application/json"
        case .text: "text/plain; charset=utf-8"
        case .multipartFormData: "multipart/form-data"
        case .custom(let mediaType): mediaType
        }
    }

    public var description: String {
        switch kind {
        case .query: "query"
        case .formURLEncoded: "form"
        case .json: "json"
        case .text: "text"
        case .multipartFormData: "multipart"
        case .custom(let mediaType): mediaType
        }
    }

    /// Reads a content type by name as a definitions file writes it: `query`, `form`
    /// (or `formURLEncoded`, `application/x-www-form-urlencoded`), `json`, `text`,
    /// `multipart`, or any media type with a `/` (a custom type). RFAPI's serializer class
    /// names (`AFJSONRequestSerializer`, `AFHTTPRequestSerializer`) are understood too.
    public init?(name: String) {
        let lowered = name.lowercased()
        switch lowered {
        case "query": self = .query
        case "form", "formurlencoded", "form-urlencoded", "application/x-www-form-urlencoded": self = .formURLEncoded
        case "json", "application/json": self = .json
        case "text", "text/plain": self = .text
        case "multipart", "multipartformdata", "multipart/form-data": self = .multipartFormData
        default:
            if lowered.contains("/") {
                self = .custom(name)
            } else if lowered.hasSuffix("requestserializer") {
                // RFAPI names AFNetworking serializer classes; anything JSON-ish is JSON, the
                // plain HTTP serializer is the form encoding.
                if lowered.contains("json") {
                    self = .json
                } else if lowered == "afhttprequestserializer" {
                    self = .formURLEncoded
                } else {
                    return nil
                }
            } else {
                return nil
            }
        }
    }

    var isQuery: Bool { kind == .query }
    var isMultipart: Bool { kind == .multipartFormData }
}
