@testable import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

private struct ValidationFailure: Decodable, Sendable, Equatable {
    let title: String
    let errors: [String: String]
}

private struct ServerFault: Decodable, Sendable, Equatable {
    let incident: String
}

private func problem(_ text: String, status: Int) -> ServerResponse {
    ServerResponse(status: status, headers: [("Content-Type", "application/problem+json; charset=utf-8")], body: .data(Data(text.utf8)))
}

@Suite("Problem details (RFC 9457) and typed error bodies", .hangGuard)
struct ProblemDetailsTests {
    @Test("a problem+json 422 becomes a decoded ProblemDetails on the error, its title and detail in the message")
    func unprocessableBecomesProblem() async throws {
        try await withServer { server, client in
            server.route("/users") { _ in
                problem(
                    #"{"type": "https://example.com/probs/taken", "title": "Name taken", "status": 422, "detail": "ada is already registered", "instance": "/users/ada", "errors": {"name": "taken"}, "retryable": false}"#,
                    status: 422)
            }
            let error = await apiError { _ = try await client.post("/users").parameters(["name": "ada"]).send().validate() }
            #expect(error?.code == .unacceptableStatus)
            let details = try #require(error?.problem)
            #expect(details.type == "https://example.com/probs/taken")
            #expect(details.title == "Name taken")
            #expect(details.status == 422)
            #expect(details.detail == "ada is already registered")
            #expect(details.instance == "/users/ada")
            #expect(details.extensions == ["errors": ["name": "taken"], "retryable": false])
            #expect(error?.message.contains("it reported Name taken: ada is already registered") == true, "\(error?.message ?? "")")
            #expect(error?.serverError(as: ValidationFailure.self) == ValidationFailure(title: "Name taken", errors: ["name": "taken"]))
        }
    }

    @Test("hostile problems: wrong member types are ignored, deep, huge and non-object bodies give no problem and no crash")
    func hostileProblems() async throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let huge = #"{"title": ""# + String(repeating: "x", count: ProblemDetails.maximumSize) + #""}"#
        let longTitle = #"{"title": ""# + String(repeating: "y", count: 10_000) + #"", "status": 409}"#
        try await withServer(configure: { $0.limits.maximumJSONDepth = 16 }) { server, client in
            server.route("/wrong") { _ in problem(#"{"type": 7, "title": ["no"], "status": "422", "detail": null, "instance": {}, "x": 1}"#, status: 400) }
            server.route("/deep") { _ in problem(#"{"title": "deep", "nested": "# + deep + "}", status: 400) }
            server.route("/huge") { _ in problem(huge, status: 500) }
            server.route("/array") { _ in problem("[1, 2, 3]", status: 400) }
            server.route("/broken") { _ in problem(#"{"title": "unterminated"#, status: 400) }
            server.route("/long") { _ in problem(longTitle, status: 409) }
            server.route("/status") { _ in problem(#"{"title": "odd", "status": 99999999999}"#, status: 400) }

            let wrong = await apiError { _ = try await client.get("/wrong").send().validate() }
            #expect(wrong?.problem == ProblemDetails(extensions: ["x": 1]), "every member of the wrong type is ignored, as RFC 9457 says")
            for path in ["/deep", "/huge", "/array", "/broken"] {
                let error = await apiError { _ = try await client.get(path).send().validate() }
                #expect(error?.code == .unacceptableStatus, "\(path)")
                #expect(error?.problem == nil, "\(path)")
                #expect(error?.serverError(as: ValidationFailure.self) == nil, "\(path)")
            }
            let long = await apiError { _ = try await client.get("/long").send().validate() }
            #expect(long?.problem?.title?.count == 10_000)
            #expect(long?.problem?.status == 409)
            #expect((long?.message.count ?? .max) < 600, "the message quotes at most 300 characters of the title")
            let status = await apiError { _ = try await client.get("/status").send().validate() }
            #expect(status?.problem?.status == nil && status?.problem?.title == "odd")
        }
    }

    @Test("a problem is read only from problem+json with an error status")
    func onlyProblemJSON() async throws {
        try await withServer { server, client in
            server.route("/plain") { _ in .json(["title": "not a problem"], status: 400) }
            server.route("/ok") { _ in problem(#"{"title": "fine"}"#, status: 200) }
            let plain = await apiError { _ = try await client.get("/plain").send().validate() }
            #expect(plain?.code == .unacceptableStatus && plain?.problem == nil)
            let ok = try await client.get("/ok").send()
            #expect(ok.problem == nil)
        }
    }

    @Test("a definition's errorClass (file and code) names the type a failed call's body decodes into, per status or range")
    func errorClasses() async throws {
        let yaml = """
            CreateUser:
              path: users
              method: POST
              errorClass: {"422": ValidationFailure, "5xx": ServerFault, "default": ProblemDetails}
            Plain:
              path: plain
              errorClass: ServerFault
            """
        try await withServer(
            definitions: yamlDefinitions(yaml),
            configure: {
                $0.responses.classes.register(ValidationFailure.self)
                $0.responses.classes.register(ServerFault.self)
            }
        ) { server, client in
            let status = ManagedStatus()
            server.route("/users") { _ in
                switch status.next() {
                case 0: problem(#"{"title": "Invalid", "errors": {"name": "empty"}}"#, status: 422)
                case 1: .json(["incident": "db-7"], status: 503)
                default: problem(#"{"title": "Gone", "status": 410}"#, status: 410)
                }
            }
            server.route("/plain") { _ in .json(["incident": "x"], status: 500) }

            let invalid = await apiError { _ = try await client.call("CreateUser", parameters: ["name": ""]) }
            #expect(invalid?.serverError as? ValidationFailure == ValidationFailure(title: "Invalid", errors: ["name": "empty"]))
            let fault = await apiError { _ = try await client.call("CreateUser", parameters: ["name": "a"]) }
            #expect(fault?.serverError as? ServerFault == ServerFault(incident: "db-7"))
            let gone = await apiError { _ = try await client.call("CreateUser", parameters: ["name": "b"]) }
            #expect((gone?.serverError as? ProblemDetails)?.title == "Gone")
            let plain = await apiError { _ = try await client.call("Plain") }
            #expect(plain?.serverError as? ServerFault == ServerFault(incident: "x"))
        }

        // In code, the narrowest entry wins.
        let classes = ErrorClasses([
            .init(statuses: StatusCodes(ranges: [400...499]), className: "ClientFault"),
            .init(statuses: [422], className: "ValidationFailure"),
        ])
        #expect(classes.className(for: 422) == "ValidationFailure")
        #expect(classes.className(for: 404) == "ClientFault")
        #expect(classes.className(for: 500) == nil)
        let definition = APIDefinition(path: "users", errorClasses: classes)
        #expect(definition.merged(over: APIDefinition()).request().errorClasses == classes)
    }

    @Test("a malformed errorClass in a file is refused with the key")
    func malformedErrorClass() throws {
        for value in [#"{"42x": A}"#, #"{"422": 7}"#, "7", #""""#] {
            let yaml = "CreateUser:\n  path: users\n  errorClass: \(value)\n"
            do {
                _ = try APIDefinitions(data: Data(yaml.utf8), format: .yaml)
                Issue.record("\(value) was accepted")
            } catch {
                #expect(error.code == .invalidDefinition && error.key == "errorClass", "\(value): \(error)")
            }
        }
    }

    @Test("the CLI prints the problem's title and detail in its error line, made safe for the terminal")
    func commandLineErrorLine() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            server.route("/users") { _ in
                problem(#"{"title": "Name taken", "detail": "ada is \u001b[31mregistered"}"#, status: 422)
            }
            let result = try await CLIRunner.run(["post", server.baseURL.absoluteString + "users", "name=ada"])
            #expect(result.status != 0)
            #expect(result.standardError.contains("it reported Name taken: ada is"), "\(result.standardError)")
            #expect(!result.standardError.contains("\u{1B}[31m"), "the escape is neutralized by the terminal sanitizer")
        }
    }
}

/// Hands out 0, 1, 2, … to the server's handler.
private final class ManagedStatus: Sendable {
    private let counter = Mutex(0)
    func next() -> Int { counter.withLock { value in defer { value += 1 }; return value } }
}
