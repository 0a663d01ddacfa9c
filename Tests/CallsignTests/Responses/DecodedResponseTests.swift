import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Synchronization
import Testing

/// The value, status, headers and raw body in one value, for each of the four ways to call.
@Suite("DecodedResponse: the value with its status, headers and raw body", .hangGuard)
struct DecodedResponseTests {
    struct Board: Codable, Sendable, Equatable {
        var id: Int
        var title: String
    }

    enum Boards: Endpoint {
        case show(id: Int)
        var request: Request { .get("boards/{id}", parameters: ["id": .int(id)]) }
        var id: Int { if case .show(let id) = self { id } else { 0 } }
    }

    /// The server's answer for board `id`: created (201) with an ETag and a body whose bytes the
    /// test knows, so the raw body can be compared byte for byte.
    static func body(id: Int) -> Data { Data("{\"title\":\"Balsa \(id)\",  \"id\":\(id)}".utf8) }

    static func serve(_ server: TestServer) {
        server.route("/boards") { request in
            let id = Int(request.pathSegments.last ?? "") ?? 0
            guard id > 0 else { return .json(["error": "no such board"], status: 404) }
            return ServerResponse(
                status: 201, headers: [("Content-Type", "application/json"), ("ETag", "\"board-\(id)\""), ("X-Served-By", "test")],
                body: .data(body(id: id)))
        }
    }

    static let yaml = """
        Board:
          path: boards/{id}
          acceptedStatusCodes: [201]
        Missing:
          path: boards/0
        """

    /// What every way must hand back for board `id`.
    static func check(_ answer: DecodedResponse<Board>, id: Int) {
        #expect(answer.value == Board(id: id, title: "Balsa \(id)"))
        #expect(answer.status.code == 201)
        #expect(answer.headers[.eTag] == "\"board-\(id)\"")
        #expect(answer.headers[HTTPField.Name("X-Served-By")!] == "test")
        #expect(answer.body == body(id: id), "the raw body, byte for byte")
        #expect(answer.response.request.url?.path == "/boards/\(id)")
    }

    @Test("by name, by endpoint value, by builder and by callbacks", arguments: TransportKind.allCases)
    func fourWays(kind: TransportKind) async throws {
        try await withServer(transport: kind, definitions: yamlDefinitions(Self.yaml), configure: { $0.callbacks.delivery = .immediate }) {
            server, client in
            Self.serve(server)
            // 1. By name.
            Self.check(try await client.call("Board", parameters: ["id": 1], as: DecodedResponse<Board>.self), id: 1)
            // 2. By endpoint value.
            Self.check(try await client.send(Boards.show(id: 2)).validate(statusCodes: [201]).decoded(Board.self), id: 2)
            // 3. By builder.
            Self.check(try await client.get("boards/3").accept(statusCodes: [201]).decoded(Board.self), id: 3)
            // 4. By callbacks.
            let delivered = Mutex<DecodedResponse<Board>?>(nil)
            let log = CallbackLog()
            client.request("Board") { c in
                c.parameters = ["id": 4]
                c.nonisolated.success { (answer: DecodedResponse<Board>) in delivered.withLock { $0 = answer } }
                c.nonisolated.failure { error in log.add("failure \(error.code)") }
                c.nonisolated.finished { log.finish() }
            }
            await log.waitUntilFinished()
            #expect(log.all == ["finished"])
            let answer = try #require(delivered.withLock { $0 })
            Self.check(answer, id: 4)
        }
    }

    @Test("the same errors as decode: a refused status, a body that does not decode; map keeps the response")
    func errorsAndMap() async throws {
        try await withServer(definitions: yamlDefinitions(Self.yaml)) { server, client in
            Self.serve(server)
            let missing = await apiError { _ = try await client.call("Missing", as: DecodedResponse<Board>.self) }
            #expect(missing?.code == .unacceptableStatus)
            #expect(missing?.response?.status.code == 404)
            let wrongType = await apiError { _ = try await client.get("boards/5").accept(statusCodes: [201]).decoded([Board].self) }
            #expect(wrongType?.code == .decoding)
            #expect(wrongType?.response?.body == Self.body(id: 5))

            let titles = try await client.get("boards/6").accept(statusCodes: [201]).decoded(Board.self).map(\.title)
            #expect(titles.value == "Balsa 6")
            #expect(titles.headers[.eTag] == "\"board-6\"")
            #expect(titles.source == .network)
        }
    }
}
