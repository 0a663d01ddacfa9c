import Callsign
import CallsignOpenAPI
import CallsignTesting
import Foundation
import Testing

/// A document with one operation that answers only with events, and one that streams when asked.
private let eventsDocument = """
    openapi: 3.1.0
    info: {title: Prices, version: "1"}
    servers: [{url: "http://127.0.0.1:9/"}]
    paths:
      /prices:
        get:
          operationId: streamPrices
          parameters: [{name: symbol, in: query, schema: {type: string}}]
          responses:
            '200': {description: prices as they change, content: {text/event-stream: {schema: {type: string}}}}
      /completions:
        post:
          operationId: complete
          requestBody: {content: {application/json: {schema: {type: object}}}}
          responses:
            '200':
              description: a completion, whole or streamed
              content:
                application/json: {schema: {type: object}}
                text/event-stream: {schema: {type: string}}
    """

/// Routes for the document: prices as two events (then 204), a completion as JSON or as events.
private func serveEvents(_ server: TestServer) {
    server.route("/prices") { request in
        guard request.header("Last-Event-ID") == nil, server.hits("/prices") == 1 else { return ServerResponse(status: 204) }
        let body = "retry: 10\ndata: 101.5\n\nevent: close\nid: p2\ndata: 102\n\n"
        return ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data(body.utf8)))
    }
    server.route("/completions") { request in
        guard request.header("Accept") == "text/event-stream" else { return .json(["text": "hello"]) }
        let body = "data: hel\n\ndata: lo\n\ndata: [DONE]\n\n"
        return ServerResponse(status: 200, headers: [("Content-Type", "text/event-stream")], body: .data(Data(body.utf8)))
    }
}

@Suite("OpenAPI operations that answer with server-sent events", .hangGuard)
struct OpenAPIEventStreamTests {
    @Test("an operation whose answer is an event stream is marked, asks for one, and is called with events(_:parameters:)")
    func library() async throws {
        var operations = try OpenAPIOperations(data: Data(eventsDocument.utf8), format: .yaml)
        #expect(try operations.operation(named: "streamPrices").eventStream == .only)
        #expect(try operations.operation(named: "complete").eventStream == .optional)
        #expect(try operations.request("streamPrices").headers["Accept"] == "text/event-stream")
        #expect(try operations.request("complete").headers["Accept"] == nil)
        try await TestServer.withRunning { server in
            serveEvents(server)
            operations.baseURL = server.baseURL
            let client = APIClient(definitions: operations.definitions)
            var prices: [ServerSentEvent] = []
            for try await event in try client.events("streamPrices", parameters: ["symbol": "X"]) { prices.append(event) }
            #expect(prices == [ServerSentEvent(data: "101.5"), ServerSentEvent(type: "close", data: "102", id: "p2")])
            #expect(server.requests.first?.rawQuery == "symbol=X")
        }
    }

    @Test("callsign call prints each event's data as it arrives; --stream asks an operation that streams when asked; describe says which")
    func commandLine() async throws {
        try CLIRunner.requireBuilt()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-sse-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("prices.yaml")
        try Data(eventsDocument.utf8).write(to: file)

        let only = try await CLIRunner.run(["describe", "streamPrices", "-D", file.path])
        #expect(only.standardOutput.contains("Answers with server-sent events: callsign call prints"), "\(only.standardOutput)")
        let optional = try await CLIRunner.run(["describe", "complete", "-D", file.path, "--json"])
        #expect(optional.standardOutput.contains("\"eventStream\" : \"optional\"") || optional.standardOutput.contains("\"eventStream\": \"optional\""), "\(optional.standardOutput)")

        try await TestServer.withRunning { server in
            serveEvents(server)
            let base = server.baseURL.absoluteString
            let prices = try await CLIRunner.run(["call", "streamPrices", "-D", file.path, "--base-url", base, "--verbose"])
            #expect(prices.status == 0, "\(prices.standardError)")
            #expect(prices.standardOutput == "101.5\n102\n")
            #expect(prices.standardError.contains("event: close, id p2"), "\(prices.standardError)")
            #expect(server.hits("/prices") == 2, "the GET reconnected after the server's 10 ms retry (raised to 500 ms) and got 204")

            let whole = try await CLIRunner.run(["call", "complete", "-D", file.path, "--base-url", base])
            #expect(whole.standardOutput.contains("hello"), "\(whole.standardError)")
            let streamed = try await CLIRunner.run(["call", "complete", "-D", file.path, "--base-url", base, "--stream"])
            #expect(streamed.status == 0, "\(streamed.standardError)")
            #expect(streamed.standardOutput == "hel\nlo\n[DONE]\n")
            #expect(server.hits("/completions") == 2, "a POST is never sent again")

            let refused = try await CLIRunner.run(["get", base + "prices", "--stream", "--queue-offline"])
            #expect(refused.status == 64, "\(refused.standardError)")
        }
    }
}
