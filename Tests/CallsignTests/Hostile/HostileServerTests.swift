import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Testing

/// What one exchange with a raw server ended in.
enum Outcome: Sendable {
    case response(Response)
    case failure(APIError)

    var error: APIError? {
        if case .failure(let error) = self { return error }
        return nil
    }

    var response: Response? {
        if case .response(let response) = self { return response }
        return nil
    }
}

/// Sends `GET /x` to a raw server playing `steps` on every connection, through a client on
/// `kind` with no retries and a 30-second attempt limit (a hang becomes a clear timeout; tests
/// that expect one set a short limit themselves, so a loaded machine never fakes one).
func exchange(
    _ steps: [RawServer.Step], kind: TransportKind, configure: (inout APIClient.Configuration) -> Void = { _ in },
    call: @escaping @Sendable (APIClient) async throws(APIError) -> Response = { try await $0.get("/x").send() }
) async throws -> Outcome {
    try await RawServer.withRunning(steps) { server in
        try await exchange(server, kind: kind, configure: configure, call: call)
    }
}

/// Runs `call` against `server` through a fresh client and transport; shuts both down.
func exchange(
    _ server: RawServer, kind: TransportKind, configure: (inout APIClient.Configuration) -> Void = { _ in },
    call: @Sendable (APIClient) async throws(APIError) -> Response
) async throws -> Outcome {
    var configuration = APIClient.Configuration()
    configuration.baseURL = server.baseURL
    configuration.retry = .none
    // A hang guard for scripts that answer: a 10 ms exchange may wait long for a starved pool.
    // Tests of time limits set their own, against servers that hold for far longer.
    configuration.timeouts.attempt = .seconds(600)
    configure(&configuration)
    let transport = kind.make()
    let client = APIClient(configuration: configuration, transport: transport)
    let outcome: Outcome
    do {
        outcome = .response(try await call(client))
    } catch {
        outcome = .failure(error)
    }
    try? await transport.shutdown()
    return outcome
}

/// A complete response head and body, closing the connection after it.
func rawResponse(status: String = "200 OK", headers: [String] = [], body: String = "") -> RawServer.Step {
    let lines = ["HTTP/1.1 \(status)"] + headers + ["Connection: close", ""]
    return .write(lines.joined(separator: "\r\n") + "\r\n" + body)
}

/// A call that gets `/x` and decodes it as `type`.
func decoding<T: Decodable & SendableMetatype>(_ type: T.Type) -> @Sendable (APIClient) async throws(APIError) -> Response {
    { client throws(APIError) in
        let response = try await client.get("/x").send()
        _ = try response.decode(type)
        return response
    }
}

/// Where HTTP lets a recipient either accept or refuse the input: accepted means the body is
/// exactly `body`; refused means a transport or response error, never anything else.
func expectIntactOrRefused(_ outcome: Outcome, body: String = "ok", sourceLocation: SourceLocation = #_sourceLocation) {
    if let response = outcome.response {
        #expect(response.body == Data(body.utf8), sourceLocation: sourceLocation)
    } else {
        #expect(outcome.error?.code == .transport || outcome.error?.code == .invalidResponse, sourceLocation: sourceLocation)
    }
}

/// Every case ends in a clear ``APIError`` or, where the input is legal, the right result —
/// on both transports, with the process still running.
@Suite("Hostile servers: malformed bytes end in a clear error, never a crash or a hang", .hangGuard)
struct HostileServerTests {
    // MARK: - Malformed heads

    @Test("a header line without a colon", arguments: TransportKind.allCases)
    func headerWithoutColon(kind: TransportKind) async throws {
        let outcome = try await exchange([rawResponse(headers: ["Content-Length: 2", "NoColonHere"], body: "ok")], kind: kind)
        // Refused by the parser, or the line is dropped and the body arrives intact.
        expectIntactOrRefused(outcome)
    }

    @Test("an obs-fold continuation line", arguments: TransportKind.allCases)
    func obsFold(kind: TransportKind) async throws {
        let outcome = try await exchange([rawResponse(headers: ["X-Folded: first", " second", "Content-Length: 2"], body: "ok")], kind: kind)
        expectIntactOrRefused(outcome)
        // RFC 9112 §5.2: a recipient replaces obs-fold with spaces; a value never holds CR or LF.
        #expect(outcome.response?.headers.allSatisfy { !$0.value.contains("\r") && !$0.value.contains("\n") } ?? true)
    }

    @Test("a NUL byte inside a header value", arguments: TransportKind.allCases)
    func nulInHeader(kind: TransportKind) async throws {
        let outcome = try await exchange([rawResponse(headers: ["X-Nul: a\u{0}b", "Content-Length: 2"], body: "ok")], kind: kind)
        expectIntactOrRefused(outcome)
        #expect(outcome.response?.headers.allSatisfy { !$0.value.contains("\u{0}") } ?? true)
    }

    @Test("conflicting Content-Length values are refused", arguments: TransportKind.allCases)
    func conflictingContentLength(kind: TransportKind) async throws {
        let outcome = try await exchange([rawResponse(headers: ["Content-Length: 2", "Content-Length: 3"], body: "okk")], kind: kind)
        let error = try #require(outcome.error, "a response with two lengths must not be believed")
        #expect(error.code == .transport || error.code == .invalidResponse)
    }

    @Test("identical duplicate Content-Length values are one length", arguments: TransportKind.allCases)
    func duplicateContentLength(kind: TransportKind) async throws {
        let outcome = try await exchange([rawResponse(headers: ["Content-Length: 2", "Content-Length: 2"], body: "ok")], kind: kind)
        // RFC 9110 §8.6 lets a recipient accept identical values, or reject the message.
        expectIntactOrRefused(outcome)
    }

    @Test("a Content-Length past Int64 is refused", arguments: TransportKind.allCases)
    func hugeContentLength(kind: TransportKind) async throws {
        let outcome = try await exchange([rawResponse(headers: ["Content-Length: 99999999999999999999999"], body: "ok")], kind: kind)
        let error = try #require(outcome.error)
        #expect([.transport, .invalidResponse, .responseTooLarge].contains(error.code))
    }

    @Test("a 1 MiB header line", arguments: TransportKind.allCases)
    func megabyteHeader(kind: TransportKind) async throws {
        let outcome = try await exchange(
            [.write("HTTP/1.1 200 OK\r\nX-Big: "), .repeated(Array("a".utf8), count: 1 << 20), .write("\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")],
            kind: kind)
        let error = try #require(outcome.error, "a megabyte of header is past every limit")
        #expect(error.code == .transport || error.code == .invalidResponse)
    }

    /// How many repeated field lines a flood sends. FoundationNetworking copies its list of lines
    /// once per line (quadratic), on the one work queue every URLSession of the process shares:
    /// 10,000 lines hold that queue for seconds under load, and every other URLSession call of the
    /// test process waits behind them. 2,000 are still four times the field count limit.
    private static func floodLines(_ kind: TransportKind) -> Int { kind == .urlSession ? 2_000 : 10_000 }

    @Test("10,000 header fields (2,000 through FoundationNetworking)", arguments: TransportKind.allCases)
    func tenThousandHeaders(kind: TransportKind) async throws {
        let outcome = try await exchange(
            [.write("HTTP/1.1 200 OK\r\n"), .repeated(Array("X-A: b\r\n".utf8), count: Self.floodLines(kind)), .write("Content-Length: 2\r\nConnection: close\r\n\r\nok")],
            kind: kind)
        try expectRepeatedFieldFlood(outcome, kind: kind)
    }

    @Test("10,000 Set-Cookie lines (2,000 through FoundationNetworking)", arguments: TransportKind.allCases)
    func tenThousandCookies(kind: TransportKind) async throws {
        let outcome = try await exchange(
            [.write("HTTP/1.1 200 OK\r\n"), .repeated(Array("Set-Cookie: a=b\r\n".utf8), count: Self.floodLines(kind)), .write("Content-Length: 2\r\nConnection: close\r\n\r\nok")],
            kind: kind)
        try expectRepeatedFieldFlood(outcome, kind: kind)
    }

    /// AsyncHTTPClient hands over every field line, and the count limit refuses them.
    /// FoundationNetworking joins repeated names into one field (its headers are a dictionary),
    /// so the same bytes arrive as one legal, bounded field and the body is intact.
    private func expectRepeatedFieldFlood(_ outcome: Outcome, kind: TransportKind) throws {
        switch kind {
        case .asyncHTTPClient:
            let error = try #require(outcome.error, "the flood is past the header count limit")
            #expect(error.code == .transport || error.code == .invalidResponse)
        case .urlSession:
            if let response = outcome.response {
                #expect(response.body == Data("ok".utf8))
                #expect(response.headers.count < 10)
            } else {
                #expect(outcome.error?.code == .invalidResponse)
            }
        }
    }

    @Test("a header count limit of the user's choosing", arguments: TransportKind.allCases)
    func headerCountLimit(kind: TransportKind) async throws {
        let headers = (0..<20).map { "X-Field-\($0): v" } + ["Content-Length: 2"]
        let refused = try await exchange([rawResponse(headers: headers, body: "ok")], kind: kind) { $0.limits.maximumHeaderFieldCount = 10 }
        #expect(refused.error?.code == .invalidResponse)
        #expect(refused.error?.message.contains("maximumHeaderFieldCount") == true)
        let accepted = try await exchange([rawResponse(headers: headers, body: "ok")], kind: kind)
        #expect(accepted.response?.body == Data("ok".utf8))
    }

    // MARK: - Bodies

    @Test("a chunk size that is not hex", arguments: TransportKind.allCases)
    func badChunkSize(kind: TransportKind) async throws {
        let outcome = try await exchange([rawResponse(headers: ["Transfer-Encoding: chunked"], body: "zz\r\nok\r\n0\r\n\r\n")], kind: kind)
        let error = try #require(outcome.error)
        #expect(error.code == .transport || error.code == .invalidResponse)
    }

    @Test("a chunk size that overflows 64 bits", arguments: TransportKind.allCases)
    func overflowingChunkSize(kind: TransportKind) async throws {
        let outcome = try await exchange(
            [rawResponse(headers: ["Transfer-Encoding: chunked"], body: "FFFFFFFFFFFFFFFFFFFF\r\nok\r\n0\r\n\r\n")], kind: kind)
        let error = try #require(outcome.error)
        #expect([.transport, .invalidResponse, .responseTooLarge].contains(error.code))
    }

    @Test("a body shorter than its Content-Length", arguments: TransportKind.allCases)
    func shortBody(kind: TransportKind) async throws {
        let outcome = try await exchange([rawResponse(headers: ["Content-Length: 10"], body: "short")], kind: kind)
        let error = try #require(outcome.error, "a truncated body must not pass as complete")
        #expect(error.code == .transport || error.code == .invalidResponse)
    }

    @Test("a body longer than its Content-Length is cut at the declared length", arguments: TransportKind.allCases)
    func longBody(kind: TransportKind) async throws {
        let outcome = try await exchange([rawResponse(headers: ["Content-Length: 2"], body: "okEXTRA")], kind: kind)
        // The message ends after 2 bytes (RFC 9112 §6.3); the rest is not part of it.
        expectIntactOrRefused(outcome)
    }

    @Test("an HTTP/1.0 body delimited by the close", arguments: TransportKind.allCases)
    func closeDelimited(kind: TransportKind) async throws {
        let outcome = try await exchange([.write("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello, 1.0")], kind: kind)
        let response = try #require(outcome.response, "\(outcome.error.map(String.init(describing:)) ?? "")")
        #expect(response.body == Data("hello, 1.0".utf8))
    }

    @Test("a declared 4 GiB body fails at the head, before reading", arguments: TransportKind.allCases)
    func fourGigabytes(kind: TransportKind) async throws {
        // The server then goes silent: reading on would hang until the timeout.
        let outcome = try await exchange(
            [.write("HTTP/1.1 200 OK\r\nContent-Length: 4294967296\r\n\r\nabc"), .hang], kind: kind) { $0.timeouts.attempt = .seconds(600) }
        #expect(outcome.error?.code == .responseTooLarge)
    }

    @Test("a 64 MiB gzip bomb is refused as a bomb or bounded by the body cap", arguments: TransportKind.allCases)
    func gzipBomb(kind: TransportKind) async throws {
        let bomb = try #require(HostileBodies.gzipBomb(decodedSize: 64 << 20))
        let outcome = try await exchange(
            [rawResponse(headers: ["Content-Encoding: gzip", "Content-Type: application/json", "Content-Length: \(bomb.count)"]), .bytes(bomb)],
            kind: kind) { $0.limits.maximumResponseBodySize = 8 << 20 }
        let error = try #require(outcome.error)
        #expect(error.code == .responseTooLarge)
    }

    // MARK: - Resets and silences

    @Test("a reset in the middle of the head", arguments: TransportKind.allCases)
    func resetInHead(kind: TransportKind) async throws {
        // The reset comes at once; the long limit only keeps a loaded machine from turning it into a timeout.
        let outcome = try await exchange([.write("HTTP/1.1 200 OK\r\nContent-Le"), .pause(.milliseconds(50)), .reset], kind: kind) {
            $0.timeouts.attempt = .seconds(600)
        }
        #expect(outcome.error?.code == .transport)
    }

    @Test("a reset in the middle of the body", arguments: TransportKind.allCases)
    func resetInBody(kind: TransportKind) async throws {
        let outcome = try await exchange(
            [.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf"), .pause(.milliseconds(50)), .reset], kind: kind) {
                $0.timeouts.attempt = .seconds(600)
            }
        #expect(outcome.error?.code == .transport)
    }

    @Test("a server that accepts and never answers: the attempt's time limit holds", arguments: TransportKind.allCases)
    func neverAnswers(kind: TransportKind) async throws {
        let outcome = try await exchange([.hang], kind: kind) { $0.timeouts.attempt = .milliseconds(500) }
        #expect(outcome.error?.code == .timedOut)
    }

    @Test("a server that drips one byte at a time: the deadline holds", arguments: TransportKind.allCases)
    func drip(kind: TransportKind) async throws {
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\nok".utf8)
        // A byte a second: the whole answer takes 72 s, so that even a machine whose pool is
        // held for seconds (the full suite beside stress-ng) runs the deadline's end before the
        // answer's; at a byte per 100 ms, one such run saw the 7 s answer win.
        let outcome = try await exchange([.drip(head, interval: .seconds(1))], kind: kind) {
            $0.timeouts.attempt = .seconds(30)
            $0.timeouts.deadline = .milliseconds(700)
        }
        #expect(outcome.error?.code == .timedOut)
    }

    // MARK: - Status lines

    @Test("interim 1xx responses before the final one", arguments: TransportKind.allCases)
    func interimResponses(kind: TransportKind) async throws {
        let outcome = try await exchange(
            [.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"),
             rawResponse(headers: ["Content-Length: 2"], body: "ok")],
            kind: kind)
        switch kind {
        case .asyncHTTPClient:
            let response = try #require(outcome.response, "\(outcome.error.map(String.init(describing:)) ?? "")")
            #expect(response.status.code == 200)
            #expect(response.body == Data("ok".utf8))
        case .urlSession:
            // FoundationNetworking on Linux reports the 100 as the final answer and drops the
            // rest; Callsign refuses that head with a clear error rather than pass a 100 on.
            #if os(Linux)
            #expect(outcome.error?.code == .invalidResponse)
            #else
            #expect(outcome.response?.body == Data("ok".utf8))
            #endif
        }
    }

    @Test("an unsolicited 101 Switching Protocols", arguments: TransportKind.allCases)
    func unsolicitedUpgrade(kind: TransportKind) async throws {
        let outcome = try await exchange(
            [.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\u{81}\u{2}hi"), .pause(.milliseconds(200))],
            kind: kind) { $0.timeouts.attempt = .seconds(2) }
        // Nobody asked for an upgrade: an error (never a hang past the limit, never a crash).
        let error = try #require(outcome.error, "a 101 nobody asked for is not an answer")
        #expect([.transport, .invalidResponse, .timedOut, .unacceptableStatus].contains(error.code))
    }

    /// On AsyncHTTPClient this case traps inside the transport, so it runs in a child process
    /// there (``HostileProcessTests/statusZeroOnAsyncHTTPClient()``).
    @Test("status 000 is not a status", arguments: [TransportKind.urlSession])
    func statusZero(kind: TransportKind) async throws {
        let outcome = try await exchange([rawResponse(status: "000 Nothing", headers: ["Content-Length: 2"], body: "ok")], kind: kind)
        let error = try #require(outcome.error)
        #expect(error.code == .transport || error.code == .invalidResponse)
    }

    @Test("status 999 arrives as a response and fails validation", arguments: TransportKind.allCases)
    func status999(kind: TransportKind) async throws {
        let outcome = try await exchange([rawResponse(status: "999 Odd", headers: ["Content-Length: 2"], body: "ok")], kind: kind)
        let response = try #require(outcome.response, "\(outcome.error.map(String.init(describing:)) ?? "")")
        #expect(response.status.code == 999)
        #expect(throws: APIError.self) { try response.validate() }
    }

    // MARK: - JSON that is not what it claims

    struct Thing: Decodable { var name: String }

    @Test("a JSON body that is not UTF-8", arguments: TransportKind.allCases)
    func notUTF8(kind: TransportKind) async throws {
        let body: [UInt8] = Array("{\"name\": \"".utf8) + [0xFF, 0xFE, 0xC0] + Array("\"}".utf8)
        let outcome = try await exchange(
            [rawResponse(headers: ["Content-Type: application/json", "Content-Length: \(body.count)"]), .bytes(body)], kind: kind,
            call: decoding(Thing.self))
        #expect(outcome.error?.code == .decoding)
    }

    @Test("an HTML error page where JSON is expected", arguments: TransportKind.allCases)
    func htmlInsteadOfJSON(kind: TransportKind) async throws {
        let page = "<html><body><h1>502 Bad Gateway</h1></body></html>"
        let outcome = try await exchange(
            [rawResponse(headers: ["Content-Type: text/html", "Content-Length: \(page.utf8.count)"], body: page)], kind: kind,
            call: decoding(Thing.self))
        let error = try #require(outcome.error)
        #expect(error.code == .decoding)
        #expect(error.message.contains("Thing"))
    }

    @Test("JSON nested 100,000 deep", arguments: TransportKind.allCases)
    func deepJSON(kind: TransportKind) async throws {
        let body = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let outcome = try await exchange(
            [rawResponse(headers: ["Content-Type: application/json", "Content-Length: \(body.utf8.count)"], body: body)], kind: kind,
            call: decoding(JSONValue.self))
        #expect(outcome.error?.code == .decoding)
    }

    @Test("a JSON depth limit of the user's choosing", arguments: TransportKind.allCases)
    func jsonDepthLimit(kind: TransportKind) async throws {
        let body = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        let script = [rawResponse(headers: ["Content-Type: application/json", "Content-Length: \(body.utf8.count)"], body: body)]
        let decodeCall = decoding(JSONValue.self)
        let refused = try await exchange(script, kind: kind, configure: { $0.limits.maximumJSONDepth = 64 }, call: decodeCall)
        #expect(refused.error?.code == .decoding)
        #expect(refused.error?.message.contains("deeper than 64") == true)
        let accepted = try await exchange(script, kind: kind, call: decodeCall)
        #expect(accepted.error == nil)
    }
}

/// Bodies that are small on the wire and large once read.
enum HostileBodies {
    /// A gzip stream of `decodedSize` zero bytes (about a thousandth of that on the wire).
    static func gzipBomb(decodedSize: Int) -> [UInt8]? {
        guard let data = RawServer.gzip(Data(count: decodedSize)) else { return nil }
        return Array(data)
    }
}
