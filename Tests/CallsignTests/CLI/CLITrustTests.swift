import Callsign
import CallsignTesting
import Foundation
import Testing

@testable import callsign

/// The command line's doors: what it prints on a terminal, where its credentials go, how it
/// reads pins, many `-H` options and JSON numbers.
@Suite("callsign trust: terminal text, credentials, pins, many -H, numbers", .hangGuard)
struct CLITrustTests {
    // MARK: - Terminal

    static let hostile = "ok\u{1B}[2J\u{1B}]0;owned\u{07}\ncallsign: forged\r\u{9B}31m\u{202E}txt.exe\u{7F}"

    @Test("one sanitizer: every control character and bidi override shown escaped, never obeyed")
    func sanitizer() {
        let line = TerminalText.line(Self.hostile)
        #expect(line == "ok\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\ncallsign: forged\\r\\u{9b}31m\\u{202e}txt.exe\\u{7f}")
        #expect(!line.unicodeScalars.contains { TerminalText.escapesInLine($0) })
        #expect(TerminalText.line("plain text, 中文, é") == "plain text, 中文, é")
        for value in Array(0x00...0x1F) + Array(0x7F...0x9F) + Array(0x202A...0x202E) + Array(0x2066...0x2069) {
            guard let scalar = Unicode.Scalar(UInt32(value)) else { continue }
            #expect(!TerminalText.line("a\(Character(scalar))b").unicodeScalars.contains(scalar), "U+\(String(value, radix: 16))")
        }
        // A body keeps its lines (LF, TAB, CRLF) and loses everything else; binary is not shown.
        let body = TerminalText.body(Data("line 1\r\n\tline 2\u{1B}]0;t\u{07}\rX\u{85}\n".utf8))
        #expect(body == .text(Data("line 1\r\n\tline 2\\u{1b}]0;t\\u{7}\\rX\\u{85}\n".utf8)))
        #expect(TerminalText.body(Data("{\"a\": 1}".utf8)) == .text(Data("{\"a\": 1}".utf8)))
        #expect(TerminalText.body(Data([0x89, 0x50, 0x4E, 0x47, 0x00, 0x01])) == .binary(count: 6))
        #expect(TerminalText.body(Data([0x41, 0xFF, 0x42])) == .binary(count: 3))
    }

    @Test("an OpenAPI summary, an error naming a file and a response on a terminal cannot drive the terminal")
    func terminalCommands() async throws {
        try CLIRunner.requireBuilt()
        try await withTemporaryFolder("cli-terminal") { folder in
            let document: JSONValue = [
                "openapi": "3.0.3", "info": ["title": "t", "version": "1"],
                "servers": [["url": "http://127.0.0.1:9/"]],
                "paths": ["/x": ["get": ["operationId": "Evil", "summary": .string(Self.hostile), "responses": ["200": ["description": "ok"]]]]],
            ]
            let file = folder.appendingPathComponent("evil.json")
            try document.jsonData().write(to: file)
            for command in [["list", "-D", file.path], ["describe", "Evil", "-D", file.path]] {
                let result = try await CLIRunner.run(command)
                #expect(result.status == 0, "\(command): \(result.standardError)")
                let printed = result.standardOutput + result.standardError
                #expect(printed.contains("\\u{1b}]0;owned\\u{7}"), "\(command): \(printed)")
                #expect(!printed.contains("\u{1B}") && !printed.contains("\u{07}") && !printed.contains("\u{9B}"))
                #expect(!printed.split(separator: "\n").contains { $0.hasPrefix("callsign: forged") })
            }
            // An error that quotes outside text (here a file name) stays one line.
            let named = folder.appendingPathComponent("x\u{1B}]0;t\u{07}\ncallsign: forged.yaml").path
            let missing = try await CLIRunner.run(["call", "A", "-D", named])
            #expect(missing.status != 0)
            #expect(!missing.standardError.contains("\u{1B}"))
            #expect(!missing.standardError.split(separator: "\n").contains { $0.hasPrefix("callsign: forged") }, "\(missing.standardError)")
        }
        try await TestServer.withRunning { server in
            server.route("/evil") { _ in
                ServerResponse(headers: [("Content-Type", "text/plain"), ("X-Note", "a\u{85}b")], body: .data(Data(Self.hostile.utf8)))
            }
            server.route("/binary") { _ in ServerResponse(headers: [("Content-Type", "image/png")], body: .data(Data([0x89, 0x50, 0x00, 0x1B, 0x5B, 0x32, 0x4A]))) }
            // To a pipe: byte for byte.
            let piped = try await CLIRunner.run(["get", server.url("/evil").absoluteString])
            #expect(piped.status == 0, "\(piped.standardError)")
            #expect(piped.standardOutput == Self.hostile)
            // On a terminal (script(1) gives the command a pseudo-terminal): escaped, binary not shown.
            // (Linux only: BSD script(1) takes other options; the sanitizer's own tests run everywhere.)
            #if os(Linux)
            try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "script(1) of util-linux gives the command a terminal")
            server.route("/evil-events") { _ in
                // Once; asked again (a GET reconnects when its stream ends), nothing more: 204.
                guard server.hits("/evil-events") == 1 else { return ServerResponse(status: 204) }
                return ServerResponse(headers: [("Content-Type", "text/event-stream")], body: .data(Data("retry: 10\ndata: \u{1B}]0;owned\u{07}\n\n".utf8)))
            }
            for (path, expected, options) in [
                ("/evil", "\\u{1b}]0;owned\\u{7}", "--include"), ("/binary", "binary body of 7 bytes", "--include"),
                ("/evil-events", "\\u{1b}]0;owned\\u{7}", "--stream"),
            ] {
                let command = "\(CLIRunner.executable.path) get \(options) \(server.url(path).absoluteString)"
                let onTerminal = try await ProcessRunner.run("/usr/bin/script", ["-qec", command, "/dev/null"])
                #expect(onTerminal.status == 0, "\(onTerminal.standardOutput)")
                #expect(onTerminal.standardOutput.contains(expected), "\(onTerminal.standardOutput)")
                #expect(!onTerminal.standardOutput.contains("\u{1B}]0;") && !onTerminal.standardOutput.contains("\u{1B}[2J"))
                #expect(!onTerminal.standardOutput.contains("\u{85}"))
            }
            #endif
        }
    }

    // MARK: - Credentials

    @Test("a callsign.json found in the folder never receives command-line credentials; a host-like argument is a host")
    func credentialsStayWithTypedHosts() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { typed in
            try await TestServer.withRunning { planted in
                try await withTemporaryFolder("cli-credentials") { folder in
                    let json = "{\"DEFAULT\": {\"baseURL\": \"\(planted.baseURL.absoluteString)\"}, \"Echo\": {\"path\": \"anything/e\"}}"
                    try Data(json.utf8).write(to: folder.appendingPathComponent("callsign.json"))
                    let hostPort = "127.0.0.1:\(typed.baseURL.port ?? 0)"

                    // host:port/… is a host, whatever file lies in the folder.
                    let direct = try await CLIRunner.run(["get", "\(hostPort)/anything/x", "--bearer", "T0KEN"], directory: folder)
                    #expect(direct.status == 0, "\(direct.standardError)")
                    #expect(typed.requests.last?.rawPath == "/anything/x")
                    #expect(typed.requests.last?.header("Authorization") == "Bearer T0KEN")
                    #expect(planted.requests.isEmpty, "nothing went to the file's host")
                    #expect(direct.standardError.contains("callsign.json"), "the implicit file is named on stderr: \(direct.standardError)")

                    // A path under the found file's base URL with credentials: refused, nothing sent.
                    let relative = try await CLIRunner.run(["get", "anything/y", "--bearer", "T0KEN"], directory: folder)
                    #expect(relative.status == 64, "\(relative.standardError)")
                    #expect(relative.standardError.contains("-D callsign.json"))
                    let byName = try await CLIRunner.run(["call", "Echo", "--user", "u:p"], directory: folder)
                    #expect(byName.status == 64, "\(byName.standardError)")
                    #expect(planted.requests.isEmpty)

                    // --base-url is typed: the credentials go there, under the found file's definitions.
                    let based = try await CLIRunner.run(["call", "Echo", "--bearer", "T0KEN", "--base-url", typed.baseURL.absoluteString], directory: folder)
                    #expect(based.status == 0, "\(based.standardError)")
                    #expect(typed.requests.last?.rawPath == "/anything/e")
                    #expect(typed.requests.last?.header("Authorization") == "Bearer T0KEN")
                    #expect(planted.requests.isEmpty)

                    // Named with -D: the user chose it, so its host gets them.
                    let named = try await CLIRunner.run(["get", "anything/z", "--bearer", "T0KEN", "-D", "callsign.json"], directory: folder)
                    #expect(named.status == 0, "\(named.standardError)")
                    #expect(planted.requests.last?.header("Authorization") == "Bearer T0KEN")
                    #expect(!named.standardError.contains("found in this folder"))

                    // The credentials the found file names itself (a token from the environment) stay home too.
                    let withAuth = "DEFAULT:\n  baseURL: \(planted.baseURL.absoluteString)\n  authentication: {scheme: bearer, tokenEnvironment: PLANTED_TOKEN}\nEcho:\n  path: anything/a\n  needsAuthorization: true\n"
                    try await withTemporaryFolder("cli-credentials-yaml") { other in
                        try Data(withAuth.utf8).write(to: other.appendingPathComponent("callsign.yaml"))
                        let found = try await CLIRunner.run(["call", "Echo"], environment: ["PLANTED_TOKEN": "S3CRET"], directory: other)
                        #expect(planted.requests.last?.rawPath == "/anything/a", "\(found.standardError)")
                        #expect(planted.requests.last?.header("Authorization") == nil)
                        #expect(found.standardError.contains("name it with -D"), "\(found.standardError)")
                        let chosen = try await CLIRunner.run(["call", "Echo", "-D", "callsign.yaml"], environment: ["PLANTED_TOKEN": "S3CRET"], directory: other)
                        #expect(chosen.status == 0, "\(chosen.standardError)")
                        #expect(planted.requests.last?.header("Authorization") == "Bearer S3CRET")
                    }

                    // Without credentials the found file still lends its base URL, and says so.
                    let plain = try await CLIRunner.run(["get", "anything/w"], directory: folder)
                    #expect(plain.status == 0, "\(plain.standardError)")
                    #expect(planted.requests.last?.rawPath == "/anything/w")
                    #expect(plain.standardError.contains("callsign.json"))
                }
            }
        }
    }

    @Test("what looks like a host is a host")
    func hostLike() throws {
        for host in ["127.0.0.1:8080/x", "localhost/x", "localhost:3000", "example.com", "api.example.com/v1?x=1", "[::1]:8080/x", "10.0.0.1"] {
            #expect(AdHocCall.looksLikeHost(host), "\(host)")
            #expect(try AdHocCall.target(host, base: URL(string: "https://base.example/")) == "http://" + host)
        }
        for path in ["users/1", "anything", "v1/items", "/abs", "a:b/c", ""] {
            #expect(!AdHocCall.looksLikeHost(path), "\(path)")
        }
    }

    // MARK: - Pins and trust

    @Test("an empty or unparsable pin, trust store or key is an error, never 'off'")
    func pinsFailClosed() async throws {
        try CLIRunner.requireBuilt()
        let certificates = try #require(TLSTests.certificates)
        try await withTemporaryFolder("cli-pins") { folder in
            let ca = folder.appendingPathComponent("ca.pem")
            try Data(certificates.authority.certificatePEM.utf8).write(to: ca)
            let empty = folder.appendingPathComponent("empty.pem")
            try Data().write(to: empty)
            try await TestServer.withRunning(tls: TestServer.TLS(identity: certificates.localhost)) { server in
                let url = server.url("/get").absoluteString
                let trusted = try await CLIRunner.run(["get", url, "--cacert", ca.path])
                #expect(trusted.status == 0, "\(trusted.standardError)")
                let before = server.requests.count
                for (arguments, status) in [
                    (["--pinnedpubkey", ""], 64), (["--pinnedpubkey", ";"], 64), (["--pinnedpubkey", " ; "], 64),
                    (["--pinnedpubkey", certificates.localhost.pin.replacingOccurrences(of: "sha256/", with: "sha256//") + ";"], 64),
                    (["--pin", ""], 64), (["--pinnedpubkey", "sha256//not-base64"], 65), (["--pin", "sha256/AAAA"], 65),
                ] {
                    let result = try await CLIRunner.run(["get", url, "--cacert", ca.path] + arguments)
                    #expect(result.status == Int32(status), "\(arguments): \(result.standardError)")
                }
                for (arguments, status) in [
                    (["--cacert", ""], 64), (["--cacert", empty.path], 65), (["--cacert", "/dev/zero"], 65),
                    (["--cacert", ca.path, "--cert", empty.path, "--key", empty.path], 65), (["--cacert", ca.path, "--cert", "", "--key", ""], 64),
                ] {
                    let result = try await CLIRunner.run(["get", url] + arguments)
                    #expect(result.status == Int32(status), "\(arguments): \(result.standardError)")
                }
                #expect(server.requests.count == before, "no request went out under a broken pin or trust setting")
            }
        }
    }

    // MARK: - Many headers

    @Test("3,000 -H options are read in one linear pass: every one reaches the request (and the field limit answers)")
    func manyHeaders() async throws {
        let arguments = ["get", "http://127.0.0.1:1/x"] + (1...3_000).flatMap { ["-H", "X-N\($0): v\($0)"] } + ["--header=X-Last: z", "--", "-H"]
        let (rest, headers) = HeaderOptions.extract(arguments)
        #expect(rest == ["get", "http://127.0.0.1:1/x", "--", "-H"])
        #expect(headers.count == 3_001)
        #expect(headers.first == "X-N1: v1" && headers.last == "X-Last: z")
        #expect(HeaderOptions.extract(["list", "-H", "x"]).rest == ["list", "-H", "x"], "commands without -H keep it, for ArgumentParser to refuse")
        let parsed = try ParameterArguments.headers(headers)
        #expect(parsed.fields.count == 3_001)
        #expect(parsed["x-n2999"] == "v2999")

        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let many = (1...3_000).flatMap { ["-H", "X-N\($0): v"] }
            let refused = try await CLIRunner.run(["get", server.url("/headers").absoluteString] + many)
            #expect(refused.status == 65, "\(refused.standardError)")
            #expect(refused.standardError.contains("header fields"))
            let some = (1...200).flatMap { ["-H", "X-N\($0): v\($0)"] }
            let sent = try await CLIRunner.run(["get", server.url("/headers").absoluteString] + some)
            #expect(sent.status == 0, "\(sent.standardError)")
            #expect(server.requests.last?.header("X-N1") == "v1")
            #expect(server.requests.last?.header("X-N200") == "v200")
        }
    }

    // MARK: - Numbers

    @Test("JSON numbers from the command line reach the wire exactly as written: body, query and path")
    func numbersExact() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let posted = try await CLIRunner.run(["post", server.url("/anything/n").absoluteString, "n:=12345678901234567890", "x:=1.50"])
            #expect(posted.status == 0, "\(posted.standardError)")
            let body = String(decoding: server.requests.last?.body ?? Data(), as: UTF8.self)
            #expect(body.contains("12345678901234567890"), "\(body)")
            #expect(body.contains("1.50"), "\(body)")

            let queried = try await CLIRunner.run(["get", server.url("/anything/q").absoluteString, "n:=12345678901234567890", "x:=1.50"])
            #expect(queried.status == 0, "\(queried.standardError)")
            #expect(server.requests.last?.query("n") == "12345678901234567890")
            #expect(server.requests.last?.query("x") == "1.50")

            try await withTemporaryFolder("cli-numbers") { folder in
                let file = folder.appendingPathComponent("api.yaml")
                try Data("DEFAULT:\n  baseURL: \(server.baseURL.absoluteString)\nItem:\n  path: anything/items/{n}\n".utf8).write(to: file)
                let called = try await CLIRunner.run(["call", "Item", "-D", file.path, "-p", "n:=12345678901234567890", "-p", "x:=1.50"])
                #expect(called.status == 0, "\(called.standardError)")
                #expect(server.requests.last?.rawPath == "/anything/items/12345678901234567890")
                #expect(server.requests.last?.query("x") == "1.50")
            }
        }
    }

    // MARK: - Secrets

    @Test("--secret-name adds a name to the rule: masked in the HAR file beside Private-Token, which the rule catches itself")
    func secretName() async throws {
        try CLIRunner.requireBuilt()
        try await withTemporaryFolder("cli-secret") { folder in
            try await TestServer.withRunning { server in
                let har = folder.appendingPathComponent("x.har").path
                let result = try await CLIRunner.run([
                    "get", server.url("/anything/s").absoluteString, "-H", "X-Tenant: SENTINEL-tenant", "-H", "Private-Token: SENTINEL-token",
                    "-H", "Idempotency-Key: visible-key", "--secret-name", "x-tenant", "--har", har,
                ])
                #expect(result.status == 0, "\(result.standardError)")
                let archive = String(decoding: try Data(contentsOf: URL(fileURLWithPath: har)), as: UTF8.self)
                #expect(!archive.contains("SENTINEL-tenant"))
                #expect(!archive.contains("SENTINEL-token"))
                #expect(archive.contains("visible-key"))
                #expect(server.requests.last?.header("X-Tenant") == "SENTINEL-tenant", "the server still gets the value")
            }
        }
    }
}
