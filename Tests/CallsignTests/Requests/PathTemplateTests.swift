import Callsign
import CallsignTesting
import Foundation
import Testing

@Suite("Path templates and URL rules", .hangGuard)
struct PathTemplateTests {
    @Test(
        "each value fills exactly one segment",
        arguments: [
            ("a/b", "a%2Fb"),
            ("a?b#c", "a%3Fb%23c"),
            ("100%", "100%25"),
            ("two words", "two%20words"),
            ("line\r\nbreak", "line%0D%0Abreak"),
            ("ünï", "%C3%BCn%C3%AF"),
            ("../admin", "..%2Fadmin"),
            ("//evil.example/x", "%2F%2Fevil.example%2Fx"),
            ("a.b-c_d~e", "a.b-c_d~e"),
        ])
    func segmentEncoding(value: String, encoded: String) async throws {
        try await withServer { server, client in
            let response = try await client.get("/anything/users/{id}/profile").parameters(["id": .string(value)]).send()
            #expect(response.status.code == 200)
            #expect(server.requests.last?.rawPath == "/anything/users/\(encoded)/profile")
            #expect(server.requests.last?.pathSegments == ["anything", "users", value, "profile"])
        }
    }

    @Test("dot segments are refused, also when percent-encoded", arguments: [".", "..", "%2e%2e", "%2E", ".%2e"])
    func dotSegments(value: String) async throws {
        try await withServer { server, client in
            let error = await apiError { _ = try await client.get("/anything/{id}").parameters(["id": .string(value)]).send() }
            #expect(error?.code == .invalidRequest)
            #expect(server.requests.isEmpty)
        }
    }

    @Test("a missing, empty or structured path parameter is an error naming it")
    func missingParameter() async throws {
        try await withServer(definitions: DemoAPI.definitions) { server, client in
            let missing = await apiError { try await client.call("UserProfile") }
            #expect(missing?.code == .invalidRequest)
            #expect(missing?.message.contains("\"user_id\"") == true)
            #expect(missing?.apiName == "UserProfile")
            let empty = await apiError { try await client.call("UserProfile", parameters: ["user_id": ""]) }
            #expect(empty?.message.contains("empty") == true)
            let array = await apiError { try await client.call("UserProfile", parameters: ["user_id": [1, 2]]) }
            #expect(array?.message.contains("an array") == true)
            #expect(server.requests.isEmpty)
        }
    }

    @Test("template values may come from the query parameters, and are consumed there too")
    func valueFromQuery() async throws {
        try await withServer { server, client in
            _ = try await client.get("/anything/{id}").query(["id": 5, "x": 1]).send()
            #expect(server.requests.last?.uri == "/anything/5?x=1")
        }
    }

    @Test("literal paths cannot climb out of the base path or name another host")
    func literalPaths() async throws {
        try await withServer(configure: { $0.baseURL = $0.baseURL?.appendingPathComponent("anything/base/") }) {
            server, client in
            let ok = try await client.get("/v1/users").send()
            #expect(ok.request.url?.path == "/anything/base/v1/users")
            for path in ["../admin", "a/../../admin", "//evil.example/x", "a/%2e%2e/b"] {
                let error = await apiError { _ = try await client.get(path).send() }
                #expect(error?.code == .invalidRequest, "\(path)")
            }
            #expect(server.requests.count == 1)
        }
    }

    @Test("the same literal path resolves against whichever base each call has, every time")
    func samePathOtherBases() async throws {
        try await withServer { server, client in
            for round in 0..<3 {
                for base in ["/anything/one/", "/anything/two/"] {
                    var request = Request.get("items/list")
                    request.baseURL = server.url(base)
                    let response = try await client.send(request)
                    #expect(response.request.url?.path == base + "items/list", "round \(round)")
                    #expect(server.requests.last?.rawPath == base + "items/list")
                }
                // No base of its own: the client's.
                let plain = try await client.send(.get("items/list"))
                #expect(plain.request.url?.absoluteString == server.url("/items/list").absoluteString)
                // A refused path is refused again, not served from what was resolved before.
                let error = await apiError { _ = try await client.send(.get("a/../../admin")) }
                #expect(error?.code == .invalidRequest)
            }
            #expect(server.requests.count == 9)
        }
    }

    @Test("a path with a scheme is used as it is; a base with a path must end in /")
    func absoluteAndBaseRules() async throws {
        try await withServer { server, client in
            let absolute = try await client.send(.get(server.url("/anything/abs").absoluteString, parameters: ["a": 1]))
            #expect(absolute.request.url?.absoluteString == server.url("/anything/abs?a=1").absoluteString)

            var request = Request.get("users")
            request.baseURL = server.url("/anything/base")
            let error = await apiError { _ = try await client.send(request) }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message.contains("does not end in") == true)

            let noBase = APIClient(transport: client.transport)
            let missing = await apiError { _ = try await noBase.send(.get("users")) }
            #expect(missing?.message.contains("no base URL") == true)
        }
    }
}
