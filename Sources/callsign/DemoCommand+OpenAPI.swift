import Callsign
import CallsignOpenAPI
import CallsignTesting
import Foundation

extension DemoTour {
    /// An operation of an OpenAPI document, called by its operationId with no generated code.
    mutating func openAPIStep() async throws {
        step("OpenAPI: an operation of an OpenAPI 3.1 document, called by its operationId — no code generation")
        let file = folder.appendingPathComponent("demo-boards.openapi.yaml")
        try FileWriter.write(Data(DemoAPI.openAPIYAML(baseURL: server.baseURL).utf8), to: file)
        let boards = try OpenAPIOperations(contentsOf: file)
        for operation in boards.operations {
            say("\(operation.name): \(operation.method) \(operation.path) — \(operation.summary ?? "")")
        }
        let client = APIClient(definitions: boards.definitions, configuration: OpenAPIOperations.clientConfiguration(.init {
            $0.responses.validators = [boards.responseValidator]
        }))
        let board = try await client.send(boards.request("showBoard", parameters: ["id": 7])).validate().decode(DemoBoard.self)
        sent()
        say("board \(board.id ?? 0): \(board.title) (checked against the document's schema)")
        if let refused = await Self.failure({ () throws(APIError) in _ = try boards.request("showBoard", parameters: ["id": "seven"]) }) {
            say("✗ \(refused.code): \(refused.message) — nothing was sent")
        }
        say("the same from the shell: callsign call showBoard -D \(file.lastPathComponent) -p id=7")
    }
}
