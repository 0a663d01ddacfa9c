import Callsign
import CallsignTesting
import Foundation
import Testing

/// A request is queued only when no byte of it reached the server, or when arriving twice is
/// harmless; anything else is a distinct outcome the caller can tell apart.
@Suite("Offline delivery: queue only what never reached the server", .timeLimit(.minutes(2)))
struct OfflineDeliveryTests {
    /// Sends `request` with the offline store policy through a client on `kind`; returns the
    /// error and how many requests wait in the queue afterwards.
    private func sendOffline(
        _ request: Request, to baseURL: URL, kind: TransportKind, configure: (inout APIClient.Configuration) -> Void = { _ in }
    ) async throws -> (error: APIError?, queued: Int) {
        let queue = MemoryOfflineQueue()
        var configuration = APIClient.Configuration()
        configuration.baseURL = baseURL
        configuration.offlineQueue = queue
        configuration.retry = .none
        configuration.timeout = .milliseconds(500)
        configure(&configuration)
        let transport = kind.make()
        defer { Task { try? await transport.shutdown() } }
        let client = APIClient(configuration: configuration, transport: transport)
        var request = request
        request.storePolicy = .offline
        let error = await apiError { _ = try await client.send(request) }
        return (error, await queue.list(.pending).count)
    }

    @Test("connection refused: nothing was sent, so the POST is queued", arguments: TransportKind.allCases)
    func refusedIsQueued(kind: TransportKind) async throws {
        let refusing = try RefusingPort()
        let outcome = try await sendOffline(.post("notes", parameters: ["text": "a"]), to: URL(string: "http://127.0.0.1:\(refusing.port)/")!, kind: kind)
        #expect(outcome.error?.code == .queuedOffline)
        #expect(outcome.queued == 1)
        withExtendedLifetime(refusing) {}
    }

    @Test("a slow POST (sent, no answer) is not queued: the server may have processed it", arguments: TransportKind.allCases)
    func slowPostIsNotQueued(kind: TransportKind) async throws {
        try await RawServer.withRunning([.hang]) { server in
            let outcome = try await sendOffline(.post("notes", parameters: ["text": "a"]), to: server.baseURL, kind: kind)
            #expect(outcome.error?.code == .deliveryUnknown)
            #expect(outcome.error?.requestSent == true)
            #expect(outcome.error?.message.contains("may have processed") == true)
            #expect(outcome.queued == 0)
        }
    }

    @Test("a reset after the POST was written is not queued either", arguments: TransportKind.allCases)
    func resetAfterWriteIsNotQueued(kind: TransportKind) async throws {
        try await RawServer.withRunning([.pause(.milliseconds(20)), .reset]) { server in
            let outcome = try await sendOffline(.post("notes", parameters: ["text": "a"]), to: server.baseURL, kind: kind)
            #expect(outcome.error?.code == .deliveryUnknown)
            #expect(outcome.queued == 0)
        }
    }

    @Test("with an Idempotency-Key the server honours, a sent POST is queued (the server deduplicates)", arguments: TransportKind.allCases)
    func keyedPostIsQueued(kind: TransportKind) async throws {
        try await RawServer.withRunning([.hang]) { server in
            var request = Request.post("notes", parameters: ["text": "a"])
            request.headers["Idempotency-Key"] = "note-a-1"
            let outcome = try await sendOffline(request, to: server.baseURL, kind: kind)
            #expect(outcome.error?.code == .queuedOffline)
            #expect(outcome.queued == 1)
            let keyed = try await sendOffline(.post("notes", parameters: ["text": "b"]), to: server.baseURL, kind: kind) {
                $0.retry = RetryPolicy(maximumAttempts: 1, addsIdempotencyKey: true)
            }
            #expect(keyed.error?.code == .queuedOffline)
        }
    }

    @Test("an idempotent PUT that got no answer is queued: arriving twice changes nothing", arguments: TransportKind.allCases)
    func idempotentIsQueued(kind: TransportKind) async throws {
        try await RawServer.withRunning([.hang]) { server in
            let outcome = try await sendOffline(.put("notes/1", parameters: ["text": "a"]), to: server.baseURL, kind: kind)
            #expect(outcome.error?.code == .queuedOffline)
        }
    }

    @Test("TLS failures are final: their own code, never retried, never queued", arguments: TransportKind.allCases)
    func tlsIsFinal(kind: TransportKind) async throws {
        // A server that answers a TLS ClientHello with plain HTTP: the handshake cannot succeed.
        try await RawServer.withRunning([rawResponse(headers: ["Content-Length: 2"], body: "ok")], waitsForRequest: false) { server in
            let https = URL(string: "https://127.0.0.1:\(server.port)/")!
            let outcome = try await sendOffline(.post("notes", parameters: ["text": "a"]), to: https, kind: kind) {
                $0.retry = RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(1))
                $0.timeout = .seconds(30)  // the handshake fails at once; a loaded machine must not turn it into a timeout
            }
            #expect(outcome.error?.code == .tls, "\(outcome.error.map(String.init(describing:)) ?? "no error")")
            #expect(outcome.error?.requestSent == false)
            #expect(outcome.queued == 0)
            #expect(server.connectionCount == 1, "a TLS failure is not retried")
        }
    }
}
