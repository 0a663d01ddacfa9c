import Callsign
import CallsignPostgres
import CallsignTesting
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing

@Suite("OutboxWorker: a Service that drains the outbox", .hangGuard, .sharedPostgresCluster)
struct OutboxWorkerTests {
    @Test("a committed enqueue wakes the worker at once through NOTIFY (polling is an hour away)")
    func wakesOnNotify() async throws {
        try await withPostgres { _, postgres in
            try await TestServer.withRunning { server in
                let arrived = AsyncStream<String>.makeStream()
                server.route("/anything/charges") { request in
                    arrived.continuation.yield(request.header("Idempotency-Key") ?? "")
                    return ServerResponse(status: 201)
                }
                let (queue, client) = try outboxClient(postgres, server: server)
                let worker = OutboxWorker(client: client, concurrency: 2, pollInterval: .seconds(3600))
                let group = ServiceGroup(services: [worker], logger: Logger(label: "tests"))
                let running = Task { try await group.run() }
                defer { running.cancel() }
                var arrivals = arrived.stream.makeAsyncIterator()
                for order in 1...3 {
                    let stored = try await postgres.withTransaction(logger: postgresLogger) { connection in
                        try await queue.enqueue(.post("anything/charges", parameters: ["order": .int(order)]), from: client, on: connection)
                    }
                    #expect(await arrivals.next() == stored.idempotencyKey, "order \(order) was sent")
                }
                // A graceful shutdown lets the last send finish and remove its row.
                await group.triggerGracefulShutdown()
                try await running.value
                #expect(try await queue.list(.pending).isEmpty)
            }
        }
    }

    @Test("graceful shutdown lets the request in flight finish and claims nothing more; the rest stay queued")
    func gracefulShutdown() async throws {
        try await withPostgres { _, postgres in
            try await TestServer.withRunning { server in
                let gate = Gate(on: server, path: "/anything/slow")
                let (queue, client) = try outboxClient(postgres, server: server)
                for number in 1...3 {
                    _ = try await postgres.withTransaction(logger: postgresLogger) { connection in
                        try await queue.enqueue(.post("anything/slow", parameters: ["n": .int(number)]), from: client, on: connection)
                    }
                }
                let worker = OutboxWorker(client: client, concurrency: 1, pollInterval: .seconds(3600))
                // The test kit runs the worker's shutdown handler inside triggerGracefulShutdown()
                // (a ServiceGroup runs it later, on its own task): the request is released only
                // once the worker has been told to stop.
                try await testGracefulShutdown { trigger in
                    let running = Task { try await worker.run() }
                    await gate.waitForArrivals(1)  // the first request is in flight
                    trigger.triggerGracefulShutdown()
                    gate.release()  // now let it finish, and any request claimed after it through
                    try await running.value
                }
                #expect(server.hits("/anything/slow") == 1, "nothing claimed after the shutdown began")
                let pending = try await queue.list(.pending)
                #expect(pending.count == 2, "the one in flight was completed, the others wait")
                #expect(pending.allSatisfy { $0.attempts == 0 })
            }
        }
    }

    @Test("an origin that is down gates its loop: probed with HEAD, not sent to, until it answers; then its requests go")
    func gatesADownOrigin() async throws {
        try await withPostgres { _, postgres in
            let refusing = try RefusingPort()
            defer { refusing.release() }  // held for the whole test, so no parallel test takes the port
            // Every attempt that reaches the wire, by method, as it happens.
            let (attempts, seen) = AsyncStream<String>.makeStream()
            let counting = AnyWireMiddleware { request, context, next in
                do {
                    let answer = try await next(request, context: context)
                    seen.yield("\(request.head.method.rawValue) \(answer.head.status.code)")
                    return answer
                } catch {
                    seen.yield("\(request.head.method.rawValue) failed")
                    throw error
                }
            }
            let queue = PostgresOfflineQueue(client: postgres, tables: try uniqueTables())
            try await queue.migrate()
            let client = APIClient(configuration: .init {
                $0.baseURL = URL(string: "http://127.0.0.1:\(refusing.port)/")
                $0.offline.queue = queue
                $0.offline.drain = .manual
                $0.retry = .none
                $0.wireMiddlewares = [counting]
            })
            for number in 1...2 {
                _ = try await postgres.withTransaction(logger: postgresLogger) { connection in
                    try await queue.enqueue(.post("anything/charges", parameters: ["n": .int(number)]), from: client, on: connection)
                }
            }
            let worker = OutboxWorker(client: client, concurrency: 1, pollInterval: .seconds(3600), backoff: .milliseconds(10) ... .milliseconds(50))
            try await testGracefulShutdown { trigger in
                let running = Task { try await worker.run() }
                var methods = attempts.makeAsyncIterator()
                var whileDown: [String] = []
                while whileDown.filter({ $0 == "HEAD failed" }).count < 3, let attempt = await methods.next() { whileDown.append(attempt) }
                #expect(whileDown.filter { $0.hasPrefix("POST") } == ["POST failed"], "one POST found the origin down; then only probes: \(whileDown)")

                let server = try await TestServer.start(port: refusing.port)  // shares the port `refusing` still holds; /anything echoes
                var afterwards: [String] = []
                while afterwards.filter({ $0 == "POST 200" }).count < 2, let attempt = await methods.next() { afterwards.append(attempt) }
                #expect(afterwards.first?.hasPrefix("HEAD") == true, "a probe goes first: \(afterwards)")
                let posts = server.requests.filter { $0.method == "POST" }
                #expect(posts.compactMap { try? JSONValue(parsing: $0.body)["n"]?.intValue } == [1, 2], "each once, in order")
                #expect(client.reachability.status(of: server.baseURL) == .reachable)
                // A graceful shutdown lets the last send finish and remove its row.
                trigger.triggerGracefulShutdown()
                try await running.value
                #expect(try await queue.list(.pending).isEmpty)
                #expect(!client.isDrainPaused, "the worker gives the drain back as it found it")
                await server.stop()
            }
        }
    }

    @Test("a drain the app paused before the worker ran stays paused after it")
    func keepsTheAppsPause() async throws {
        try await withPostgres { _, postgres in
            try await TestServer.withRunning { server in
                let (_, client) = try outboxClient(postgres, server: server)
                client.pauseDrain()
                let worker = OutboxWorker(client: client, concurrency: 1, pollInterval: .seconds(3600))
                try await testGracefulShutdown { trigger in
                    let running = Task { try await worker.run() }
                    trigger.triggerGracefulShutdown()
                    try await running.value
                }
                #expect(client.isDrainPaused)
            }
        }
    }

    /// An outbox of its own and a client that queues into it and sends to `server`.
    private func outboxClient(_ postgres: PostgresClient, server: TestServer) throws -> (PostgresOfflineQueue, APIClient) {
        let queue = PostgresOfflineQueue(client: postgres, tables: try uniqueTables())
        let client = APIClient(configuration: .init {
            $0.baseURL = server.baseURL
            $0.offline.queue = queue
            $0.offline.drain = .manual  // the worker alone drains, as the tests count its sends
            $0.retry = .none
        })
        return (queue, client)
    }
}
