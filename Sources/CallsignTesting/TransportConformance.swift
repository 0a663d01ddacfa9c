public import Callsign
import Foundation
import HTTPTypes

/// The checks every `Transport` must pass, shipped so a transport written outside the package
/// is held to what `AsyncHTTPClientTransport` and `URLSessionTransport` are (Callsign's own
/// transport tests run this suite on both).
///
/// Each check starts a ``TestServer`` on 127.0.0.1, makes a transport with `makeTransport`,
/// calls the server through an `APIClient` (no retries, no redirects followed), and shuts the
/// transport down. Failures are thrown as ``ConformanceFailure`` (one check) or
/// ``ConformanceFailures`` (a whole run), so the suite works from Swift Testing and XCTest alike.
///
/// ```swift
/// @Test("my transport keeps the Transport contract", arguments: TransportConformance.Check.allCases)
/// func conforms(check: TransportConformance.Check) async throws {
///     try await TransportConformance { MyTransport() }.run(check)
/// }
/// ```
public struct TransportConformance: ConformanceSuite {
    /// One promise of the `Transport` contract.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// Method, path, query and header fields reach the server as sent.
        case requestHead
        /// A request body reaches the server byte for byte.
        case requestBody
        /// Every status, 4xx and 5xx included, arrives as a response, never as an error.
        case statuses
        /// A redirect is returned, not followed: following them is the pipeline's work.
        case redirectsReturned
        /// A large binary body arrives byte-exact.
        case largeBody
        /// A body at `Limits.maximumResponseBodySize` arrives; one past it fails with
        /// `APIError.Code.responseTooLarge`, with or without a `Content-Length`.
        case sizeCap
        /// A connection reset or a body cut short is an error, never a short success.
        case brokenBody
        /// A `HEAD` answer has its head and no body.
        case head
        /// Cancelling the calling task while the request is in flight ends it as
        /// `APIError.Code.cancelled`, at once.
        case cancellation

        /// What the check promises, for a report.
        public var description: String {
            switch self {
            case .requestHead: "method, path, query and fields reach the server as sent"
            case .requestBody: "a request body arrives byte for byte"
            case .statuses: "every status is a response, never an error"
            case .redirectsReturned: "redirects are returned, not followed"
            case .largeBody: "a large binary body arrives byte-exact"
            case .sizeCap: "a body past the size cap is responseTooLarge"
            case .brokenBody: "a reset or truncated body is an error"
            case .head: "HEAD gets a head and no body"
            case .cancellation: "cancelling the calling task ends the call as cancelled"
            }
        }
    }

    private let makeTransport: @Sendable () throws -> any Transport

    /// A suite for the transports `makeTransport` makes (a new one for each check, shut down
    /// after it).
    public init(makeTransport: @escaping @Sendable () throws -> any Transport) {
        self.makeTransport = makeTransport
    }

    /// Runs one check, and throws a ``ConformanceFailure`` naming it when it fails.
    public func run(_ check: Check) async throws {
        let expect = ConformanceExpectation(suite: Self.suite, check: check.description)
        let transport = try await expect.call("makeTransport") { try makeTransport() }
        do {
            try await TestServer.withRunning { server in
                let client = APIClient(configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.retry = .none
                    $0.redirects = .none
                    $0.limits.maximumResponseBodySize = 1 << 20
                }, transport: transport)
                try await run(check, server, client, expect)
            }
        } catch {
            try? await transport.shutdown()
            throw error
        }
        try await expect.call("shutdown()") { try await transport.shutdown() }
    }

    static let suite = "TransportConformance"

    /// What a call threw, as an `APIError`; `nil` when it succeeded.
    private func failure(_ body: () async throws -> Void) async -> APIError? {
        do {
            try await body()
            return nil
        } catch let error as APIError {
            return error
        } catch {
            return APIError(.transport, "\(error)")
        }
    }

    private func run(_ check: Check, _ server: TestServer, _ client: APIClient, _ expect: ConformanceExpectation) async throws {
        switch check {
        case .requestHead:
            _ = try await expect.call("GET /anything/a") { try await client.get("/anything/a").query(["q": "1 2"]).header("X-Trace", "t-1").send() }
            let seen = try expect.require(server.requests.last, "the server received nothing")
            try expect.require(seen.method == "GET" && seen.rawPath == "/anything/a", "the server saw \(seen.method) \(seen.rawPath)")
            try expect.require(seen.queryItems.contains { $0.name == "q" && $0.value == "1 2" }, "the query arrived as \(seen.rawQuery ?? "none")")
            try expect.require(seen.header("X-Trace") == "t-1", "X-Trace arrived as \(seen.header("X-Trace") ?? "nothing")")
        case .requestBody:
            let payload = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            _ = try await expect.call("POST /anything") { try await client.post("/anything").body(.data(payload)).send() }
            let seen = server.requests.last?.body ?? Data()
            try expect.require(seen == payload, "the server received \(seen.count) bytes, not the \(payload.count) sent, or others")
        case .statuses:
            for code in [200, 201, 204, 400, 401, 404, 418, 500, 503] {
                let response = try await expect.call("GET /status/\(code)") { try await client.get("/status/\(code)").send() }
                try expect.require(response.status.code == code, "/status/\(code) arrived as \(response.status.code)")
            }
        case .redirectsReturned:
            let response = try await expect.call("GET /redirect/2") { try await client.get("/redirect/2").send() }
            try expect.require(response.status.code == 302 && server.hits("/redirect/1") == 0, "a redirect was followed (status \(response.status.code))")
        case .largeBody:
            let response = try await expect.call("GET /bytes/1000000") { try await client.get("/bytes/1000000").send() }
            try expect.require(response.body == TestServer.expectedBytes(count: 1_000_000), "\(response.body.count) bytes arrived, or other bytes")
        case .sizeCap:
            let atCap = try await expect.call("GET /bytes/\(1 << 20)") { try await client.get("/bytes/\(1 << 20)").send() }
            try expect.require(atCap.body.count == 1 << 20, "a body exactly at the cap arrived as \(atCap.body.count) bytes")
            let declared = await failure { _ = try await client.get("/bytes/\((1 << 20) + 1)").send() }
            try expect.require(declared?.code == .responseTooLarge, "a body one byte past the cap ended as \(declared.map { "\($0.code)" } ?? "a success")")
            server.route("/chunked") { _ in ServerResponse(headers: [("Transfer-Encoding", "chunked")], body: .generated(count: 3 << 20)) }
            let streamed = await failure { _ = try await client.get("/chunked").send() }
            try expect.require(streamed?.code == .responseTooLarge, "a chunked body past the cap ended as \(streamed.map { "\($0.code)" } ?? "a success")")
        case .brokenBody:
            let reset = await failure { _ = try await client.get("/misbehave/reset").query(["bytes": 100_000, "after": 1000]).send() }
            try expect.require(
                reset?.code == .transport || reset?.code == .invalidResponse,
                "a connection reset mid-body ended as \(reset.map { "\($0.code)" } ?? "a success"), not a transport error")
            let truncated = await failure { _ = try await client.get("/misbehave/truncated").query(["bytes": 5000, "after": 100]).send() }
            try expect.require(truncated != nil, "a body cut short was a success")
        case .head:
            let response = try await expect.call("HEAD /get") { try await client.head("/get").send() }
            try expect.require(response.status.code == 200 && response.body.isEmpty, "HEAD got status \(response.status.code) and \(response.body.count) body bytes")
        case .cancellation:
            let arrived = AsyncStream<Void>.makeStream()
            server.route("/hang") { _ in
                arrived.continuation.yield()
                return ServerResponse(status: 200).with(.delay(.seconds(30)))
            }
            let task = Task { try await client.get("/hang").send() }
            var iterator = arrived.stream.makeAsyncIterator()
            await iterator.next()  // the server has the request: it is in flight
            task.cancel()
            let error = await failure { _ = try await task.value }
            try expect.require(error?.code == .cancelled, "a cancelled call ended as \(error.map { "\($0.code)" } ?? "a success")")
        }
    }
}
