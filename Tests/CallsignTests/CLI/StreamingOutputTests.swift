import Callsign
import CallsignTesting
import Foundation
import Testing

@testable import callsign

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `callsign get URL` writes a body as it arrives: an event stream's first event shows while the
/// stream is still open, to a pipe and to a terminal (a pseudo-terminal from `script`), and a
/// JSON answer on a terminal is still shown whole, re-indented.
@Suite("callsign writes a body as it arrives", .hangGuard)
struct StreamingOutputTests {
    /// A server whose `/feed` sends one event, then waits ten minutes before the next, and whose
    /// `/object` answers JSON.
    private func withFeed(_ body: (TestServer) async throws -> Void) async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let first = "event: tick\ndata: one\n\n"
            server.route("/feed") { _ in
                ServerResponse(
                    headers: [("Content-Type", "text/event-stream")], body: .data(Data((first + "data: two\n\n").utf8)),
                    behaviour: .drip(chunk: first.utf8.count, every: .seconds(600)))
            }
            server.route("/object") { _ in .text(#"{"b":2,"a":[1,2]}"#, contentType: "application/json") }
            server.route("/controls") { _ in .text("plain \u{1B}[31mred\n", contentType: "text/plain") }
            try await body(server)
        }
    }

    /// Runs `command` in its own process group, reads its output until `line` shows, then ends
    /// the group with `signal`; returns the output and the exit status.
    /// A terminal's CRLF line ends become LF (a Swift string holds CRLF as one character, so
    /// the reader does not split there).
    private func output(of command: String, until line: String, signal: Int32, environment: [String: String]) async throws -> ([String], Int32) {
        let run = try ScriptRun(#"echo "group $$"; "# + command, environment: environment)
        let read = await run.lines { lines in lines.contains { $0.contains(line) } }
        let group = try #require(read.first.flatMap { $0.hasPrefix("group ") ? pid_t($0.dropFirst(6)) : nil })
        kill(-group, signal)
        let lines = read.joined(separator: "\n").replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n").map(String.init)
        return (lines, try await run.exitStatus())
    }

    @Test("an event stream's first event is printed while the stream is open, to a pipe and to a terminal, without -S")
    func firstEventWhileOpen() async throws {
        try await withFeed { server in
            let environment = ["CALLSIGN": CLIRunner.executable.path, "URL": server.url("/feed").absoluteString]
            let (piped, status) = try await output(of: #"exec "$CALLSIGN" get "$URL""#, until: "data: one", signal: SIGINT, environment: environment)
            #expect(piped.contains("event: tick") && piped.contains("data: one"), "\(piped)")
            #expect(!piped.contains("data: two"), "the second event is ten minutes away")
            #expect(status == 130, "Ctrl-C ends it as an interruption")

            // `script` gives the command a pseudo-terminal and copies what it shows to its own output.
            let (shown, _) = try await output(
                of: #"exec script -qfec "\"$CALLSIGN\" get \"$URL\"" /dev/null"#, until: "data: one", signal: SIGKILL, environment: environment)
            #expect(shown.contains { $0.hasPrefix("data: one") }, "\(shown)")
            #expect(server.requests.filter { $0.rawPath == "/feed" }.count == 2)
        }
    }

    @Test("on a terminal a JSON answer is still shown whole and re-indented; to a pipe it is the bytes as received")
    func jsonWholeOnATerminal() async throws {
        try await withFeed { server in
            let environment = ["CALLSIGN": CLIRunner.executable.path, "URL": server.url("/object").absoluteString]
            let (shown, _) = try await output(
                of: #"script -qfec "\"$CALLSIGN\" get --color never \"$URL\"" /dev/null; echo "ended""#, until: "ended", signal: SIGKILL,
                environment: environment)
            #expect(shown.contains("  \"b\": 2,") && shown.contains("  \"a\": ["), "\(shown)")
            let piped = try await CLIRunner.run(["get", server.url("/object").absoluteString])
            #expect(piped.status == 0)
            #expect(piped.standardOutput == #"{"b":2,"a":[1,2]}"#)

            // Text that flows is still made safe on a terminal: the escape sequence is shown, not obeyed.
            let (controls, _) = try await output(
                of: #"script -qfec "\"$CALLSIGN\" get \"$URL\"" /dev/null; echo "ended""#, until: "ended", signal: SIGKILL,
                environment: ["CALLSIGN": CLIRunner.executable.path, "URL": server.url("/controls").absoluteString])
            #expect(controls.contains(#"plain \u{1b}[31mred"#), "\(controls)")
        }
    }

    @Test("a piece held back on a terminal is cut between UTF-8 characters, never inside one")
    func characterBoundary() {
        let text = Data("aé€😀".utf8)  // 1, 2, 3 and 4 bytes
        #expect(BodyFlow.characterBoundary(in: text) == text.endIndex, "whole characters: cut at the end")
        for dropped in 1...3 {
            let cutShort = Data(text.dropLast(dropped))
            #expect(BodyFlow.characterBoundary(in: cutShort) == text.count - 4, "the unfinished emoji waits (\(dropped) missing)")
        }
        let euroCut = Data(Data("a€".utf8).dropLast())
        #expect(BodyFlow.characterBoundary(in: euroCut) == 1)
        #expect(BodyFlow.characterBoundary(in: Data([0x80, 0x80, 0x80, 0x80, 0x80])) == 5, "stray continuation bytes are not held")
        #expect(BodyFlow.characterBoundary(in: Data()) == 0)
    }
}
