@testable import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// Whether the calling thread is one of SwiftNIO's event-loop threads (NIO names them
/// `NIO-ELT-…`, and the process-wide group's `NIO-SGLTN-…`).
private func onEventLoopThread() -> Bool {
    Thread.current.name?.hasPrefix("NIO-") ?? false
}

/// A middleware that notes, for every request, whether it ran on an event-loop thread.
private final class ThreadProbe: Middleware {
    private let seen = Mutex<[Bool]>([])
    var observations: [Bool] { seen.withLock { $0 } }

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let onLoop = onEventLoopThread()
        seen.withLock { $0.append(onLoop) }
        return try await next(request)
    }
}

@Test("the URLSession transport offers no task executor: its tasks run where URLSession's delegate calls")
func urlSessionOffersNoExecutor() async throws {
    let session = URLSessionTransport()
    #expect(session.preferredTaskExecutor == nil)
    try await session.shutdown()
}

// AsyncHTTPClientTransport is built where Package.swift links AsyncHTTPClient into Callsign.
#if os(Linux) || os(Android) || os(Windows)
@Suite("Task executors: calls on the transport's event loops", .hangGuard)
struct TaskExecutorTests {
    @Test("the AsyncHTTPClient transport offers its event loops")
    func transportsOfferExecutors() async throws {
        let transport = AsyncHTTPClientTransport()
        #expect(transport.preferredTaskExecutor != nil)
        try await transport.shutdown()
    }

    @Test("tasks the client starts stay off the transport's loops by default; usesTransportExecutor = true puts them there")
    func startedTasksUseTheTransportExecutor() async throws {
        #expect(APIClient.Configuration().tasks.usesTransportExecutor == false, "user code stays off event loops unless opted in")
        try await TestServer.withRunning { server in
            let transport = AsyncHTTPClientTransport()
            for uses in [true, false] {
                let probe = ThreadProbe()
                let client = APIClient(
                    configuration: .init {
                        $0.baseURL = server.baseURL
                        $0.middlewares = [probe]
                        $0.tasks.usesTransportExecutor = uses
                    }, transport: transport)
                let started = try await client.start(.get("get")).response
                #expect(started.status.code == 200)
                // A call shared by identifier runs in a task of the client's too.
                let shared = try await client.send(Request.get("get").with { $0.identifier = "probe" })
                #expect(shared.status.code == 200)
                #expect(probe.observations == [uses, uses])
            }
            try await transport.shutdown()
        }
    }

    @Test("a calling task that prefers the transport's executor runs the whole call on a loop; a plain one does not")
    func callerChoosesTheExecutor() async throws {
        try await TestServer.withRunning { server in
            let transport = AsyncHTTPClientTransport()
            let probe = ThreadProbe()
            let client = APIClient(
                configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.middlewares = [probe]
                }, transport: transport)
            let onLoops = try await withTaskExecutorPreference(transport.preferredTaskExecutor) {
                let first = try await client.send(.get("json")).validate()
                let second = try await client.send(.get("get")).validate()
                // Still on a loop after the responses arrived: they resumed the task where they landed.
                return (first.status.code, second.status.code, onEventLoopThread())
            }
            #expect(onLoops.0 == 200 && onLoops.1 == 200 && onLoops.2)
            _ = try await Task.detached { try await client.send(.get("get")).validate() }.value
            #expect(probe.observations == [true, true, false])
            try await transport.shutdown()
        }
    }

    @Test("a call on the loops still honours cancellation and its deadline")
    func cancellationOnTheLoops() async throws {
        try await TestServer.withRunning { server in
            let transport = AsyncHTTPClientTransport()
            let client = APIClient(
                configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.retry = .none
                }, transport: transport)
            let timedOut = await withTaskExecutorPreference(transport.preferredTaskExecutor) { () async -> APIError? in
                do throws(APIError) {
                    _ = try await client.send(Request.get("delay/5").with { $0.timeout = .milliseconds(200) })
                    return nil
                } catch {
                    return error
                }
            }
            #expect(timedOut?.code == .timedOut)
            let task = client.start(.get("delay/5"))
            task.cancel()
            let result = await task.result
            #expect(throws: APIError.self) { try result.get() }
            if case .failure(let error) = result { #expect(error.code == .cancelled) }
            try await transport.shutdown()
        }
    }
}

@Suite("AsyncHTTPClient transport settings", .hangGuard)
struct AsyncHTTPClientSettingsTests {
    @Test("the owned HTTPClient emits no spans of its own: Callsign traces each attempt, so there are no duplicates")
    func noDuplicateSpans() async throws {
        let transport = AsyncHTTPClientTransport()
        #expect(transport.httpClient.tracer == nil)
        try await transport.shutdown()
    }
}
#endif
