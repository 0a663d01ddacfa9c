import Callsign
import CallsignTesting
import Foundation
import Testing

@testable import callsign

/// The body that shows what a re-serializing printer would change: key order, big and
/// trailing-zero numbers, escapes.
private let faithfulBody = #"{"n":12345678901234567890,"x":1.10,"b":2,"a":1,"s":"caf\u00e9"}"#

@Suite("callsign output: exact bytes, pretty-printing, exit statuses", .hangGuard)
struct OutputTests {
    /// A server with the routes these tests need, and a definitions file for it.
    private func withFixture(_ body: (TestServer, URL) async throws -> Void) async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            server.route("/exact") { _ in .text(faithfulBody, contentType: "application/json") }
            server.route("/html") { _ in .text("<html>maintenance</html>", contentType: "text/html") }
            server.route("/not-utf8") { _ in
                ServerResponse(headers: [("Content-Type", "application/json")], body: .data(Data([0x22, 0xFF, 0x22])))
            }
            server.route("/missing") { _ in .json(["error": "no such thing"], status: 404) }
            let yaml = """
                DEFAULT:
                  baseURL: \(server.baseURL.absoluteString)
                Exact:
                  path: exact
                  responseType: object
                Html:
                  path: html
                  responseType: object
                NotUTF8:
                  path: not-utf8
                  responseType: object
                Missing:
                  path: missing
                Slow:
                  path: delay/5
                """
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-out-\(UUID().uuidString).yaml")
            try Data(yaml.utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            try await body(server, file)
        }
    }

    @Test("piped output is the body byte for byte; --pretty re-indents without changing a token; colours only when asked")
    func exactOutput() async throws {
        try await withFixture { server, file in
            let piped = try await CLIRunner.run(["call", "Exact", "--definitions", file.path])
            #expect(piped.status == 0)
            #expect(piped.standardOutput == faithfulBody)
            #expect(server.requests.last?.header("Accept") == "application/json", "a definition that expects an object asks for JSON")

            let pretty = try await CLIRunner.run(["call", "Exact", "--definitions", file.path, "--pretty"])
            #expect(
                pretty.standardOutput
                    == "{\n  \"n\": 12345678901234567890,\n  \"x\": 1.10,\n  \"b\": 2,\n  \"a\": 1,\n  \"s\": \"caf\\u00e9\"\n}\n")
            #expect(!pretty.standardOutput.contains("\u{1B}["), "no colours when stdout is not a terminal")

            let colored = try await CLIRunner.run(["call", "Exact", "--definitions", file.path, "--pretty", "--color", "always"])
            #expect(colored.standardOutput.contains("\u{1B}[34;1m\"n\"\u{1B}[0m"))

            let both = try await CLIRunner.run(["call", "Exact", "--definitions", file.path, "--pretty", "--raw"])
            #expect(both.status == 64)
        }
    }

    @Test("a body that is not the declared JSON exits 76; --include still shows it")
    func declaredTypes() async throws {
        try await withFixture { _, file in
            let html = try await CLIRunner.run(["call", "Html", "--definitions", file.path])
            #expect(html.status == 76)
            #expect(html.standardOutput.isEmpty)
            #expect(html.standardError.contains("unacceptableContentType"))
            let shown = try await CLIRunner.run(["call", "Html", "--definitions", file.path, "--include"])
            #expect(shown.status == 76)
            #expect(shown.standardOutput.contains("<html>maintenance</html>"))

            let broken = try await CLIRunner.run(["call", "NotUTF8", "--definitions", file.path])
            #expect(broken.status == 76)
            #expect(broken.standardError.contains("not valid UTF-8 JSON"))
        }
    }

    @Test("a status the API does not accept: 22 with the body, --fail without it, --no-fail exits 0")
    func failModes() async throws {
        try await withFixture { _, file in
            let withBody = try await CLIRunner.run(["call", "Missing", "--definitions", file.path])
            #expect(withBody.status == 22)
            #expect(withBody.standardOutput.contains("no such thing"))
            let silent = try await CLIRunner.run(["call", "Missing", "--definitions", file.path, "--fail"])
            #expect(silent.status == 22)
            #expect(silent.standardOutput.isEmpty)
            let accepted = try await CLIRunner.run(["call", "Missing", "--definitions", file.path, "--no-fail"])
            #expect(accepted.status == 0)
            #expect(accepted.standardOutput.contains("no such thing"))
        }
    }

    @Test("scripts can tell failures apart: refused 7, timeout 28, invalid input 65")
    func exitStatuses() async throws {
        try await withFixture { _, file in
            let slow = try await CLIRunner.run(["call", "Slow", "--definitions", file.path, "--timeout", "0.2", "--retry", "1"])
            #expect(slow.status == 28)

            let unknown = try await CLIRunner.run(["call", "Exactt", "--definitions", file.path])
            #expect(unknown.status == 65)

            let broken = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-bad-\(UUID().uuidString).yaml")
            try Data("Thing: [unclosed\n".utf8).write(to: broken)
            defer { try? FileManager.default.removeItem(at: broken) }
            let invalid = try await CLIRunner.run(["call", "Thing", "--definitions", broken.path])
            #expect(invalid.status == 65)

            // A port held without listening refuses, and no parallel test can take it meanwhile.
            let refusing = try RefusingPort()
            defer { refusing.release() }
            let refused = try await CLIRunner.run([
                "call", "Exact", "--definitions", file.path, "--retry", "1", "--base-url", "http://127.0.0.1:\(refusing.port)/",
            ])
            #expect(refused.status == 7)
        }
    }

    @Test("--help lists the exit statuses")
    func helpTable() async throws {
        try CLIRunner.requireBuilt()
        let help = try await CLIRunner.run(["--help"])
        for line in ["22  the status is not one the API accepts", "28  a timeout or deadline passed", "76  the response is not what"] {
            #expect(help.standardOutput.contains(line), "missing \(line)")
        }
        // Help is wrapped at 80 columns: a longer line of the table would be broken mid-sentence.
        for line in callsign.ExitStatus.table.split(separator: "\n") {
            #expect(line.count <= 80, "\(line)")
        }
    }
}

@Suite("callsign input: stdin, JSON bodies, methods, output files, tokens, default definitions", .hangGuard)
struct InputTests {
    @Test("--body @- streams stdin; --json sends JSON as written; -X changes the method; -o writes the body to a file")
    func bodiesAndOutput() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            try await withTemporaryFolder("callsign-in") { folder in
                try Data("Echo:\n  path: \(server.url("/anything/echo").absoluteString)\n  method: POST\n".utf8)
                    .write(to: folder.appendingPathComponent("callsign.yaml"))

                // No -D: callsign.yaml in the working folder.
                let piped = try await CLIRunner.run(["call", "Echo", "--body", "@-"], input: Data("from stdin".utf8), directory: folder)
                #expect(piped.status == 0, "\(piped.standardError)")
                #expect(server.requests.last?.body == Data("from stdin".utf8))

                let json = #"{"n":12345678901234567890,"b":2,"a":1}"#
                let sent = try await CLIRunner.run(["call", "Echo", "--json", json, "-X", "put"], directory: folder)
                #expect(sent.status == 0, "\(sent.standardError)")
                #expect(server.requests.last?.method == "PUT")
                #expect(server.requests.last?.body == Data(json.utf8), "sent byte for byte")
                #expect(server.requests.last?.header("Content-Type") == "application/json")

                let notJSON = try await CLIRunner.run(["call", "Echo", "--json", "{oops"], directory: folder)
                #expect(notJSON.status == 65)

                let file = folder.appendingPathComponent("out.json")
                let saved = try await CLIRunner.run(["call", "Echo", "--json", "[1]", "-o", file.path], directory: folder)
                #expect(saved.status == 0)
                #expect(saved.standardOutput.isEmpty)
                #expect(try JSONValue(parsing: Data(contentsOf: file))["method"] == "POST")

                let elsewhere = try await CLIRunner.run(["call", "Echo"], environment: ["CALLSIGN_DEFINITIONS": ""], directory: FileManager.default.temporaryDirectory)
                #expect(elsewhere.status == 65)
                #expect(elsewhere.standardError.contains("CALLSIGN_DEFINITIONS"))
            }
        }
    }

    @Test("--bearer @FILE and --bearer-env NAME keep tokens out of the command line")
    func tokens() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            try await withTemporaryFolder("callsign-tok") { folder in
                let definitions = folder.appendingPathComponent("api.yaml")
                try Data("Echo:\n  path: \(server.url("/anything/echo").absoluteString)\n".utf8).write(to: definitions)
                let tokenFile = folder.appendingPathComponent("token")
                try Data("from-file\n".utf8).write(to: tokenFile)

                let fromFile = try await CLIRunner.run(["call", "Echo", "-D", definitions.path, "--bearer", "@\(tokenFile.path)"])
                #expect(fromFile.status == 0, "\(fromFile.standardError)")
                #expect(server.requests.last?.header("Authorization") == "Bearer from-file")

                let fromEnvironment = try await CLIRunner.run(
                    ["call", "Echo", "-D", definitions.path, "--bearer-env", "MY_TOKEN"], environment: ["MY_TOKEN": "from-env"])
                #expect(fromEnvironment.status == 0)
                #expect(server.requests.last?.header("Authorization") == "Bearer from-env")

                let unset = try await CLIRunner.run(["call", "Echo", "-D", definitions.path, "--bearer-env", "NOT_SET_ANYWHERE"])
                #expect(unset.status == 64)
            }
        }
    }
}
