public import Foundation
public import HTTPTypes

/// A transport that answers from mocks and sends everything else to a real transport.
///
/// ```swift
/// let mocks = MockTransport(directory: URL(fileURLWithPath: "Fixtures")) { request in
///     request.apiName == "UserProfile" ? .file("profile.json") : nil
/// }
/// let client = APIClient(definitions: definitions, transport: mocks)
/// ```
///
/// With definitions that name mock files (`mock: fixtures/topics.json`), use
/// ``init(definitions:directory:defaultDelay:fallback:)`` to run a whole app in mock mode.
public final class MockTransport: Transport {
    /// Decides the mock for a request; `nil` sends it to the fallback transport.
    public typealias Provider = @Sendable (MockRequest) -> Mock?

    private let provider: Provider
    private let directory: URL?
    private let defaultDelay: Duration
    private let fallback: (any Transport)?

    /// Creates a mock transport.
    ///
    /// - Parameters:
    ///   - directory: where relative mock files are found. Default: the current directory.
    ///   - defaultDelay: the delay of mocks that do not set one. Default none.
    ///   - fallback: the transport for requests without a mock. Default: the platform's default
    ///     transport; pass `nil` explicitly via ``init(directory:defaultDelay:realRequests:provider:)``
    ///     to make unmocked requests fail.
    ///   - provider: the mock for a request, or `nil`.
    public init(
        directory: URL? = nil, defaultDelay: Duration = .zero, fallback: any Transport = APIClient.defaultTransport,
        provider: @escaping Provider
    ) {
        self.provider = provider
        self.directory = directory
        self.defaultDelay = defaultDelay
        self.fallback = fallback
    }

    /// Creates a mock transport that refuses requests without a mock (`realRequests: false`).
    public init(directory: URL? = nil, defaultDelay: Duration = .zero, realRequests: Bool, provider: @escaping Provider) {
        self.provider = provider
        self.directory = directory
        self.defaultDelay = defaultDelay
        self.fallback = realRequests ? APIClient.defaultTransport : nil
    }

    /// Mock mode from definitions: each API whose definition names a `mock` file is answered
    /// from it; the others go to `fallback` (or fail, when `fallback` is `nil`).
    public convenience init(
        definitions: APIDefinitions, directory: URL? = nil, defaultDelay: Duration = .zero,
        fallback: (any Transport)? = APIClient.defaultTransport
    ) {
        let files = Dictionary(uniqueKeysWithValues: definitions.names.compactMap { name in
            definitions[name]?.mock.map { (name, $0) }
        })
        let provider: Provider = { request in request.apiName.flatMap { files[$0] }.map { Mock.file($0) } }
        if let fallback {
            self.init(directory: directory, defaultDelay: defaultDelay, fallback: fallback, provider: provider)
        } else {
            self.init(directory: directory, defaultDelay: defaultDelay, realRequests: false, provider: provider)
        }
    }

    public func send(_ request: HTTPRequest, body: HTTPBody?) async throws -> TransportResponse {
        let info = CallInfo.current
        let url = URL(string: request.urlString) ?? URL(fileURLWithPath: "/")
        let mockRequest = MockRequest(
            method: request.method.rawValue, url: url, headers: Headers(request.headerFields),
            body: try await body?.collect(), apiName: info?.apiName, endpoint: info?.endpoint, tag: info?.tag)
        guard var mock = provider(mockRequest) else {
            guard let fallback else {
                throw APIError(.transport, "no mock for \(request.method.rawValue) \(Redaction.redact(url.absoluteString)), and real requests are off")
            }
            return try await fallback.send(request, body: body)
        }
        if case .sequence(let turns) = mock.answer {
            guard let turn = turns.take() else { throw APIError(.transport, "the mock sequence is empty") }
            mock = Mock(answer: turn.answer, delay: turn.delay ?? mock.delay)
        }
        let delay = mock.delay ?? defaultDelay
        if delay > .zero { try await Task.sleep(for: delay) }
        switch mock.answer {
        case .data(let data, let status, let headers):
            return try Self.response(status: status, headers: headers, body: data)
        case .file(let path, let status, var headers):
            let fileURL = path.hasPrefix("/") ? URL(fileURLWithPath: path) : (directory ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).appendingPathComponent(path)
            let data: Data
            do {
                data = try Data(contentsOf: fileURL)
            } catch {
                throw APIError(.transport, "the mock file \"\(path)\" cannot be read", underlyingError: error)
            }
            if !headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
                headers["Content-Type"] = Self.contentType(forExtension: fileURL.pathExtension)
            }
            return try Self.response(status: status, headers: headers, body: data)
        case .failure(let error):
            throw error
        case .sequence:
            throw APIError(.transport, "a mock sequence cannot contain another sequence")
        }
    }

    static func response(status: Int, headers: [String: String], body: Data) throws(APIError) -> TransportResponse {
        var fields = HTTPFields()
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            if let name = HTTPField.Name(name), HTTPField.isValidValue(value) { fields.append(HTTPField(name: name, value: value)) }
        }
        fields[.contentLength] = String(body.count)
        return TransportResponse(head: HTTPResponse(status: try .checked(status), headerFields: fields), body: ResponseBodyStream(data: body))
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
