import Callsign
import CallsignTesting
import Foundation
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

@Suite("Documentation samples")
struct DocumentationSamplesTests {
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

@Suite("Documentation samples: hostile input and security")
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
