import Callsign
import CallsignPostgres
import CallsignSQLite
import CallsignTesting
import Foundation
import PostgresNIO

/// The PostgreSQL outbox and shared cache beside the SQLite ones, in one run (run J in
/// Benchmarks/README.md): enqueue rates, drain rates, claim latency, cache hit latency. The
/// PostgreSQL server is a throwaway cluster on loopback (fsync off, as in the tests), so the
/// numbers compare the two storages' own costs, not disks.
enum FleetBenchmark {
    static func run(server: ServerProcess, scale: Double) async throws {
        let postgres = try await PostgresTestServer.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-fleet-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pool = PostgresClient(configuration: try PostgresURL.configuration(postgres.url))
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await pool.run() }
                defer { group.cancelAll() }
                try await measure(server: server, pool: pool, folder: folder, scale: scale)
            }
        } catch {
            await postgres.stop()
            throw error
        }
        await postgres.stop()
    }

    private static func measure(server: ServerProcess, pool: PostgresClient, folder: URL, scale: Double) async throws {
        let count = max(80, Int(2000 * scale))
        let target = server.url("/bench/item").absoluteString
        func entry(_ number: Int) -> QueuedRequest {
            QueuedRequest(
                method: "POST", url: target, headers: ["Content-Type": "application/json", "Idempotency-Key": UUID().uuidString],
                body: Data(#"{"n":\#(number)}"#.utf8), orderingKey: "k\(number % 16)")
        }
        var lines: [String] = []
        var run = 0
        for name in ["SQLite", "PostgreSQL"] {
            func makeQueue() throws -> any OfflineQueueStorage {
                run += 1
                return name == "SQLite"
                    ? SQLiteOfflineQueue(url: folder.appendingPathComponent("queue-\(run).sqlite"))
                    : PostgresOfflineQueue(client: pool, tables: try PostgresTables(prefix: "bench\(run)_"))
            }
            // Enqueue: one task, then 8.
            let single = try makeQueue()
            _ = try await single.enqueue(entry(0))  // creates the tables
            let oneTask = try await rate(count) { for number in 0..<count { _ = try await single.enqueue(entry(number)) } }
            let eight = try makeQueue()
            _ = try await eight.enqueue(entry(0))
            let eightTasks = try await rate(count) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<8 {
                        group.addTask { for number in stride(from: task, to: count, by: 8) { _ = try await eight.enqueue(entry(number)) } }
                    }
                    try await group.waitForAll()
                }
            }
            // Claim latency: claim and release the head, over and over.
            var claims: [Double] = []
            for _ in 0..<min(count, 500) {
                let start = ContinuousClock.now
                guard let claimed = try await single.claimNext(lease: .seconds(30), owner: "bench") else { break }
                claims.append((ContinuousClock.now - start).secondsValue * 1e6)
                try await single.release(claimed.id, owner: "bench", error: "bench")
            }
            // Drain through the client's chain: one replayer, then four.
            let drainOne = try await drain(single, replayers: 1)
            let drainFour = try await drain(eight, replayers: 4)
            lines.append(
                "\(name): enqueue \(format(oneTask)) /s from 1 task, \(format(eightTasks)) /s from 8; drain \(format(drainOne)) /s with 1 replayer, "
                    + "\(format(drainFour)) /s with 4; claim \(format(median(claims), 0)) µs (median)")
        }
        // Cache hit latency, SQLite beside PostgreSQL.
        let cachedURL = server.url("/bench/cached").absoluteString
        var hits: [String] = []
        let key = Data((0..<32).map { _ in UInt8.random(in: .min ... .max) })
        for (name, storage) in [
            ("SQLite", SQLiteCacheStorage(directory: folder) as any HTTPCacheStorage),
            ("PostgreSQL", PostgresCacheStorage(client: pool, partitionKey: key, tables: try PostgresTables(prefix: "benchcache_"))),
            ("PostgreSQL UNLOGGED", PostgresCacheStorage(client: pool, partitionKey: key, tables: try PostgresTables(prefix: "benchunlogged_"), unlogged: true)),
        ] {
            let client = APIClient(configuration: .init { $0.cache = HTTPCache(storage: storage) })
            _ = try await client.send(.get(cachedURL))
            var micros: [Double] = []
            for _ in 0..<min(count, 1000) {
                let start = ContinuousClock.now
                let response = try await client.send(.get(cachedURL))
                guard response.source == .cache else { throw URLError(.badServerResponse) }
                micros.append((ContinuousClock.now - start).secondsValue * 1e6)
            }
            hits.append("\(name) \(format(median(micros), 0)) µs")
        }
        print("")
        print("Fleet storage, \(count) requests per measure (16 ordering keys):")
        for line in lines { print("  " + line) }
        print("  cache fresh hit (median): " + hits.joined(separator: ", "))
    }

    /// Items per second `body` handles.
    private static func rate(_ items: Int, _ body: () async throws -> Void) async throws -> Double {
        let start = ContinuousClock.now
        try await body()
        return Double(items) / (ContinuousClock.now - start).secondsValue
    }

    /// Sends everything in `queue` with `replayers` concurrent replay loops; items per second.
    private static func drain(_ queue: any OfflineQueueStorage, replayers: Int) async throws -> Double {
        let total = try await queue.list(.pending).count
        let client = APIClient(configuration: .init {
            $0.offline.queue = queue
            $0.retry = .none
        })
        return try await rate(total) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<replayers {
                    group.addTask {
                        // A replay ends when nothing is free to claim right now; the drain ends when nothing is left.
                        while true {
                            let report = try await client.replay(lease: .seconds(30))
                            if report.items.isEmpty, report.remaining == 0 { break }
                            // Nothing free to claim now (the heads are in flight): wait a moment, as a worker would.
                            if report.items.isEmpty { try await Task.sleep(for: .milliseconds(1)) }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }
}
