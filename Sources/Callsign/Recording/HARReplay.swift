public import Foundation
import HTTPTypes
import Synchronization

/// A recorded HTTP Archive, served back by ``Mocks/init(replaying:realRequests:)``: how a
/// recorded session becomes test fixtures.
///
/// Requests are matched by method and URL (secret query values, redacted when recording, are
/// ignored), and by body when several recorded exchanges share both; exchanges with the same key
/// are served in recorded order, the last one repeating. An unmatched request is an ``APIError``
/// that names it.
///
/// ```swift
/// let replay = try HARReplay(contentsOf: Bundle.module.url(forResource: "session", withExtension: "har")!)
/// let client = APIClient(definitions: definitions, configuration: .init { $0.mocks = Mocks(replaying: replay) })
/// ```
public final class HARReplay: Sendable {
    private struct Exchange: Sendable {
        var requestBody: String?
        var status: Int
        var headers: [(String, String)]
        var body: Data
    }

    private let exchanges: [String: [Exchange]]
    private let served = Mutex<[String: Int]>([:])
    private let redaction: Redaction

    /// The largest archive file read: 256 MiB. A larger file (or a FIFO, `/dev/zero`) fails
    /// after one byte more than that, never read whole.
    public static let maximumFileSize = 256 * 1024 * 1024

    /// Loads an archive.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/invalidDefinition``) when the file cannot be read,
    ///   is larger than ``maximumFileSize``, or is not a HAR 1.2 archive.
    public convenience init(contentsOf url: URL, redaction: Redaction = .default) throws(APIError) {
        let data = try FileReader.read(url, limit: Self.maximumFileSize) { error in
            APIError(.invalidDefinition, localized: "the HAR file \"\(url.lastPathComponent)\" cannot be read", underlyingError: error)
        } tooLarge: { limit in
            APIError(.invalidDefinition, localized: "the HAR file \"\(url.lastPathComponent)\" is larger than \(limit) bytes")
        }
        try self.init(data: data, name: url.lastPathComponent, redaction: redaction)
    }

    /// Reads an archive from its bytes; `name` appears in error messages.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/invalidDefinition``) when the bytes are not a HAR
    ///   1.2 archive.
    public init(data: Data, name: String = "archive.har", redaction: Redaction = .default) throws(APIError) {
        let file: HARFile
        do {
            file = try JSONDecoder().decode(HARFile.self, from: data)
        } catch {
            throw APIError(
                .invalidDefinition, localized: "\"\(name)\" is not a HAR 1.2 archive: \(Response.describe(error))",
                underlyingError: error)
        }
        self.redaction = redaction
        var exchanges: [String: [Exchange]] = [:]
        for (index, entry) in file.log.entries.enumerated() where entry.response.status != 0 {
            // 0 is how a recorder writes "no response"; anything else must be a status HTTP can carry.
            guard (100...999).contains(entry.response.status) else {
                throw APIError(
                    .invalidDefinition,
                    localized: "\"\(name)\": entry \(index + 1) has status \(entry.response.status), which is not an HTTP status (100–999)")
            }
            let body: Data
            switch entry.response.content.encoding {
            case "base64":
                // Not valid base64 is a broken file, never an empty body replayed as a success.
                guard let decoded = Data(base64Encoded: entry.response.content.text ?? "") else {
                    throw APIError(
                        .invalidDefinition, localized: "\"\(name)\": entry \(index + 1) has a body marked base64 that is not valid base64")
                }
                body = decoded
            case nil, "":
                body = Data((entry.response.content.text ?? "").utf8)
            case let other?:
                throw APIError(
                    .invalidDefinition,
                    localized: "\"\(name)\": entry \(index + 1) has a body in the encoding \"\(String(other.prefix(40)))\"; a HAR body is text or base64")
            }
            let headers = entry.response.headers
                .filter { !["content-length", "transfer-encoding", "content-encoding"].contains($0.name.lowercased()) }
                .map { ($0.name, $0.value) }
            // Checked here, through the field door, so a file with too many fields is refused
            // when it is loaded, naming the entry, rather than on the first replay.
            _ = try FieldReader(direction: .response, code: .invalidDefinition)
                .fields(headers.lazy.map { (name: $0.0, value: $0.1) }, source: "\"\(name)\": entry \(index + 1)" as LocalizedMessage, invalid: .drop)
            let key = Self.key(method: entry.request.method, url: entry.request.url, redaction: redaction)
            exchanges[key, default: []].append(
                Exchange(requestBody: entry.request.postData?.text, status: entry.response.status, headers: headers, body: body))
        }
        self.exchanges = exchanges
    }

    /// How many recorded exchanges can be served.
    public var count: Int { exchanges.values.reduce(0) { $0 + $1.count } }

    /// The recorded answer for `request` as a mock; when the archive holds none, `nil` if
    /// `passesThrough`, else a failure that names the request.
    func mock(for request: MockRequest, passesThrough: Bool) -> Mock? {
        let key = Self.key(method: request.method, url: request.url.absoluteString, redaction: redaction)
        guard let candidates = exchanges[key], !candidates.isEmpty else {
            guard !passesThrough else { return nil }
            return .error(
                APIError.notSent(
                    .transport,
                    "the HAR archive has no recorded exchange for \(request.method) \(redaction.redact(url: request.url.absoluteString))"))
        }
        var choices = candidates
        if candidates.count > 1, let body = request.body {
            let text = String(decoding: redaction.redact(body: body, contentType: request.headers["Content-Type"]), as: UTF8.self)
            let sameBody = candidates.filter { $0.requestBody == text }
            if !sameBody.isEmpty { choices = sameBody }
        }
        let turn = served.withLock { served -> Int in
            defer { served[key, default: 0] += 1 }
            return served[key, default: 0]
        }
        let exchange = choices[min(turn, choices.count - 1)]
        return .data(exchange.body, status: exchange.status, headerFields: exchange.headers)
    }

    private static func key(method: String, url: String, redaction: Redaction) -> String {
        "\(method.uppercased()) \(redaction.redact(url: url))"
    }
}
