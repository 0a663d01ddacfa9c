import Callsign
import CallsignPostgres
import CallsignTesting
import Foundation
import PostgresNIO
import Synchronization
import Testing

/// What the test server saw of the outbox's calls: every `Idempotency-Key`, and per ordering key
/// the sequence numbers in the order they first arrived.
private final class Arrivals: Sendable {
    private struct State {
        var counts: [String: Int] = [:]
        var firstArrivals: [String: [Int]] = [:]
    }
    private let state = Mutex(State())

    func record(_ request: ServerRequest) {
        let segments = request.pathSegments  // outbox/<key>/<sequence>
        guard segments.count == 3, let sequence = Int(segments[2]), let key = request.header("Idempotency-Key") else { return }
        state.withLock { state in
            state.counts[key, default: 0] += 1
            if state.counts[key] == 1 { state.firstArrivals[segments[1], default: []].append(sequence) }
        }
    }

    var counts: [String: Int] { state.withLock { $0.counts } }
    var firstArrivals: [String: [Int]] { state.withLock { $0.firstArrivals } }
}

/// Several `callsign queue replay` processes draining one PostgreSQL outbox, as a fleet would.
@Suite("PostgreSQL fleet: replayer processes share one outbox and one cache", .serialized, .timeLimit(.minutes(20)), .sharedPostgresCluster)
struct PostgresFleetTests {
    static let items = 10_000
    static let keys = 16

    /// Queues `items` calls to the server's `/outbox/<key>/<n>`, spread over `keys` ordering keys.
    private func fill(_ queue: PostgresOfflineQueue, server: TestServer) async throws {
        try await queue.migrate()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for key in 0..<Self.keys {
                group.addTask {
                    for sequence in stride(from: key, to: Self.items, by: Self.keys) {
                        _ = try await queue.enqueue(
                            QueuedRequest(
                                apiName: "Charge", method: "POST", url: server.url("/outbox/k\(key)/\(sequence)").absoluteString,
                                headers: ["Idempotency-Key": "item-\(sequence)", "Content-Type": "application/json"], body: Data("{}".utf8),
                                orderingKey: "k\(key)"))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Runs `replayers` slots, each starting `callsign queue replay` again until the outbox is
    /// empty; `started` hears each process's id.
    private func drain(
        _ postgres: TestDatabase, queue: PostgresOfflineQueue, replayers: Int, lease: String,
        started: @escaping @Sendable (Int32) -> Void = { _ in }, ended: @escaping @Sendable (Int32) -> Void = { _ in }
    ) async throws {
        let url = postgres.url
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<replayers {
                group.addTask {
                    while try await !queue.list(.pending).isEmpty {
                        let pid = Mutex<Int32>(0)
                        _ = try await CLIRunner.run(
                            ["queue", "replay", "--queue", url, "--lease", lease],
                            started: { id in
                                pid.withLock { $0 = id }
                                started(id)
                            })
                        ended(pid.withLock { $0 })
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// A throwaway cluster whose outbox holds the items, and a server that records their arrival.
    private func withFilledOutbox(_ body: (TestDatabase, PostgresOfflineQueue, Arrivals) async throws -> Void) async throws {
        try CLIRunner.requireBuilt()
        try await withPostgres { postgres, client in
            try await TestServer.withRunning { server in
                let arrivals = Arrivals()
                server.route("/outbox/") { request in
                    arrivals.record(request)
                    return ServerResponse(status: 204)
                }
                // The command line uses the standard table names; the database is this test's own.
                let queue = PostgresOfflineQueue(client: client)
                try await fill(queue, server: server)
                try await body(postgres, queue, arrivals)
            }
        }
    }

    private func checkOrder(_ arrivals: Arrivals) {
        for (key, sequences) in arrivals.firstArrivals {
            #expect(sequences == sequences.sorted(), "ordering key \(key) kept its order")
        }
    }

    @Test("four replayer processes drain 10,000 items: each arrives once, and each ordering key keeps its order")
    func fourReplayers() async throws {
        try await withFilledOutbox { postgres, queue, arrivals in
            try await drain(postgres, queue: queue, replayers: 4, lease: "30")
            let counts = arrivals.counts
            #expect(counts.count == Self.items, "every item arrived")
            #expect(counts.values.allSatisfy { $0 == 1 }, "no item arrived twice: \(counts.filter { $0.value > 1 }.count) did")
            checkOrder(arrivals)
            #expect(try await queue.list(.deadLetter).isEmpty)
        }
    }

    @Test("replayers killed with SIGKILL 50 times while draining: no acknowledged item is lost, order per key holds")
    func killedReplayers() async throws {
        try await withFilledOutbox { postgres, queue, arrivals in
            let running = Mutex<Set<Int32>>([])
            let kills = Mutex(0)
            let killer = Task {
                while kills.withLock({ $0 }) < 50, !Task.isCancelled {
                    try await Task.sleep(for: .milliseconds(40))
                    // A process that has sent at least one item, so kills land mid-drain.
                    guard arrivals.counts.count > 0, let victim = running.withLock({ $0.randomElement() }) else { continue }
                    if kill(victim, SIGKILL) == 0 { kills.withLock { $0 += 1 } }
                }
            }
            try await drain(
                postgres, queue: queue, replayers: 4, lease: "1",
                started: { id in running.withLock { _ = $0.insert(id) } }, ended: { id in running.withLock { _ = $0.remove(id) } })
            killer.cancel()
            let killed = kills.withLock { $0 }
            #expect(killed == 50, "killed \(killed) times before the outbox was empty")
            let counts = arrivals.counts
            #expect(counts.count == Self.items, "every queued item arrived at least once")
            checkOrder(arrivals)
            #expect(try await queue.list(.pending).isEmpty)
        }
    }

    @Test("two processes share one cache: a fresh hit in B for what A stored, never across partitions")
    func sharedCache() async throws {
        try CLIRunner.requireBuilt()
        try await withPostgres { postgres, _ in
            try await TestServer.withRunning { server in
                let key = String(repeating: "5a", count: 32)
                let url = server.url("/cache/private/report").absoluteString
                func get(_ token: String) async throws -> ProcessRunner.Result {
                    try await CLIRunner.run(
                        ["get", url, "--cache", postgres.url, "--bearer", token, "--verbose"], environment: ["CALLSIGN_CACHE_KEY": key])
                }
                let first = try await get("alice-1")
                #expect(first.status == 0, "\(first.standardError)")
                #expect(first.standardError.contains("cache: from the network"))
                let second = try await get("alice-1")
                #expect(second.standardError.contains("cache: fresh hit from the cache, no request sent"), "\(second.standardError)")
                #expect(second.standardOutput.contains("alice"))
                #expect(server.hits("/cache/private/report") == 1)
                let other = try await get("bob-2")
                #expect(other.standardError.contains("cache: from the network"), "another credential is another partition")
                #expect(other.standardOutput.contains("bob") && !other.standardOutput.contains("alice"))
                #expect(server.hits("/cache/private/report") == 2)
                for result in [first, second, other] {
                    #expect(!result.standardError.contains("alice-1") && !result.standardError.contains("bob-2"), "tokens are never printed")
                }
            }
        }
    }
}
