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
///
/// Archives from browsers' developer tools, Playwright, Charles or Fiddler load as they are: only
/// the members replay serves from are read (`request.method` and `url`, `postData.text` when there
/// is one, `response.status`, `headers` and `content`), so what HAR 1.2 makes optional or a tool
/// adds (`_` members, `comment`, `-1` timings, `redirectURL: null`, `postData.params` without
/// `text`, `httpVersion: "h2"`) changes nothing. An entry that cannot be replayed — no response
/// (status 0), a body the archive does not hold, a body that is not valid base64, more header
/// fields than ``Limits/maximumHeaderFieldCount`` — is left out and listed in
/// ``skippedEntries``, and the others are served:
///
/// ```swift
/// let replay = try HARReplay(contentsOf: chromeExport)
/// for skipped in replay.skippedEntries { print(skipped) }   // "entry 7 has a response body of 5120 bytes …"
/// ```
public final class HARReplay: Sendable {
    /// An entry of the archive that replay leaves out, and why.
    public struct SkippedEntry: Sendable, Hashable, CustomStringConvertible {
        /// Where it is in the archive's `entries`, counted from 1 as a person reads the file.
        public let number: Int
        /// Why it cannot be replayed, as a sentence that names the entry ("entry 3 has no
        /// response (status 0) …"), in the process's language.
        public var message: String { text.description }
        /// The sentence before translation.
        let text: LocalizedMessage

        /// The ``message``.
        public var description: String { message }

        /// Whether both are the same entry, skipped for the same reason.
        public static func == (left: SkippedEntry, right: SkippedEntry) -> Bool {
            left.number == right.number && left.message == right.message
        }

        /// Hashes the number and the message, as `==` compares them.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(number)
            hasher.combine(message)
        }
    }

    private struct Exchange: Sendable {
        var requestBody: String?
        var status: Int
        var headers: [(String, String)]
        var body: Data
    }

    /// Why one entry cannot be replayed.
    private struct Unusable: Error {
        let text: LocalizedMessage

        init(localized text: LocalizedMessage) { self.text = text }
    }

    private let exchanges: [String: [Exchange]]
    private let served = Mutex<[String: Int]>([:])
    private let redaction: Redaction

    /// The entries left out because they cannot be replayed, in the archive's order: the first
    /// ``maximumSkippedEntriesListed`` of them (``skippedEntryCount`` counts them all). Empty
    /// when every entry is served.
    public let skippedEntries: [SkippedEntry]

    /// How many entries are left out, listed or not.
    public let skippedEntryCount: Int

    /// How many skipped entries ``skippedEntries`` lists: 1,000. An archive of a million broken
    /// entries costs a count, not a million sentences.
    public static let maximumSkippedEntriesListed = 1_000

    /// The largest archive file read: 256 MiB. A larger file (or a FIFO, `/dev/zero`) fails
    /// after one byte more than that, never read whole.
    public static let maximumFileSize = 256 * 1024 * 1024

    /// Loads an archive.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/invalidDefinition``) when the file cannot be read,
    ///   is larger than ``maximumFileSize``, is not a HAR archive, or has entries and none of them
    ///   can be replayed.
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
    /// Entries that cannot be replayed are left out and listed in ``skippedEntries``.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/invalidDefinition``) when the bytes are not a HAR
    ///   archive (a JSON object whose `log` holds an `entries` array), or when it has entries and
    ///   none of them can be replayed; the message names the entries and why. An archive with no
    ///   entries at all loads, and serves nothing.
    public init(data: Data, name: String = "archive.har", redaction: Redaction = .default) throws(APIError) {
        let file: HARFile.ReadArchive
        do {
            file = try JSONDecoder().decode(HARFile.ReadArchive.self, from: data)
        } catch {
            throw APIError(
                .invalidDefinition, localized: "\"\(name)\" is not a HAR 1.2 archive: \(Response.describe(error))",
                underlyingError: error)
        }
        self.redaction = redaction
        var exchanges: [String: [Exchange]] = [:]
        var unusable: [SkippedEntry] = []
        var unusableCount = 0
        for (number, entry) in file.log.entries {
            do throws(Unusable) {
                let (key, exchange) = try Self.exchange(entry, number: number, redaction: redaction)
                exchanges[key, default: []].append(exchange)
            } catch {
                unusableCount += 1
                if unusable.count < Self.maximumSkippedEntriesListed { unusable.append(SkippedEntry(number: number, text: error.text)) }
            }
        }
        // Each list holds the first of its kind, so the first of both together are among them.
        let unreadable = file.log.unreadable.map { unreadable in
            SkippedEntry(number: unreadable.number, text: "entry \(unreadable.number) cannot be read: \(unreadable.reason)" as LocalizedMessage)
        }
        let skipped = Array((unusable + unreadable).sorted { $0.number < $1.number }.prefix(Self.maximumSkippedEntriesListed))
        let skippedCount = unusableCount + file.log.unreadableCount
        if exchanges.isEmpty, let first = skipped.first {
            guard skippedCount > 1 else { throw APIError(.invalidDefinition, localized: "\"\(name)\": \(first.text)") }
            let shown = skipped.prefix(3).map(\.message).joined(separator: "; ")
            throw APIError(
                .invalidDefinition,
                localized: "\"\(name)\": none of its \(skippedCount) entries can be replayed: \(shown)\(skippedCount > 3 ? "; …" : "")")
        }
        self.exchanges = exchanges
        self.skippedEntries = skipped
        self.skippedEntryCount = skippedCount
    }

    /// The exchange one entry serves, under its key; or why it cannot be replayed.
    private static func exchange(
        _ entry: HARFile.ReplayEntry, number: Int, redaction: Redaction
    ) throws(Unusable) -> (String, Exchange) {
        guard !entry.request.method.isEmpty else { throw Unusable(localized: "entry \(number) has no request method") }
        let status = entry.response.status
        // 0 is how recorders (Callsign's, browsers') write "no response", -1 how Playwright does: nothing to serve.
        guard status > 0 else {
            throw Unusable(
                localized: "entry \(number) has no response (status \(status)): the request failed or was blocked when it was recorded")
        }
        guard (100...999).contains(status) else {
            throw Unusable(localized: "entry \(number) has status \(status), which is not an HTTP status (100–999)")
        }
        let content = entry.response.content
        let body: Data
        switch content?.encoding {
        case "base64":
            // Not valid base64 is a broken entry, never an empty body replayed as a success.
            guard let decoded = Data(base64Encoded: content?.text ?? "") else {
                throw Unusable(localized: "entry \(number) has a body marked base64 that is not valid base64")
            }
            body = decoded
        case nil, "":
            if let text = content?.text {
                body = Data(text.utf8)
            } else if let size = content?.size, size > 0 {
                // HAR 1.2 lets a tool leave the text out (a body it did not keep): serving an
                // empty body in its place would be an answer the server never gave.
                let bytes = Int(exactly: size).map { String($0) } ?? String(size)
                throw Unusable(
                    localized: "entry \(number) has a response body of \(bytes) bytes that the archive does not hold (no content.text)")
            } else {
                body = Data()
            }
        case let other?:
            throw Unusable(
                localized: "entry \(number) has a body in the encoding \"\(String(other.prefix(40)))\"; a HAR body is text or base64")
        }
        // The body is served as it is; its length and transfer framing are the mock's.
        let pairs = (entry.response.headers ?? [])
            .filter { !["content-length", "transfer-encoding", "content-encoding"].contains($0.name.lowercased()) }
        // Through the field door when the archive is loaded, naming the entry, rather than on the
        // first replay; a field HTTP cannot carry (an HTTP/2 `:status` some exports list) is left out.
        let fields: HTTPFields
        do {
            fields = try FieldReader(direction: .response, code: .invalidDefinition)
                .fields(pairs.lazy.map { (name: $0.name, value: $0.value) }, source: "entry \(number)" as LocalizedMessage, invalid: .drop)
        } catch {
            throw Unusable(localized: error.text)
        }
        let key = Self.key(method: entry.request.method, url: entry.request.url, redaction: redaction)
        return (
            key,
            Exchange(
                requestBody: entry.request.postData?.text, status: status, headers: fields.map { ($0.name.rawName, $0.value) },
                body: body)
        )
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
