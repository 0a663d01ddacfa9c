@testable import Callsign
import CallsignSQLite
import CallsignTesting
import Foundation
import HTTPTypes
import Logging
import Testing

/// One secret of each kind, each a sentinel no output may contain. The echo server sends every
/// request back in its body, so a secret the client sent comes back to it from outside too.
private enum Sentinel {
    static let token = "SENTINEL-bearer-7f3a9c"
    static let password = "SENTINEL-pass-51d0"
    static let apiKey = "SENTINEL-key-e28b"
    static let query = "SENTINEL-query-c4d1"
    static let field = "SENTINEL-field-90aa"
    static let all = [token, password, apiKey, query, field]

    static func expectAbsent(_ text: String, in place: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for sentinel in all {
            #expect(!text.contains(sentinel), "\(place) holds \(sentinel)", sourceLocation: sourceLocation)
        }
    }

    static func expectAbsent(fromFilesIn folder: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            let bytes = try Data(contentsOf: folder.appendingPathComponent(name))
            for sentinel in all {
                let found = bytes.range(of: Data(sentinel.utf8)) != nil
                #expect(!found, "\(name) holds \(sentinel)", sourceLocation: sourceLocation)
            }
        }
    }
}

private func dumped(_ value: Any) -> String {
    var text = ""
    dump(value, to: &text)
    return text
}

@Suite("Secrets never leave: a sentinel in every secret, searched for in every output", .hangGuard)
struct SentinelTests {
    @Test("logs, cURL, errors, HAR (response bodies included), cache and queue files, dump and description")
    func noSentinelAnywhere() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-sentinel-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let handler = CapturingLogHandler()
        let recorder = HARRecorder(fileURL: folder.appendingPathComponent("session.har"))
        let queue = SQLiteOfflineQueue(url: folder.appendingPathComponent("queue.sqlite"))
        let cache = HTTPCache(storage: SQLiteCacheStorage(directory: folder))

        try await TestServer.withRunning { server in
            server.route("/echo-envelope") { request in
                .json(["code": 1, "msg": .string("rejected: \(request.header("Authorization") ?? "")")])
            }
            let yaml = """
                DEFAULT:
                  baseURL: \(server.baseURL.absoluteString)
                  needsAuthorization: true
                  headers:
                    X-Api-Key: \(Sentinel.apiKey)
                Echo:
                  method: POST
                  path: anything/echo
                  contentType: json
                Cached:
                  path: cache/max-age/600/sentinel
                EnvelopeEcho:
                  path: echo-envelope
                  envelope: true
                """
            var definitions = try APIDefinitions(data: Data(yaml.utf8), format: .yaml)
            definitions.defaultDefinition.baseURL = server.baseURL
            let client = APIClient(definitions: definitions, configuration: .init {
                $0.observability.logger = Logger(label: "sentinel") { _ in handler }
                $0.authentication = .bearer(Sentinel.token)
                $0.cache = cache
                $0.offline.queue = queue
                $0.retry = .none
                $0.observability.recorder = recorder
            })

            // An echo: every secret goes out and comes back in the body.
            let echo = try await client.call(
                "Echo", parameters: ["password": .string(Sentinel.password), "client_secret": .string(Sentinel.field), "access_token": .string(Sentinel.query)])
            #expect(String(decoding: echo.body, as: UTF8.self).contains(Sentinel.token), "the echo really carries the secret")
            Sentinel.expectAbsent(dumped(echo), in: "dump(Response)")
            Sentinel.expectAbsent(dumped(echo.request), in: "dump(Request)")
            Sentinel.expectAbsent("\(echo.request)", in: "Request.description")
            Sentinel.expectAbsent(String(reflecting: echo.request), in: "Request.debugDescription")

            // A cached answer, stored under the token's partition.
            _ = try await client.call("Cached", parameters: ["access_token": .string(Sentinel.query)])

            // An error whose message quotes the server, which quotes the secret.
            let envelopeError = await apiError { _ = try await client.call("EnvelopeEcho") }
            let error = try #require(envelopeError)
            #expect(error.message.contains(Sentinel.token), "the server really echoed it")
            Sentinel.expectAbsent(error.description, in: "APIError.description")
            Sentinel.expectAbsent(error.localizedDescription, in: "APIError.localizedDescription")
            Sentinel.expectAbsent(dumped(error), in: "dump(APIError)")

            // cURL.
            var request = Request.post(server.url("/anything/echo?access_token=\(Sentinel.query)").absoluteString, parameters: ["password": .string(Sentinel.password)])
            request.headers["Authorization"] = "Bearer \(Sentinel.token)"
            request.headers["X-Api-Key"] = Sentinel.apiKey
            Sentinel.expectAbsent(try await client.curlCommand(for: request).text, in: "cURL")

            // The offline queue: the server is unreachable, the request waits on disk.
            let offline = APIClient(definitions: definitions, configuration: .init {
                $0.baseURL = URL(string: "http://127.0.0.1:9/")
                $0.authentication = .bearer(Sentinel.token)
                $0.offline.queue = queue
                $0.retry = .none
            })
            var queued = Request.post("http://127.0.0.1:9/notes", parameters: ["note": .string("hello")])
            queued.storePolicy = .offline
            queued.needsAuthorization = true
            let queuedError = await apiError { _ = try await offline.send(queued) }
            #expect(queuedError?.code == .queuedOffline)
            for item in try await queue.list(.pending) {
                Sentinel.expectAbsent(dumped(item), in: "dump(QueuedRequest)")
            }

            // Values that hold credentials, shown every way Swift shows a value.
            let authentications: [Authentication] = [
                .bearer(Sentinel.token), .basic(username: "ann", password: Sentinel.password),
                .headers(["X-Api-Key": Sentinel.apiKey], parameters: ["api_key": .string(Sentinel.apiKey)]),
            ]
            for authentication in authentications {
                Sentinel.expectAbsent("\(authentication) \(String(reflecting: authentication)) \(dumped(authentication))", in: "Authentication")
            }
            let headers: Headers = ["Authorization": "Bearer \(Sentinel.token)", "X-Api-Key": Sentinel.apiKey]
            Sentinel.expectAbsent("\(headers) \(String(reflecting: headers)) \(dumped(headers))", in: "Headers")
            let cachedEntry = CachedResponse(
                url: "http://x/", partition: "p", method: "GET", varyingHeaders: [:], status: 200,
                headers: [.setCookie: "s=\(Sentinel.token)", .authorization: "Bearer \(Sentinel.token)"], body: Data(),
                requestTime: Date(), responseTime: Date())
            Sentinel.expectAbsent("\(cachedEntry) \(dumped(cachedEntry))", in: "CachedResponse")
        }

        Sentinel.expectAbsent(handler.lines.withLock { $0.joined(separator: "\n") }, in: "logs")
        try Sentinel.expectAbsent(fromFilesIn: folder)
        let har = try Data(contentsOf: folder.appendingPathComponent("session.har"))
        #expect(String(decoding: har, as: UTF8.self).contains("REDACTED"))
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent("session.har").path)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0, "the HAR file is readable by others: \(String(mode, radix: 8))")
    }

    @Test("multipart and form bodies are redacted by field name")
    func formBodies() {
        let boundary = "XyZ"
        let body = Data("--XyZ\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\n\(Sentinel.password)\r\n--XyZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n--XyZ--\r\n".utf8)
        let redacted = String(decoding: Redaction.default.redact(body: body, contentType: "multipart/form-data; boundary=\(boundary)"), as: UTF8.self)
        #expect(!redacted.contains(Sentinel.password))
        #expect(redacted.contains("hello"))
        #expect(redacted.contains("REDACTED"))
        let form = Data("a=1&password=\(Sentinel.password)".utf8)
        #expect(!String(decoding: Redaction.default.redact(body: form, contentType: "application/x-www-form-urlencoded"), as: UTF8.self).contains(Sentinel.password))
    }

    @Test("signed-URL parameters are secret by default; URLs inside error messages are redacted")
    func signedURLs() {
        let url = "https://bucket.example/file?X-Amz-Signature=\(Sentinel.query)&X-Amz-Credential=c&sig=\(Sentinel.query)"
        #expect(!Redaction.default.redact(url: url).contains(Sentinel.query))
        let error = APIError(.redirect, "the server redirected to \(url), which is refused")
        #expect(!error.description.contains(Sentinel.query))
    }
}

@Suite("HAR recording follows the client's redaction", .hangGuard)
struct HARRedactionTests {
    @Test("a header the client marks secret, and secrets in a Location, never reach the archive")
    func clientRedaction() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-har-\(UUID().uuidString).har")
        defer { try? FileManager.default.removeItem(at: file) }
        try await TestServer.withRunning { server in
            server.route("/moved") { _ in
                ServerResponse(status: 302, headers: [("Location", "/landed?access_token=SENTINEL-location-1")])
            }
            let client = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.observability.redaction.secretHeaders.insert("x-tenant-secret")
                $0.redirects = .none
                $0.observability.recorder = HARRecorder(fileURL: file)
            })
            _ = try await client.get("/moved").header("X-Tenant-Secret", "SENTINEL-tenant-2").send()
        }
        let archive = String(decoding: try Data(contentsOf: file), as: UTF8.self)
        #expect(!archive.contains("SENTINEL-tenant-2"))
        #expect(!archive.contains("SENTINEL-location-1"))
        #expect(archive.contains("access_token=REDACTED"))
    }
}
