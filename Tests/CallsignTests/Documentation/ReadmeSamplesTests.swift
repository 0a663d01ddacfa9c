import Callsign
import CallsignTesting
import Foundation
import Logging
import Synchronization
import Testing

// The README's samples, compiled and run against the in-process server, so the documentation
// cannot drift from the API.

private enum ReadmeBoards: Endpoint {
    case show(id: Int)
    case create(title: String)

    static let baseURL: URL? = nil  // the README points at sharkywaters.com; here the client's base
    var request: Request {
        switch self {
        case .show(let id): .get("demo/boards/{id}", parameters: ["id": .int(id)])
        case .create(let title): .post("demo/boards", parameters: ["title": .string(title)])
        }
    }
    var acceptedStatusCodes: StatusCodes? { if case .create = self { [201] } else { nil } }
}

@Suite("Documentation samples", .hangGuard)
struct DocumentationSamplesTests {
    @Test("the README's first calls: a GET and a POST, checked and decoded")
    func firstCalls() async throws {
        try await TestServer.withRunning { server in
            // The README's base URL is https://api.example.com/; here the demo API's.
            let client = APIClient(configuration: .init { $0.baseURL = URL(string: server.baseURL.absoluteString + "demo/") })
            let board = try await client.get("boards/7").decode(Board.self)                                // GET, check, decode
            let created = try await client.post("boards").body(Board(title: "Balsa")).decode(Board.self)   // POST a JSON body
            #expect(board == Board(id: 7, title: "Longboard"))
            #expect(created == Board(id: 99, title: "Balsa"))
            #expect(server.requests.last?.header("Content-Type") == "application/json")
            await #expect(throws: APIError.self) { try await client.get("boards/404").decode(Board.self) }
        }
    }

    @Test("the README's four ways to call and its test-server sample")
    func readme() async throws {
        try await TestServer.withRunning { server in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("api-\(UUID().uuidString).yaml")
            try Data(
                """
                DEFAULT:
                  baseURL: \(server.baseURL.absoluteString)demo/
                  pathPrefix: api/v2/
                UserProfile:
                  path: user/{user_id}/profile
                  responseType: object
                TopicListRecommended:
                  path: topics/recommended
                  responseType: objects
                """.utf8
            ).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }

            let client = APIClient(
                definitions: try APIDefinitions(contentsOf: file),
                configuration: .init { $0.baseURL = server.baseURL; $0.responses.envelope = .standard })
            let profile = try await client.call("UserProfile", parameters: ["user_id": 42], as: Profile.self)
            #expect(profile.id == 42)
            let topics = try await client.call(
                "TopicListRecommended", parameters: ["page": 1, "page_size": 20], as: [Topic].self)
            #expect(topics.count == 20)

            let board = try await client.send(ReadmeBoards.show(id: 7)).validate().decode(Board.self)
            #expect(board.id == 7)

            let roomID = "lobby"
            let traceID = "t-1"
            let users = try await client.get("/demo/v1/{room}/users").parameters(["room": .string(roomID)])
                .query(["page": 2]).header("X-Trace", traceID).tag("system1")
                .send().decode([User].self)
            #expect(users.count == 2)

            server.route("/token") { _ in .json(["access_token": "t1"]) }
            _ = try await client.get("/anything/x").query(["q": "a&b"]).send()
            #expect(server.requests.last?.rawQuery == "q=a%26b")
        }
    }
}

@Suite("Documentation samples: hostile input and security", .hangGuard)
struct HostileDocumentationSamplesTests {
    @Test("the README's RawServer sample, and the Limits and cache sign-out samples")
    func samples() async throws {
        try await RawServer.withRunning([.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello")]) { server in
            let client = APIClient(configuration: .init { $0.baseURL = server.baseURL })
            await #expect(throws: APIError.self) { try await client.get("/x").send() }
        }
        let limited = APIClient(configuration: .init {
            $0.limits.maximumHeaderFieldCount = 100
            $0.limits.maximumJSONDepth = 64
        })
        #expect(limited.configuration.limits.maximumJSONDepth == 64)
        let definitions = try APIDefinitions(
            data: Data("A:\n  path: a\n".utf8), format: .yaml, limits: .init { $0.maximumDefinitionNodes = 10_000 })
        #expect(definitions.names.contains("A"))
        let cache = HTTPCache.memory()
        let token = "t"
        try await cache.removeAll(partitionOf: ["Authorization": "Bearer \(token)"])
        try await cache.removeAll()
        var policy = RedirectPolicy.default
        policy.forwardedHeaders = ["X-Request-ID"]
        #expect(policy.forwardedHeaders.contains("X-Request-ID"))
    }
}

/// A token provider like the README's `SessionTokens`.
private struct ReadmeTokens: TokenProvider {
    func initialToken() async throws -> AccessToken { AccessToken("t1") }
    func refreshToken(replacing stale: AccessToken) async throws -> AccessToken { AccessToken("t2") }
}

/// A middleware like the README's `RequestSigner`.
private struct ReadmeSigner: Middleware {
    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        var request = request
        request.headers["X-Signature"] = "signed"
        return try await next(request)
    }
}

@Suite("Documentation samples: the README's cookbook and reference", .hangGuard)
struct CookbookDocumentationSamplesTests {
    @Test("authentication, retry and deadline, configuration groups and the pipeline samples")
    func configurationSamples() async throws {
        try await TestServer.withRunning { server in
            let sessionExpired = Mutex(false)
            let definitions = try APIDefinitions(data: Data("Thing:\n  path: anything/thing\n  needsAuthorization: true\n".utf8), format: .yaml)
            let client = APIClient(definitions: definitions, configuration: .init {
                $0.baseURL = server.baseURL
                $0.common.parameters = { tag in tag == "system1" ? ["app": "surf"] : [:] }
                $0.authentication = .tokens(ReadmeTokens()) { _ in sessionExpired.withLock { $0 = true } }
                $0.insert(ReadmeSigner(), after: .authentication)
                $0.retry = RetryPolicy(maximumAttempts: 4, baseDelay: .milliseconds(200))
                $0.timeouts = .init(attempt: .seconds(10), deadline: .seconds(30))
                $0.timeouts.attempt = .seconds(15)
                $0.responses.decoder.keyDecodingStrategy = .convertFromSnakeCase
                $0.tasks.concurrency = .limited(8)
                $0.observability.logger = Logger(label: "api")
            })
            // The sample's time limits are the README's; the call itself gets generous ones (and
            // the hang guard), so a busy machine cannot turn this test of headers into a test of
            // speed: a fresh-clone run at its busiest start once took over 15 s for this call.
            var relaxed = client.configuration
            relaxed.timeouts = .init(attempt: .seconds(600), deadline: .seconds(600))
            let echo = try await APIClient(definitions: definitions, configuration: relaxed).call("Thing").json()
            #expect(echo["headers"]?["Authorization"] == "Bearer t1")
            #expect(echo["headers"]?["X-Signature"] == "signed")
            #expect(client.configuration.timeouts == .init(attempt: .seconds(15), deadline: .seconds(30)))
            #expect(!sessionExpired.withLock { $0 })
        }
    }

    @Test("the mocks-and-recordings sample: mocks by API name, a HAR recording, and its replay")
    func mocksAndRecordings() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let harFile = folder.appendingPathComponent("session.har")
        let fixtures = folder
        let definitions = try APIDefinitions(
            data: Data("DEFAULT:\n  baseURL: https://api.example.test/\nUserProfile:\n  path: profile\nFlaky:\n  path: flaky\n".utf8),
            format: .yaml)
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.retry = .none
            $0.mocks = Mocks(directory: fixtures, realRequests: false) { request in
                switch request.apiName {
                case "UserProfile": .json(["id": 1, "name": "Ann"])
                case "Flaky": .sequence([.json([:], status: 503), .json(["ok": true])])
                default: nil  // a real request
                }
            }
            $0.observability.recorder = HARRecorder(fileURL: harFile)
        })
        #expect(try await client.call("UserProfile").json()["name"] == "Ann")
        // Later, the recording as fixtures:
        let archive = try HARReplay(contentsOf: harFile)
        let replay = APIClient(definitions: definitions, configuration: .init { $0.mocks = Mocks(replaying: archive) })
        #expect(try await replay.call("UserProfile").json()["name"] == "Ann")
    }
}
