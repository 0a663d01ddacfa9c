import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Testing

/// The suite every transport must pass, run against the in-process server.
@Suite("Transports: the same suite for AsyncHTTPClient and URLSession", .hangGuard)
struct TransportSuiteTests {
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

    @Test("POST sends the body byte for byte", arguments: TransportKind.allCases)
    func postBody(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let payload = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            _ = try await client.post("/anything").body(.data(payload)).send()
            #expect(server.requests.last?.body == payload)
            #expect(server.requests.last?.header("Content-Type") == "application/octet-stream")
        }
    }

    @Test("every status arrives as a response, never as a transport error", arguments: TransportKind.allCases)
    func statuses(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            for code in [200, 201, 204, 400, 401, 404, 418, 500, 503] {
                let response = try await client.get("/status/\(code)").send()
                #expect(response.status.code == code)
            }
        }
    }

    @Test("transports return redirects instead of following them", arguments: TransportKind.allCases)
    func redirectsNotFollowed(kind: TransportKind) async throws {
        try await withServer(transport: kind, configure: { $0.redirects = .none }) { server, client in
            let response = try await client.get("/redirect/2").send()
            #expect(response.status.code == 302)
            #expect(response.headers[.location] == "/redirect/1")
            #expect(server.hits("/redirect/1") == 0)
        }
    }

    @Test("large binary bodies arrive byte-exact", arguments: TransportKind.allCases)
    func bytes(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let response = try await client.get("/bytes/3000000").send()
            #expect(response.body == TestServer.expectedBytes(count: 3_000_000))
        }
    }

    @Test("a body over the size cap fails with responseTooLarge", arguments: TransportKind.allCases)
    func overCap(kind: TransportKind) async throws {
        try await withServer(transport: kind, configure: { $0.limits.maximumResponseBodySize = 64 * 1024 }) { server, client in
            let under = try await client.get("/bytes/65536").send()
            #expect(under.body.count == 65536)
            let error = await apiError { _ = try await client.get("/bytes/65537").send() }
            #expect(error?.code == .responseTooLarge)
            // Without a Content-Length the cap applies while reading.
            server.route("/chunked") { _ in
                ServerResponse(headers: [("Transfer-Encoding", "chunked")], body: .generated(count: 200_000))
            }
            let streamed = await apiError { _ = try await client.get("/chunked").send() }
            #expect(streamed?.code == .responseTooLarge)
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

    @Test("a connection reset mid-body is a transport error", arguments: TransportKind.allCases)
    func resetMidBody(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let error = await apiError { _ = try await client.get("/misbehave/reset").query(["bytes": 100_000, "after": 1000]).send() }
            #expect(error?.code == .transport || error?.code == .invalidResponse)
        }
    }

    @Test("a truncated body is an error, not a short success", arguments: TransportKind.allCases)
    func truncated(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let error = await apiError { _ = try await client.get("/misbehave/truncated").query(["bytes": 5000, "after": 100]).send() }
            #expect(error != nil)
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

    @Test("cancelling the calling task reports cancelled", arguments: TransportKind.allCases)
    func cancellation(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let arrived = AsyncStream<Void>.makeStream()
            server.route("/hang") { _ in
                arrived.continuation.yield()
                return ServerResponse(status: 200).with(.delay(.seconds(30)))
            }
            let task = Task { try await client.get("/hang").send() }
            var iterator = arrived.stream.makeAsyncIterator()
            await iterator.next()  // the server has the request: it is in flight
            task.cancel()
            let result = await task.result
            guard case .failure(let error as APIError) = result else {
                Issue.record("expected an APIError, got \(result)")
                return
            }
            #expect(error.code == .cancelled)
            #expect(error.isCancellation)
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

    @Test("HEAD requests get headers and no body", arguments: TransportKind.allCases)
    func head(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let response = try await client.head("/get").send()
            #expect(response.status == .ok)
            #expect(response.body.isEmpty)
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
