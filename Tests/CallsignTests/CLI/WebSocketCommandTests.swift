import Callsign
import CallsignTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `callsign ws URL`, the real executable against the in-process server.
@Suite("callsign ws", .hangGuard)
struct WebSocketCommandTests {
    @Test("each line of standard input goes as a message, each message comes back on a line; credentials and headers sign the handshake; a close other than 1000 fails", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func echoes() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let url = server.url("/ws/echo").absoluteString.replacingOccurrences(of: "http://", with: "ws://")
            let input = Data("hello\nwörld\r\n{\"op\":\"subscribe\"}\nlast line without end".utf8)
            let run = try await CLIRunner.run(["ws", url, "--bearer", "t0k3n", "-H", "X-Trace: 1", "--protocol", "chat", "--timeout", "600", "--close-timeout", "600"], input: input)
            #expect(run.status == 0, "\(run.standardError)")
            #expect(run.standardOutput == "hello\nwörld\n{\"op\":\"subscribe\"}\nlast line without end\n")
            let handshake = try #require(server.requests.last { $0.rawPath == "/ws/echo" })
            #expect(handshake.header("Authorization") == "Bearer t0k3n")
            #expect(handshake.header("X-Trace") == "1")
            #expect(handshake.header("Sec-WebSocket-Protocol") == "chat")

            // Standard input stays open (a FIFO this test holds a writer of), so it is the server
            // that ends the socket.
            let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-ws-\(UUID().uuidString)").path
            #expect(mkfifo(fifo, 0o600) == 0)
            let writer = open(fifo, O_RDWR)
            defer {
                close(writer)
                unlink(fifo)
            }
            let closed = try await ProcessRunner.run(
                "/bin/sh", ["-c", "exec \"$0\" ws \"$1\" --timeout 600 < \"$2\"", CLIRunner.executable.path, server.url("/ws/close/4001?reason=bye").absoluteString, fifo])
            #expect(closed.status != 0)
            #expect(closed.standardError.contains("4001"))
            #expect(closed.standardError.contains("bye"))

            let wrong = try await CLIRunner.run(["ws", "ftp://example.com/x"], input: Data())
            #expect(wrong.status != 0)
            #expect(wrong.standardError.contains("ws://"))
        }
    }
}
