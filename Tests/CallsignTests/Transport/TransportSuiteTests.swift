import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Testing

/// The suite every transport must pass, run against the in-process server.
@Suite("Transports: the same suite for AsyncHTTPClient and URLSession", .hangGuard)
struct TransportSuiteTests {
    // What every transport must do — request head and body, statuses, redirects returned, large
    // and capped bodies, broken bodies, HEAD, cancellation — is the suite CallsignTesting ships
    // to everybody who writes a transport; the checks below are the ones it cannot make alone.
    @Test("each transport passes every TransportConformance check", arguments: TransportKind.allCases, TransportConformance.Check.allCases)
    func conformance(kind: TransportKind, check: TransportConformance.Check) async throws {
        try await TransportConformance { kind.make() }.run(check)
    }

    /// A transport that loses request bodies: the suite must name the check it fails.
    private struct BodylessTransport: Transport {
        let base: any Transport
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            var request = request
            request.body = nil
            return try await base.send(request)
        }
        func shutdown() async throws { try await base.shutdown() }
    }

    @Test("a transport that drops request bodies fails TransportConformance's body check, which names it")
    func brokenTransportIsReported() async throws {
        let suite = TransportConformance { BodylessTransport(base: TransportKind.asyncHTTPClient.make()) }
        let failure = await #expect(throws: ConformanceFailure.self) { try await suite.run(.requestBody) }
        #expect(failure?.check == TransportConformance.Check.requestBody.description)
        #expect(failure?.suite == "TransportConformance")
        try await suite.run(.requestHead)
    }

    @Test("GET echoes method, path, query and headers", arguments: TransportKind.allCases)
    func get(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let response = try await client.get("/get").query(["a": "1"]).header("X-Trace", "t-1").send()
            #expect(response.status == .ok)
            #expect(response.mediaType == "application/json")
            let echo = try response.json()
            #expect(echo["method"] == "GET")
            #expect(echo["args"]?["a"] == "1")
            #expect(echo["headers"]?["X-Trace"] == "t-1")
            #expect(response.request.url == server.url("/get?a=1"))
            #expect(response.duration > .zero)
        }
    }

    @Test("a body read into memory reports its progress; one that outgrows the cap keeps its status", arguments: TransportKind.allCases)
    func collectedBody(kind: TransportKind) async throws {
        try await withServer(transport: kind, configure: { $0.limits.maximumResponseBodySize = 1_000_000 }) { server, client in
            let task = client.start(.get("/bytes/600000"))
            var reports: [TransferProgress] = []
            for await progress in task.progress where progress.direction == .download { reports.append(progress) }
            let response = try await task.response
            #expect(response.body == TestServer.expectedBytes(count: 600_000))
            #expect(reports.last?.completedBytes == 600_000)
            #expect(reports.last?.fraction == 1.0)
            #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes })
            // No length announced: the cap is met while the body arrives, after the head.
            server.route("/chunked") { _ in
                ServerResponse(status: 203, headers: [("Transfer-Encoding", "chunked")], body: .generated(count: 3_000_000))
            }
            let error = await apiError { _ = try await client.get("/chunked").send() }
            #expect(error?.code == .responseTooLarge)
            #expect(error?.statusCode == 203)
        }
    }

    @Test("a refused connection is a transport error", arguments: TransportKind.allCases)
    func refused(kind: TransportKind) async throws {
        // A port bound but not listening: a stopped server's port could go to another test's server.
        let refusing = try RefusingPort()
        defer { refusing.release() }
        let transport = kind.make()
        let client = APIClient(configuration: .init { $0.retry = .none }, transport: transport)
        let error = await apiError { _ = try await client.send(.get("http://127.0.0.1:\(refusing.port)/get")) }
        try await transport.shutdown()
        #expect(error?.code == .transport)
    }

    @Test("the per-attempt timeout ends a slow call with timedOut", arguments: TransportKind.allCases)
    func timeout(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let clock = ContinuousClock()
            let started = clock.now
            let error = await apiError {
                _ = try await client.get("/misbehave/slow-body").query(["bytes": 18_000, "interval_ms": 200]).timeout(.milliseconds(300)).send()
            }
            #expect(error?.code == .timedOut)
            #expect(error?.message.contains("300 ms") == true)
            // The whole body would take an hour: ending at all, the attempt ended before its last byte.
            #expect(clock.now - started < .seconds(3600))
        }
    }

    @Test("a call cancelled at any moment — before its request reaches the event loop, while it waits, in flight — ends as cancelled, and the connection is closed", arguments: TransportKind.allCases)
    func cancellationAtAnyMoment(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let closed = AsyncStream<Void>.makeStream()
            var results: [Result<Response, any Error>] = []
            for index in 0..<40 {
                let arrived = AsyncStream<Void>.makeStream()
                server.route("/held/\(index)") { request in
                    arrived.continuation.yield()
                    // Never answers: only the client's cancellation ends the call.
                    await request.waitForClientToClose()
                    closed.continuation.yield()
                    return ServerResponse(status: 200)
                }
                let task = Task { try await client.get("/held/\(index)").send() }
                // Cancelled at once, after a few turns of the executor, or once the server has it.
                if index % 4 == 3 {
                    var iterator = arrived.stream.makeAsyncIterator()
                    await iterator.next()
                } else {
                    for _ in 0..<(index % 4) * 3 { await Task.yield() }
                }
                task.cancel()
                results.append(await task.result)
            }
            for result in results {
                guard case .failure(let error as APIError) = result else {
                    Issue.record("expected a cancelled call, got \(result)")
                    continue
                }
                #expect(error.code == .cancelled, "\(error)")
            }
            // Every request the server has seen had its connection closed.
            let seen = (0..<40).reduce(0) { $0 + server.hits("/held/\($1)") }
            #expect(seen >= 10)
            var iterator = closed.stream.makeAsyncIterator()
            for _ in 0..<seen { await iterator.next() }
        }
    }

}

@Suite("Downloads to file", .hangGuard)
struct DownloadTests {
    @Test("the body goes to the file byte-exact, atomically, readable only by this user", arguments: TransportKind.allCases)
    func download(kind: TransportKind) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-dl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("bytes.bin")
        try await withServer(transport: kind, configure: { $0.limits.maximumResponseBodySize = 1024 }) { server, client in
            let task = client.startDownload(.get("bytes/3000000"), to: destination)
            var last: TransferProgress?
            for await update in task.progress { last = update }
            let response = try await task.response
            #expect(response.fileURL == destination)
            #expect(response.body.isEmpty)
            #expect(try Data(contentsOf: destination) == TestServer.expectedBytes(count: 3_000_000))
            #expect(last?.fraction == 1)
            let permissions = try FileManager.default.attributesOfItem(atPath: destination.path)[.posixPermissions] as? Int
            #expect(permissions == 0o600)

            // A second download replaces the file in one step.
            _ = try await client.download(.get("bytes/3000000"), to: destination)
            #expect(try Data(contentsOf: destination) == TestServer.expectedBytes(count: 3_000_000))

            // A short body leaves the destination as it was, and no partial file behind.
            let error = await apiError {
                _ = try await client.download(.get("misbehave/truncated").adding(parameters: ["bytes": 5000, "after": 100]), to: destination)
            }
            #expect(error != nil)
            #expect(try Data(contentsOf: destination).count == 3_000_000)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["bytes.bin"])

            let notFound = await apiError { _ = try await client.download(.get("status/404"), to: folder.appendingPathComponent("x")) }
            #expect(notFound?.code == .unacceptableStatus)
        }
    }
}
