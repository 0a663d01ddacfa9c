import Callsign
import CallsignTesting
import Foundation
import Testing

/// Runs `callsign call Raw` against `server` in a child process, measuring its peak memory.
private func callRaw(_ server: RawServer, extra: [String] = []) async throws -> (result: ProcessRunner.Result, peak: Int) {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-raw-\(UUID().uuidString).yaml")
    try Data("DEFAULT:\n  baseURL: \(server.baseURL.absoluteString)\n  retry: 1\nRaw:\n  path: x\n".utf8).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    return try await peakMemory([CLIRunner.executable.path, "call", "Raw", "--definitions", file.path] + extra, discardingOutput: true)
}

/// Bombs and floods, each in a child process (the `callsign` executable, on the default
/// transport) whose peak memory is read from the kernel: what a hostile server can make a
/// client hold stays bounded, and the process ends with a clear error instead of dying.
@Suite("Hostile servers: memory stays bounded and the process survives", .enabled(if: TransportKind.asyncHTTPClientIsBuilt), .serialized, .hangGuard)
struct HostileProcessTests {
    /// A small, normal exchange: the baseline every peak is compared with.
    private func baseline() async throws -> Int {
        try await RawServer.withRunning([rawResponse(headers: ["Content-Type: application/json", "Content-Length: 2"], body: "{}")]) { server in
            let (result, peak) = try await callRaw(server)
            #expect(result.status == 0, "\(result.standardError)")
            return peak
        }
    }

    @Test("bombs and floods: a clear error, and bounded memory", arguments: HostileScript.allCases)
    func bounded(script: HostileScript) async throws {
        try CLIRunner.requireBuilt()
        let normal = try await baseline()
        try await RawServer.withRunning(script.steps) { server in
            let (result, peak) = try await callRaw(server)
            // A documented exit status (the connection broke, too large, or a malformed answer), never a crash.
            #expect([56, 63, 76].contains(result.status), "exit \(result.status): \(result.standardError)")
            #expect(result.standardError.contains(script.expectedMessage), "\(result.standardError)")
            #expect(peak > 0)
            #expect(peak - normal < script.allowedGrowth, "peak grew by \((peak - normal) >> 20) MiB")
        }
    }

    @Test("a reader that closes the pipe early ends the program quietly (`callsign call X | head -c 1`)")
    func closedPipe() async throws {
        try CLIRunner.requireBuilt()
        let body = "[" + String(repeating: "1,", count: 500_000) + "1]"
        try await RawServer.withRunning([rawResponse(headers: ["Content-Type: application/json", "Content-Length: \(body.utf8.count)"], body: body)]) {
            server in
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-pipe-\(UUID().uuidString).yaml")
            try Data("DEFAULT:\n  baseURL: \(server.baseURL.absoluteString)\nRaw:\n  path: x\n".utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let script = #""$CALLSIGN" call Raw --definitions "$DEFINITIONS" 2>"$ERRORS" | head -c 1 >/dev/null; echo "status ${PIPESTATUS[0]}"; cat "$ERRORS""#
            let errors = file.path + ".stderr"
            defer { try? FileManager.default.removeItem(atPath: errors) }
            let result = try await ProcessRunner.run(
                "/bin/bash", ["-c", script],
                environment: ["CALLSIGN": CLIRunner.executable.path, "DEFINITIONS": file.path, "ERRORS": errors])
            // 141 is 128 + SIGPIPE, the conventional status of a pipeline member whose reader left.
            #expect(["status 141", "status 0"].contains(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)),
                    "\(result.standardOutput)")
        }
    }

    @Test("status 000 on the default Linux transport (AsyncHTTPClient), isolated in a child process")
    func statusZeroOnAsyncHTTPClient() async throws {
        try CLIRunner.requireBuilt()
        try await RawServer.withRunning([rawResponse(status: "000 Nothing", headers: ["Content-Length: 2"], body: "ok")]) { server in
            let (result, _) = try await callRaw(server)
            #if os(Linux)
            // AsyncHTTPClient 1.37 treats every status below 200 as informational, so a status
            // of 0–99 followed by a body trips its state machine's fatalError. Nothing Callsign
            // does before or after the transport can reach that check; URLSessionTransport
            // reports it as a clear error (HostileServerTests).
            withKnownIssue("AsyncHTTPClient traps on a final status below 100") {
                #expect(result.status == 1, "exit \(result.status)")
            }
            #else
            #expect(result.status == 1, "exit \(result.status)")
            #endif
        }
    }
}

/// The bombs and floods a child process is measured against.
enum HostileScript: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case gzipBomb
    case megabyteHeader
    case tenThousandHeaders
    case tenThousandCookies
    case fourGigabyteLength
    case endlessChunkedBody

    var testDescription: String { rawValue }

    var steps: [RawServer.Step] {
        switch self {
        case .gzipBomb:
            let bomb = RawServer.gzip(Data(count: 64 << 20)) ?? Data()
            return [rawResponse(headers: ["Content-Encoding: gzip", "Content-Type: application/json", "Content-Length: \(bomb.count)"]), .bytes(Array(bomb))]
        case .megabyteHeader:
            return [.write("HTTP/1.1 200 OK\r\nX-Big: "), .repeated(Array("a".utf8), count: 1 << 20), .write("\r\nContent-Length: 2\r\n\r\n{}")]
        case .tenThousandHeaders:
            return [.write("HTTP/1.1 200 OK\r\n"), .repeated(Array("X-A: b\r\n".utf8), count: 10_000), .write("Content-Length: 2\r\n\r\n{}")]
        case .tenThousandCookies:
            return [.write("HTTP/1.1 200 OK\r\n"), .repeated(Array("Set-Cookie: a=b\r\n".utf8), count: 10_000), .write("Content-Length: 2\r\n\r\n{}")]
        case .fourGigabyteLength:
            return [.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4294967296\r\n\r\n"),
                    .repeated(Array(repeating: UInt8(ascii: "a"), count: 65_536), count: 64)]
        case .endlessChunkedBody:
            // 1 GiB of chunks: far past the 64 MiB body cap.
            return [.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"),
                    .repeated(Array("10000\r\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 65_536) + Array("\r\n".utf8), count: 16_384)]
        }
    }

    /// How much more than a normal call the process may hold: 32 MiB of slack, plus the 64 MiB
    /// body cap where the body is read up to it.
    var allowedGrowth: Int {
        self == .endlessChunkedBody ? (64 + 32) << 20 : 32 << 20
    }

    /// A word the one-line error names.
    var expectedMessage: String {
        switch self {
        case .gzipBomb: "bomb"
        case .megabyteHeader, .tenThousandHeaders, .tenThousandCookies: "head"
        case .fourGigabyteLength, .endlessChunkedBody: "larger than the limit"
        }
    }
}
