public import Foundation
import HTTPTypes

/// Canned answers in front of the transport: the ``WireStage/mocks`` stage, set with
/// ``APIClient/Configuration/mocks``.
///
/// A mocked answer goes through the body consumer, validation, envelopes, decoding, retries, the
/// cache and every middleware exactly like a real one — only the transport is not asked. (It is
/// decompressed where Callsign decompresses answers: with the AsyncHTTPClient transport. The
/// URLSession transport decodes `Content-Encoding` itself, so there a mocked body is taken as
/// already decoded.)
///
/// ```swift
/// let client = APIClient(definitions: definitions, configuration: .init {
///     $0.mocks = Mocks(directory: URL(fileURLWithPath: "Fixtures")) { request in
///         request.apiName == "UserProfile" ? .file("profile.json") : nil
///     }
/// })
/// ```
///
/// With definitions that name mock files (`mock: fixtures/topics.json`), use
/// ``init(definitions:directory:defaultDelay:realRequests:)`` to run a whole app in mock mode;
/// ``init(replaying:realRequests:)`` serves a recorded HAR file back.
public struct Mocks: Sendable {
    /// Decides the mock for a request; `nil` sends it on to the transport (or fails, when real
    /// requests are off).
    public typealias Provider = @Sendable (MockRequest) -> Mock?

    private let provider: Provider
    private let directory: URL?
    private let defaultDelay: Duration
    /// Whether requests without a mock go to the transport. When `false`, they fail with
    /// ``APIError/Code/transport`` naming the request.
    public var realRequests: Bool

    /// Creates mocks.
    ///
    /// - Parameters:
    ///   - directory: where relative mock files are found. Default: the current directory.
    ///   - defaultDelay: the delay of mocks that do not set one. Default none.
    ///   - realRequests: whether requests without a mock go to the transport. Default `true`.
    ///   - provider: the mock for a request, or `nil`.
    public init(directory: URL? = nil, defaultDelay: Duration = .zero, realRequests: Bool = true, provider: @escaping Provider) {
        self.provider = provider
        self.directory = directory
        self.defaultDelay = defaultDelay
        self.realRequests = realRequests
    }

    /// Mock mode from definitions: each API whose definition names a `mock` file is answered
    /// from it; the others go to the transport (or fail, when `realRequests` is `false`).
    public init(definitions: APIDefinitions, directory: URL? = nil, defaultDelay: Duration = .zero, realRequests: Bool = true) {
        let files = Dictionary(uniqueKeysWithValues: definitions.names.compactMap { name in
            definitions[name]?.mock.map { (name, $0) }
        })
        self.init(directory: directory, defaultDelay: defaultDelay, realRequests: realRequests) { request in
            // A definitions file's paths stay inside the mock folder.
            request.apiName.flatMap { files[$0] }.map { Mock.confinedFile($0) }
        }
    }

    /// Answers from a recorded HTTP Archive (see ``HARReplay``): how a recorded session becomes
    /// test fixtures. Requests the archive does not hold fail unless `realRequests` is `true`.
    ///
    /// ```swift
    /// let archive = try HARReplay(contentsOf: sessionFile)
    /// let client = APIClient(configuration: .init { $0.mocks = Mocks(replaying: archive) })
    /// ```
    public init(replaying archive: HARReplay, realRequests: Bool = false) {
        self.init(realRequests: realRequests) { request in archive.mock(for: request, passesThrough: realRequests) }
    }

    /// The answer for `request`, or `nil` to send it to the transport. A mock's file is read up
    /// to `bodyLimit` bytes (the client's ``Limits/maximumResponseBodySize``).
    func answer(_ request: MockRequest, bodyLimit: Int) async throws -> TransportResponse? {
        guard var mock = provider(request) else {
            guard realRequests else {
                throw APIError.notSent(
                    .transport, "no mock for \(request.method) \(Redaction.redact(request.url.absoluteString)), and real requests are off")
            }
            return nil
        }
        if case .sequence(let turns) = mock.answer {
            guard let turn = turns.take() else { throw APIError(.transport, localized: "the mock sequence is empty") }
            mock = Mock(answer: turn.answer, delay: turn.delay ?? mock.delay)
        }
        let delay = mock.delay ?? defaultDelay
        if delay > .zero { try await Task.sleep(for: delay) }
        switch mock.answer {
        case .data(let data, let status, let headers):
            return try Self.response(status: status, headers: headers, body: data)
        case .file(let path, let status, var headers, let confined):
            let folder = directory ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            let fileURL = confined ? try Self.confined(path, in: folder) : path.hasPrefix("/") ? URL(fileURLWithPath: path) : folder.appendingPathComponent(path)
            let data = try FileReader.read(fileURL, limit: bodyLimit) { error in
                APIError(.transport, localized: "the mock file \"\(path)\" cannot be read", underlyingError: error)
            } tooLarge: { limit in
                APIError(.responseTooLarge, localized: "the mock file \"\(path)\" is larger than the limit of \(limit) bytes")
            }
            if !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
                headers.append(("Content-Type", Self.contentType(forExtension: fileURL.pathExtension)))
            }
            return try Self.response(status: status, headers: headers, body: data)
        case .failure(let error):
            throw error
        case .sequence:
            throw APIError(.transport, localized: "a mock sequence cannot contain another sequence")
        }
    }

    static func response(status: Int, headers: [(String, String)], body: Data) throws(APIError) -> TransportResponse {
        // A mock's fields come from a HAR file or a fixture: outside data, through the field door.
        var fields = try FieldReader(direction: .response, code: .invalidResponse)
            .fields(headers.lazy.map { (name: $0.0, value: $0.1) }, source: "the mock response" as LocalizedMessage, invalid: .drop)
        fields[.contentLength] = String(body.count)
        return TransportResponse(head: HTTPResponse(status: try .checked(status), headerFields: fields), body: ResponseBodyStream(data: body))
    }

    /// `path` inside `folder`, or an error when it would lead out of it: an absolute path, a
    /// `..` component, or a symbolic link on the way that points outside.
    static func confined(_ path: String, in folder: URL) throws(APIError) -> URL {
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        guard !path.hasPrefix("/"), !path.contains("\0"), !components.isEmpty, !components.contains("..") else {
            throw APIError(
                .invalidDefinition,
                localized: "the mock file \"\(path)\" is outside the mock folder: give a path relative to it, without \"..\"")
        }
        let base = folder.standardizedFileURL.resolvingSymlinksInPath()
        let file = base.appendingPathComponent(path).standardizedFileURL.resolvingSymlinksInPath()
        guard file.path.hasPrefix(base.path.hasSuffix("/") ? base.path : base.path + "/") else {
            throw APIError(
                .invalidDefinition, localized: "the mock file \"\(path)\" leads out of the mock folder through a symbolic link")
        }
        return file
    }

    static func contentType(forExtension pathExtension: String) -> String {
        switch pathExtension.lowercased() {
        case "json", "har": "application/json"
        case "xml": "application/xml"
        case "txt": "text/plain; charset=utf-8"
        case "html", "htm": "text/html; charset=utf-8"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "yaml", "yml": "application/yaml"
        default: "application/octet-stream"
        }
    }
}
