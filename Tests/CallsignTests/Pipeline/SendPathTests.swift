import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Logging
import Synchronization
import Testing

/// What a transport was asked, kept by ``Witness``.
struct TransportAsk: Sendable {
    var path: String
    var bodyReading: TransportRequest.BodyReading
    var deadline: ContinuousClock.Instant?
    var sentAt: ContinuousClock.Instant
}

/// A transport that records every request and hands it to a real one.
final class Witness: Transport {
    let base: any Transport
    let asks = Mutex<[TransportAsk]>([])

    init(_ base: any Transport) { self.base = base }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let ask = TransportAsk(
            path: request.head.path ?? "", bodyReading: request.bodyReading, deadline: request.attemptDeadline, sentAt: .now)
        asks.withLock { $0.append(ask) }
        return try await base.send(request)
    }

    var enforcesAttemptDeadlines: Bool { base.enforcesAttemptDeadlines }
    var decodesContentEncoding: Bool { base.decodesContentEncoding }
}

/// A transport that never answers: only the timeout stage can end an attempt on it.
struct Silent: Transport {
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        try await Task.sleep(for: .seconds(3600))
        throw CancellationError()
    }
}

/// The base URL of ``ServerEndpoint``, set by the one test that uses it.
let serverEndpointBase = Mutex<URL?>(nil)

/// An endpoint whose base URL is the test server: the code vouches for that origin.
enum ServerEndpoint: Endpoint {
    case echo
    case missing

    static var baseURL: URL? { serverEndpointBase.withLock { $0 } }
    static var headers: Headers { ["X-Endpoint": "shared"] }

    var request: Request {
        var request: Request
        switch self {
        case .echo: request = .get("anything/file")
        case .missing: request = .get("status/404")
        }
        request.needsAuthorization = true
        return request
    }

    var acceptedStatusCodes: StatusCodes? {
        self == .missing ? [200, 404] : nil
    }
}

/// An endpoint answered only by mocks (real requests off): nothing leaves the process.
enum MockedEndpoint: Endpoint {
    case echo

    static var baseURL: URL? { URL(string: "https://api.example.test/") }

    var request: Request {
        var request = Request.get("anything/file")
        request.needsAuthorization = true
        return request
    }
}

@Suite("One send path: the stages down to the transport", .hangGuard)
struct SendPathTests {
    @Test("a call asks the transport to collect under the client's cap and the attempt's deadline; streams and downloads ask for a stream")
    func bodyReadingAndDeadline() async throws {
        try await TestServer.withRunning { server in
            let witness = Witness(APIClient.defaultTransport)
            let client = APIClient(
                configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.timeouts = .init(attempt: .seconds(300), idle: nil)  // generous: a busy machine must not end these calls
                    $0.limits.maximumResponseBodySize = 5000
                }, transport: witness)
            let beforeSend = ContinuousClock.now
            _ = try await client.send(.get("bytes/10"))
            let streamed = try await client.stream(.get("bytes/10"))
            for try await _ in streamed.chunks {}
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-path-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            _ = try await client.download(.get("bytes/10"), to: folder.appendingPathComponent("ten"))

            let asks = witness.asks.withLock { $0 }
            #expect(asks.map(\.bodyReading) == [.collect(limit: 5000), .stream, .stream])
            // The collected call carries its deadline to a transport that enforces it: no timer race.
            let collected = try #require(asks.first)
            let deadline = try #require(collected.deadline)
            // Ordering only: 300 s from a moment between the call's start and the transport's ask.
            #expect(beforeSend + .seconds(300) <= deadline && deadline <= collected.sentAt + .seconds(300), "the deadline is the attempt's 300 s")
            // A download has no per-attempt limit unless the request sets one.
            #expect(asks.last?.deadline == nil)
        }
    }

    @Test("a transport that does not enforce deadlines is raced by the timeout stage")
    func racedTimeout() async throws {
        let client = APIClient(configuration: .init { $0.retry = .none }, transport: Silent())
        let error = await apiError {
            _ = try await client.send(Request.get("http://127.0.0.1:9/never").with { $0.timeout = .milliseconds(100) })
        }
        #expect(error?.code == .timedOut)
        #expect(error?.message.contains("100 ms") == true, "\(error?.message ?? "")")
    }

    @Test("download(Endpoint) prepares the request as send(Endpoint) does: credentials for its origin, shared headers, accepted statuses")
    func downloadEndpoint() async throws {
        try await TestServer.withRunning { server in
            serverEndpointBase.withLock { $0 = server.baseURL }
            // No client base URL: only the endpoint's own base vouches for the server's origin.
            let client = APIClient(configuration: .init { $0.authentication = .bearer("endpoint-token") })
            let sent = try await client.send(ServerEndpoint.echo).json()
            #expect(sent["headers"]?["Authorization"] == "Bearer endpoint-token")

            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-endpoint-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("echo.json")
            let downloaded = try await client.download(ServerEndpoint.echo, to: file)
            #expect(downloaded.fileURL == file)
            let echo = try JSONValue(parsing: Data(contentsOf: file))
            #expect(echo["headers"]?["Authorization"] == "Bearer endpoint-token")
            #expect(echo["headers"]?["X-Endpoint"] == "shared")
            // The endpoint accepts 404: the download's validation does too.
            let missing = try await client.download(ServerEndpoint.missing, to: folder.appendingPathComponent("missing"))
            #expect(missing.status.code == 404)
        }
    }

    @Test("mocks answer at their stage with the API name and endpoint value, for downloads too")
    func mocksSeeEndpoints() async throws {
        let seen = Mutex<[String]>([])
        let client = APIClient(
            configuration: .init {
                $0.authentication = .bearer("t")
                $0.mocks = Mocks(realRequests: false) { request in
                    let name = (request.endpoint as? MockedEndpoint).map { "\($0)" } ?? "none"
                    seen.withLock { $0.append("\(name) \(request.headers["Authorization"] ?? "-")") }
                    return .data(Data("mocked".utf8))
                }
            })
        _ = try await client.send(MockedEndpoint.echo)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-mock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("mocked.txt")
        _ = try await client.download(MockedEndpoint.echo, to: file)
        #expect(try String(contentsOf: file, encoding: .utf8) == "mocked")
        #expect(seen.withLock { $0 } == ["echo Bearer t", "echo Bearer t"])
    }

    @Test("a request's own logger gets its call's lines; the client's logger gets none of them")
    func perCallLogger() async throws {
        let clientLines = CapturingLogHandler()
        let callLines = CapturingLogHandler()
        try await withServer(configure: { $0.observability.logger = Logger(label: "client") { _ in clientLines } }) { _, client in
            var request = Request.get("json")
            request.logger = Logger(label: "call") { _ in callLines }
            _ = try await client.send(request)
            let lines = callLines.lines.withLock { $0 }
            #expect(lines.contains { $0.hasPrefix("debug sending attempt") })
            #expect(lines.contains { $0.hasPrefix("debug received response") })
            #expect(lines.contains { $0.hasPrefix("debug request finished") })
            #expect(clientLines.lines.withLock { $0 }.isEmpty)
        }
    }

    @Test("the stage order is documented and every stage has a name")
    func stageOrder() {
        #expect(
            MiddlewareStage.order.map(\.description) == [
                "observability", "commonParameters", "clientInfo", "offline", "deadline", "retry", "hedging", "redirects", "authentication",
                "cookies", "cache", "circuitBreaker", "rateLimit", "recording", "timeout", "body", "decompression", "encoding",
            ])
        #expect(WireStage.order.map(\.description) == ["signing", "mocks", "transport"])
    }
}
