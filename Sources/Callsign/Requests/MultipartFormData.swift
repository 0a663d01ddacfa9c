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

    /// The encoded body, in memory. Reads files named in the form.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/encoding``) if a file cannot be read.
    public func encoded() throws(APIError) -> Data {
        var body = Data()
        for segment in try segments() {
            switch segment {
            case .bytes(let data):
                body.append(data)
            case .file(let url, _):
                body.append(try BodyFile.readAll(url, limit: Limits.default.maximumRequestBodySize))
            }
        }
        return body
    }

    /// The encoded body as a stream: files are read from disk as the transport sends them, never
    /// whole. When every file is a regular file, the total length is known (from the files'
    /// sizes) so it goes out with a `Content-Length`, and the body is replayable: every send
    /// reads the files again. A part from a FIFO, a device or a `/proc` file has no length to
    /// know: the body is streamed once, chunked, each such file bounded by
    /// ``Limits/maximumRequestBodySize``.
    ///
    /// ```swift
    /// request.body = RequestBody(content: try form.streamedBody(), contentType: form.contentType)
    /// ```
    /// - Throws: ``APIError`` (``APIError/Code/encoding``) if a file is missing or unreadable.
    public func streamedBody() throws(APIError) -> TransportBody {
        let segments = try segments()
        if segments.allSatisfy({ if case .bytes = $0 { true } else { false } }) {
            // No files: one buffer, which logs, HAR files and retries can read as they are.
            return .data(segments.reduce(into: Data()) { if case .bytes(let data) = $1 { $0.append(data) } })
        }
        var length: Int? = 0
        for segment in segments {
            switch segment {
            case .bytes(let data): length = length.map { $0 + data.count }
            case .file(_, let size?): length = length.map { $0 + size }
            case .file(_, nil): length = nil
            }
        }
        guard let length else { return .stream(SegmentChunks(segments: segments)) }
        return .factory(length: length) { SegmentChunks(segments: segments) }
    }

    /// The form as bytes and files, in order. Checks every file and header now.
    private func segments() throws(APIError) -> [Segment] {
        var segments: [Segment] = []
        for part in parts {
            var head = "--\(boundary)\r\n"
            head += "Content-Disposition: form-data; name=\"\(Self.escape(part.name))\""
            if let filename = part.filename { head += "; filename=\"\(Self.escape(filename))\"" }
            head += "\r\n"
            if let mimeType = part.mimeType {
                guard !mimeType.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                    throw APIError(.encoding, localized: "the media type of multipart part \"\(part.name)\" contains CR or LF")
                }
                head += "Content-Type: \(mimeType)\r\n"
            }
            head += "\r\n"
            switch part.content {
            case .data(let data):
                segments.append(.bytes(Data(head.utf8) + data + Data("\r\n".utf8)))
            case .file(let url):
                // Through the body-file door: a regular file's size, or no length for a FIFO,
                // a device or a /proc file.
                let kind = try? BodyFile.kind(of: url)
                guard let kind, FileManager.default.isReadableFile(atPath: url.path) else {
                    throw APIError(
                        .encoding, localized: "the file \"\(url.lastPathComponent)\" for multipart part \"\(part.name)\" cannot be read")
                }
                segments.append(.bytes(Data(head.utf8)))
                if case .regular(let size) = kind {
                    segments.append(.file(url, size: size))
                } else {
                    segments.append(.file(url, size: nil))
                }
                segments.append(.bytes(Data("\r\n".utf8)))
            }
        }
        segments.append(.bytes(Data("--\(boundary)--\r\n".utf8)))
        return segments
    }

    enum Segment: Sendable {
        case bytes(Data)
        /// A file and its size, `nil` when it cannot be known in advance (``BodyFile/Kind/unknownLength``).
        case file(URL, size: Int?)
    }

    /// Escapes a name or filename for a quoted `Content-Disposition` parameter, as the HTML
    /// standard's multipart/form-data encoding does.
    static func escape(_ text: String) -> String {
        text.replacingScalars { scalar in
            switch scalar {
            case "\"": "%22"
            case "\r": "%0D"
            case "\n": "%0A"
            default: nil
            }
        }
    }
}

extension MultipartFormData.Part {
    fileprivate init(name: String, content: Content) {
        self.init(name: name, filename: nil, mimeType: nil, content: content)
    }
}

/// A multipart body's segments as chunks: bytes as they are, files read piece by piece.
struct SegmentChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let segments: [MultipartFormData.Segment]

    struct AsyncIterator: AsyncIteratorProtocol {
        let segments: [MultipartFormData.Segment]
        var index = 0
        var file: FileChunks.AsyncIterator?

        mutating func next() async throws -> Data? {
            while true {
                if var current = file {
                    let chunk = try await current.next()
                    file = current
                    if let chunk { return chunk }
                    file = nil
                    index += 1
                    continue
                }
                guard index < segments.count else { return nil }
                switch segments[index] {
                case .bytes(let data):
                    index += 1
                    if !data.isEmpty { return data }
                case .file(let url, _):
                    file = FileChunks(url: url).makeAsyncIterator()
                }
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(segments: segments) }
}
