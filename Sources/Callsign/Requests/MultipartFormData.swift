public import Foundation

/// A `multipart/form-data` body: text fields, data parts and files (RFC 7578).
///
/// ```swift
/// var form = MultipartFormData()
/// form.append(field: "title", value: "Balsa Fish")
/// form.append(data: png, name: "photo", filename: "board.png", mimeType: "image/png")
/// form.append(fileAt: logURL, name: "log")
/// request.body = .multipart(form)
/// ```
///
/// The boundary comes from the system's cryptographically secure random source, so a part's
/// content cannot guess it. Names and filenames are escaped as browsers escape them (`"` as
/// `%22`, CR as `%0D`, LF as `%0A`), so they cannot break out of their header.
public struct MultipartFormData: Sendable {
    /// One part of the form.
    public struct Part: Sendable {
        enum Content: Sendable {
            case data(Data)
            case file(URL)
        }

        /// The form field name.
        public var name: String
        /// The filename sent for file and data parts, if any.
        public var filename: String?
        /// The part's media type, if any.
        public var mimeType: String?
        var content: Content
    }

    /// The parts in order.
    public private(set) var parts: [Part] = []
    /// The boundary between parts.
    public let boundary: String

    /// Creates an empty form with a fresh random boundary.
    public init() {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<4).map { _ in String(generator.next() as UInt32, radix: 16) }
            .map { String(repeating: "0", count: 8 - $0.count) + $0 }.joined()
        boundary = "callsign-\(random)"
    }

    /// The `Content-Type` header value, with the boundary.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Appends a text field.
    public mutating func append(field name: String, value: String) {
        parts.append(Part(name: name, filename: nil, mimeType: nil, content: .data(Data(value.utf8))))
    }

    /// Appends a data part, optionally as a file.
    public mutating func append(data: Data, name: String, filename: String? = nil, mimeType: String? = nil) {
        parts.append(Part(name: name, filename: filename, mimeType: mimeType, content: .data(data)))
    }

    /// Appends a file part. The file is read when the request is sent; the filename defaults
    /// to the file's last path component and the media type to `application/octet-stream`.
    public mutating func append(fileAt url: URL, name: String, filename: String? = nil, mimeType: String? = nil) {
        parts.append(
            Part(
                name: name, filename: filename ?? url.lastPathComponent,
                mimeType: mimeType ?? "application/octet-stream", content: .file(url)))
    }

    /// Appends each parameter as a text field (sorted by name; arrays as repeated fields,
    /// objects as JSON text).
    public mutating func appendFields(_ parameters: Parameters) {
        var fields: [Part] = []
        for key in parameters.keys.sorted() {
            guard let value = parameters[key] else { continue }
            switch value {
            case .array(let elements):
                for element in elements {
                    fields.append(Part(name: key, content: .data(Data((element.scalarText ?? element.description).utf8))))
                }
            default:
                fields.append(Part(name: key, content: .data(Data((value.scalarText ?? value.description).utf8))))
            }
        }
        parts.append(contentsOf: fields)
    }

    /// Prepends parameters as text fields, before any part already present.
    mutating func prependFields(_ parameters: Parameters) {
        var leading = MultipartFormData(boundary: boundary)
        leading.appendFields(parameters)
        parts.insert(contentsOf: leading.parts, at: 0)
    }

    private init(boundary: String) { self.boundary = boundary }

    /// The encoded body. Reads files named in the form.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/encoding``) if a file cannot be read.
    public func encoded() throws(APIError) -> Data {
        var body = Data()
        for part in parts {
            body.append(Data("--\(boundary)\r\n".utf8))
            var disposition = "Content-Disposition: form-data; name=\"\(Self.escape(part.name))\""
            if let filename = part.filename { disposition += "; filename=\"\(Self.escape(filename))\"" }
            body.append(Data("\(disposition)\r\n".utf8))
            if let mimeType = part.mimeType {
                guard !mimeType.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                    throw APIError(.encoding, "the media type of multipart part \"\(part.name)\" contains CR or LF")
                }
                body.append(Data("Content-Type: \(mimeType)\r\n".utf8))
            }
            body.append(Data("\r\n".utf8))
            switch part.content {
            case .data(let data):
                body.append(data)
            case .file(let url):
                do {
                    body.append(try Data(contentsOf: url, options: .mappedIfSafe))
                } catch {
                    throw APIError(
                        .encoding, "the file \"\(url.lastPathComponent)\" for multipart part \"\(part.name)\" could not be read",
                        underlyingError: error)
                }
            }
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        return body
    }

    /// Escapes a name or filename for a quoted `Content-Disposition` parameter, as the HTML
    /// standard's multipart/form-data encoding does.
    static func escape(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "\"": result += "%22"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            case "\r\n": result += "%0D%0A"
            default: result.append(character)
            }
        }
        return result
    }
}

extension MultipartFormData.Part {
    fileprivate init(name: String, content: Content) {
        self.init(name: name, filename: nil, mimeType: nil, content: content)
    }
}
