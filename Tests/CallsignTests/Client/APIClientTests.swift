import Callsign
import CallsignTesting
import Foundation
import Testing

struct Topic: Decodable, Equatable {
    let id: Int
    let title: String
}

struct Profile: Decodable {
    let id: Int
    let name: String
}

struct Board: Codable, Equatable {
    var id: Int?
    var title: String
}

struct User: Decodable, Equatable {
    let id: Int
    let name: String
}

enum Boards: Endpoint {
    case list
    case show(id: Int)
    case create(title: String)

    static let headers: Headers = ["Accept": "application/json"]

    var request: Request {
        switch self {
        case .list: .get("demo/boards")
        case .show(let id): .get("demo/boards/{id}", parameters: ["id": .int(id)])
        case .create(let title): .post("demo/boards", parameters: ["title": .string(title)])
        }
    }

    var acceptedStatusCodes: StatusCodes? {
        if case .create = self { [201] } else { nil }
    }
}

@Suite("APIClient: the four ways to call", .hangGuard)
struct APIClientTests {
    @Test("by name, with a path template and RFAPI keys", arguments: TransportKind.allCases)
    func callByName(kind: TransportKind) async throws {
        try await withServer(transport: kind, definitions: DemoAPI.definitions) { server, client in
            let topics = try await client.call(
                "TopicListRecommended", parameters: ["page": 2, "page_size": 5], as: [Topic].self)
            #expect(topics.map(\.id) == [6, 7, 8, 9, 10])
            #expect(server.requests.last?.uri == "/demo/api/v2/topics/recommended?page=2&page_size=5")

            let profile = try await client.call("UserProfile", parameters: ["user_id": 42], as: Profile.self)
            #expect(profile.id == 42)
            // The template value is consumed: it is not sent again as a query item.
            #expect(server.requests.last?.uri == "/demo/api/v2/user/42/profile")
        }
    }

    @Test("by endpoint value, with accepted status codes per case")
    func sendEndpoint() async throws {
        try await withServer { server, client in
            let board = try await client.send(Boards.show(id: 7)).validate().decode(Board.self)
            #expect(board == Board(id: 7, title: "Longboard"))
            #expect(server.requests.last?.header("Accept") == "application/json")

            let created = try await client.send(Boards.create(title: "Balsa")).validate().decode(Board.self)
            #expect(created == Board(id: 99, title: "Balsa"))
        }
    }

    @Test("by builder")
    func builder() async throws {
        try await withServer(configure: { $0.responses.envelope = .standard }) { server, client in
            let users = try await client.get("/demo/v1/{room}/users").parameters(["room": "r 1"]).tag("system1")
                .send().decode([User].self)
            #expect(users.map(\.name) == ["Ann", "Bo"])
            #expect(server.requests.last?.rawPath == "/demo/v1/r%201/users")

            // Bytes and text go as they are; other Encodable values as JSON.
            let bytes = Data([0x00, 0xFF, 0x7B])
            let raw = try await client.post("/upload/raw").body(bytes).send().json()
            #expect(raw["bytes"] == 3)
            #expect(raw["crc32"] == .int(Int(TestServer.crc32(bytes))))
            #expect(raw["contentType"] == "application/octet-stream")
            let typed = try await client.put("/upload/png").body(bytes, contentType: "image/png").send().json()
            #expect(typed["contentType"] == "image/png")
            let text = try await client.post("/upload/text").body("Buy balsa").send().json()
            #expect(text["bytes"] == 9)
            #expect(text["contentType"] == "text/plain; charset=utf-8")
            let json = try await client.post("/anything").body(["title": "Balsa"]).send().json()
            #expect(json["json"] == ["title": "Balsa"])
        }
    }
}
