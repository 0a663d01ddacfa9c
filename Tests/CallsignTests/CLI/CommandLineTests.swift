import Callsign
import CallsignTesting
import Foundation
import Testing

@testable import callsign

private final class BundleMarker {}

/// Runs the built `callsign` executable, as a user would.
struct CLIRunner {
    typealias Result = ProcessRunner.Result

    /// The executable in the build folder, next to the test bundle (whose location differs by platform).
    static var executable: URL {
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent("callsign"),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("callsign"),
            URL(fileURLWithPath: Swift.CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("callsign"),
            Bundle(for: BundleMarker.self).bundleURL.deletingLastPathComponent().appendingPathComponent("callsign"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// Fails the test with a clear message when the executable was not built.
    static func requireBuilt(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: executable.path), "build the callsign executable first",
            sourceLocation: sourceLocation)
    }

    /// Runs the executable with extra environment variables, standard input and a working folder.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], input: Data? = nil, directory: URL? = nil,
        started: (@Sendable (_ processIdentifier: Int32) -> Void)? = nil
    ) async throws -> Result {
        try await ProcessRunner.run(
            executable.path, arguments, environment: environment, input: input, directory: directory, started: started)
    }
}

@Suite("callsign command line", .hangGuard)
struct CommandLineTests {
    @Test("-p parses strings and JSON values, -H parses headers")
    func parameterArguments() throws {
        let parameters = try ParameterArguments.parse(["name=Ann Lee", "page:=2", "tags:=[\"a\"]", "eq=a=b", "on:=true"])
        #expect(parameters == ["name": "Ann Lee", "page": 2, "tags": ["a"], "eq": "a=b", "on": true])
        #expect(throws: APIError.self) { try ParameterArguments.parse(["novalue"]) }
        #expect(throws: APIError.self) { try ParameterArguments.parse(["x:={bad"]) }
        let headers = try ParameterArguments.headers(["X-A: 1", "X-B:two"])
        #expect(headers["x-a"] == "1")
        #expect(headers["X-B"] == "two")
    }

    @Test("call prints the JSON answer; --include adds status and headers; errors exit with their status and one line")
    func call() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-cli-\(UUID().uuidString).yaml")
            try Data(DemoAPI.definitionsYAML(baseURL: server.baseURL).utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }

            let ok = try await CLIRunner.run(["call", "UserProfile", "--definitions", file.path, "-p", "user_id=7"])
            #expect(ok.status == 0)
            #expect(ok.standardOutput.contains("\"name\":\"User 7\""))
            #expect(ok.standardError.isEmpty)

            let included = try await CLIRunner.run(["call", "TopicListRecommended", "-D", file.path, "-p", "page_size:=1", "--include"])
            #expect(included.standardOutput.hasPrefix("HTTP/1.1 200 OK\n"))
            #expect(server.requests.last?.uri == "/demo/api/v2/topics/recommended?page_size=1")

            let notFound = try await CLIRunner.run(["call", "UserProfile", "-D", file.path, "-p", "user_id=9999"])
            #expect(notFound.status == 22)
            #expect(notFound.standardError.split(separator: "\n").count == 1)
            #expect(notFound.standardError.contains("unacceptableStatus"))

            let unknown = try await CLIRunner.run(["call", "UserProfle", "-D", file.path])
            #expect(unknown.status == 65)
            #expect(unknown.standardError.contains("did you mean \"UserProfile\""))

            let rebased = try await CLIRunner.run([
                "call", "UserProfile", "-D", file.path, "-p", "user_id=1", "--base-url", server.url("/demo/").absoluteString,
            ])
            #expect(rebased.status == 0)

            let list = try await CLIRunner.run(["list", "--definitions", file.path])
            #expect(list.status == 0)
            #expect(list.standardOutput.contains("UserProfile"))
            #expect(list.standardOutput.contains("/demo/api/v2/user/{user_id}/profile"))
        }
    }

    @Test("--user, --bearer and -H send credentials and headers; a definitions file can name an environment variable")
    func credentials() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-auth-\(UUID().uuidString).yaml")
            try Data(
                """
                DEFAULT:
                  baseURL: \(server.baseURL.absoluteString)
                  authentication: {scheme: bearer, tokenEnvironment: CALLSIGN_TEST_TOKEN}
                Login:
                  path: basic-auth/ann/pw
                Headers:
                  path: headers
                  needsAuthorization: true
                """.utf8
            ).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }

            let basic = try await CLIRunner.run(["call", "Login", "-D", file.path, "--user", "ann:pw"])
            #expect(basic.status == 0)
            #expect(basic.standardOutput.contains("\"authenticated\":true"))

            let bearer = try await CLIRunner.run(["call", "Headers", "-D", file.path, "--bearer", "tok", "-H", "X-One: 1"])
            #expect(bearer.standardOutput.contains("\"Authorization\":\"Bearer tok\""))
            #expect(bearer.standardOutput.contains("\"X-One\":\"1\""))

            let fromEnvironment = try await CLIRunner.run(
                ["call", "Headers", "-D", file.path], environment: ["CALLSIGN_TEST_TOKEN": "from-env"])
            #expect(fromEnvironment.standardOutput.contains("\"Authorization\":\"Bearer from-env\""))

            let missing = try await CLIRunner.run(["call", "Headers", "-D", file.path], environment: ["CALLSIGN_TEST_TOKEN": ""])
            #expect(missing.status == 1)
            #expect(missing.standardError.contains("CALLSIGN_TEST_TOKEN"))
        }
    }

    @Test("--retry, --deadline and --verbose: every attempt and wait on stderr")
    func retryFlags() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            installFlaky(on: server, failures: 1, retryAfter: "0")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-retry-\(UUID().uuidString).yaml")
            try Data("DEFAULT:\n  baseURL: \(server.baseURL.absoluteString)\nFlaky:\n  path: flaky\nSlow:\n  path: delay/3\n".utf8)
                .write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }

            let retried = try await CLIRunner.run(["call", "Flaky", "-D", file.path, "--retry", "2", "--verbose"])
            #expect(retried.status == 0)
            #expect(retried.standardError.contains("< 503"))
            #expect(retried.standardError.contains("attempt 1 failed (status 503); next attempt in 0 ms"))
            #expect(retried.standardError.contains("< 200 OK"))

            let late = try await CLIRunner.run(["call", "Slow", "-D", file.path, "--deadline", "0.5"])
            #expect(late.status == 28)
            #expect(late.standardError.contains("timedOut"))
            #expect(late.standardError.contains("deadline"))
        }
    }

    @Test("--har records a call; --mock replays it with the server gone, or answers from a fixture folder")
    func harAndMock() async throws {
        try CLIRunner.requireBuilt()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-cli-har-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("api.yaml")
        let har = folder.appendingPathComponent("session.har")
        let recorded = try await TestServer.withRunning { server in
            try Data(DemoAPI.definitionsYAML(baseURL: server.baseURL).utf8).write(to: file)
            return try await CLIRunner.run(["call", "UserProfile", "-D", file.path, "-p", "user_id=7", "--har", har.path])
        }
        #expect(recorded.status == 0)
        let replayed = try await CLIRunner.run(["call", "UserProfile", "-D", file.path, "-p", "user_id=7", "--mock", har.path])
        #expect(replayed.status == 0)
        #expect(replayed.standardOutput == recorded.standardOutput)

        try Data(#"{"id": 1, "name": "Fixture", "bio": "from a folder"}"#.utf8).write(to: folder.appendingPathComponent("UserProfile.json"))
        let fixture = try await CLIRunner.run(["call", "UserProfile", "-D", file.path, "-p", "user_id=1", "--mock", folder.path])
        #expect(fixture.standardOutput.contains("from a folder"))
    }

    @Test("a malformed definitions file is one clear line and exit 65")
    func badFile() async throws {
        try CLIRunner.requireBuilt()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-bad-\(UUID().uuidString).yaml")
        try Data("A:\n  path: a\n  methd: GET\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await CLIRunner.run(["list", "-D", file.path])
        #expect(result.status == 65)
        #expect(result.standardError.contains("key \"methd\" (line 3)"))
    }

    @Test("demo walks through every step against its own server")
    func demo() async throws {
        try CLIRunner.requireBuilt()
        let result = try await CLIRunner.run(["demo"])
        #expect(result.status == 0)
        for marker in ["Call by name", "path template", "endpoint value", "fluent builder", "envelope", "validation error", "refused"] {
            #expect(result.standardOutput.contains(marker), "\(marker)")
        }
        #expect(result.standardOutput.contains("requests sent for these: 0"))
        #expect(result.standardOutput.contains("revalidated: the server said 304 Not Modified"))
        #expect(result.standardOutput.contains("fresh hit from the cache, no request sent"))
        #expect(result.standardOutput.contains("✓ queuedOffline"))
        #expect(result.standardOutput.contains("nobody calls replay()"))
        #expect(result.standardOutput.contains("by itself → 201"))
        #expect(result.standardOutput.contains("still queued: 0"))
        #expect(result.standardOutput.contains("← 206 Partial Content"))
        #expect(result.standardOutput.contains("identical to the server's bytes: yes"))
        #expect(result.standardOutput.contains("connected: 101 Switching Protocols, subprotocol chat\n   echo: hello\n   echo: wörld\n   closed: 1000"))

        // The resilience steps: a closed gate, a circuit, a hedge, pages, a problem, events.
        let output = result.standardOutput
        #expect(output.contains("→ GET /demo/limited ← 429, Retry-After: 1"))
        #expect(output.contains("5 of them answered 200"))
        #expect(output.contains("requests that reached the server while the gate was closed: 0; after it opened: 5"))
        #expect(output.contains("✗ circuitOpen: the circuit breaker for"))
        #expect(output.contains("requests the server saw for that call: 0"))
        #expect(output.contains("one probe: GET /demo/flaky ← 200"))
        #expect(output.contains("transition: closed → open\n   transition: open → halfOpen\n   transition: halfOpen → closed"))
        #expect(output.contains("the call returned attempt 2's answer (the hedge's) after "))
        #expect(output.contains("the slow first attempt was cancelled: the client closed its connection"))
        #expect(output.contains("10 boards from 5 pages: Balsa Fish, Longboard,"))
        #expect(output.contains("with a limit of 2 pages: 4 boards, 2 pages fetched"))
        #expect(output.contains("it reported Name taken: ada is already registered"))
        #expect(output.contains("problem: Name taken — ada is already registered (status 422"))
        #expect(output.contains(
            "id 1, event swell: 2 ft at Malibu\n   id 2, event swell: 3 ft at Malibu\n   id 3, event swell: 4 ft at Malibu\n   id 4, event tide: high at 14:05\n"))
        #expect(output.contains("→ GET /demo/swell, Last-Event-ID: 2"))
        // The hedge's answer came before the stalled attempt's 2 s (well under a second on an
        // idle machine; the bound is the stall itself, for a busy one).
        let hedged = output.split(separator: "\n").first { $0.contains("(the hedge's) after ") }
        let seconds = hedged.flatMap { $0.split(separator: "after ").last?.split(separator: " ").first }.flatMap { Double($0) }
        #expect(seconds.map { $0 < 2 } == true, "\(hedged ?? "no hedge line")")
    }
}
