import Callsign
import CallsignSQLite
import CallsignTesting
import Foundation
import Testing

/// The storages Callsign ships run the conformance suites it ships to everybody else
/// (CallsignTesting's CacheStorageConformance and QueueStorageConformance).
@Suite("Storage conformance: the memory and SQLite storages pass the shipped suites", .hangGuard)
struct StorageConformanceTests {
    @Test("MemoryCacheStorage passes every CacheStorageConformance check", arguments: CacheStorageConformance.Check.allCases)
    func memoryCache(check: CacheStorageConformance.Check) async throws {
        try await CacheStorageConformance(byteBudget: 64 << 10) { MemoryCacheStorage(byteBudget: 64 << 10) }.run(check)
    }

    @Test("SQLiteCacheStorage passes every CacheStorageConformance check", arguments: CacheStorageConformance.Check.allCases)
    func sqliteCache(check: CacheStorageConformance.Check) async throws {
        try await CacheStorageConformance(byteBudget: 64 << 10) {
            SQLiteCacheStorage(url: Scratch.folder().appendingPathComponent("cache.sqlite"), byteBudget: 64 << 10)
        }.run(check)
    }

    @Test("MemoryOfflineQueue passes every QueueStorageConformance check", arguments: QueueStorageConformance.Check.allCases)
    func memoryQueue(check: QueueStorageConformance.Check) async throws {
        try await QueueStorageConformance { MemoryOfflineQueue() }.run(check)
    }

    @Test("SQLiteOfflineQueue passes every QueueStorageConformance check", arguments: QueueStorageConformance.Check.allCases)
    func sqliteQueue(check: QueueStorageConformance.Check) async throws {
        try await QueueStorageConformance { SQLiteOfflineQueue(url: Scratch.folder().appendingPathComponent("queue.sqlite")) }.run(check)
    }

    /// A storage that breaks the contract: the suites must say so, naming the check.
    private actor ForgetfulCache: HTTPCacheStorage {
        var kept: [CachedResponse] = []
        func entries(url: String, partition: String, method: String) -> [CachedResponse] { kept.filter { $0.url == url } }
        func store(_ entry: CachedResponse) { kept.append(entry) }
        func removeEntries(url: String) {}
        func removeAll() { kept = [] }
    }

    @Test("a cache storage that ignores partitions and never removes by URL fails those checks, each named in the report")
    func brokenCacheIsReported() async throws {
        let suite = CacheStorageConformance { ForgetfulCache() }
        let report = await #expect(throws: ConformanceFailures.self) { try await suite.run() }
        let failed = Set(report?.failures.map(\.check) ?? [])
        #expect(failed.contains(CacheStorageConformance.Check.keyParts.description))
        #expect(failed.contains(CacheStorageConformance.Check.removal.description))
        #expect(failed.contains(CacheStorageConformance.Check.variants.description), "storing a variant again must replace it")
        #expect(!failed.contains(CacheStorageConformance.Check.roundTrip.description))
        #expect(report?.description.contains("CacheStorageConformance › ") == true)
    }

    /// A queue that forgets whose claim is whose: every owner acts as one.
    private struct CarelessQueue: OfflineQueueStorage {
        let inner = MemoryOfflineQueue()
        var isDurable: Bool { false }
        func enqueue(_ request: QueuedRequest) async throws -> QueuedRequest { await inner.enqueue(request) }
        func claimNext(lease: Duration, owner: String) async throws -> QueuedRequest? { await inner.claimNext(lease: lease, owner: "anyone") }
        func renewClaim(_ id: Int64, owner: String, lease: Duration) async throws -> Bool { await inner.renewClaim(id, owner: "anyone", lease: lease) }
        func complete(_ id: Int64, owner: String) async throws -> Bool { await inner.complete(id, owner: "anyone") }
        func release(_ id: Int64, owner: String, error: String) async throws { await inner.release(id, owner: "anyone", error: error) }
        func moveToDeadLetter(_ id: Int64, owner: String, error: String) async throws { await inner.moveToDeadLetter(id, owner: "anyone", error: error) }
        func list(_ list: OfflineQueueList) async throws -> [QueuedRequest] { await inner.list(list) }
        func remove(_ id: Int64) async throws -> Bool { await inner.remove(id) }
    }

    @Test("a queue storage that lets any owner act on a claim, and cannot revive, fails those checks, each named")
    func brokenQueueIsReported() async throws {
        let report = await #expect(throws: ConformanceFailures.self) { try await QueueStorageConformance { CarelessQueue() }.run() }
        let failed = Set(report?.failures.map(\.check) ?? [])
        #expect(failed.contains(QueueStorageConformance.Check.ownership.description))
        #expect(failed.contains(QueueStorageConformance.Check.leaseExpiry.description))
        #expect(failed.contains(QueueStorageConformance.Check.deadLetters.description), "revive throws by default")
        #expect(!failed.contains(QueueStorageConformance.Check.order.description))
        // Told it cannot revive, the suite expects revive to throw; the owner checks still fail.
        await #expect(throws: Never.self) { try await QueueStorageConformance(revivesDeadLetters: false) { CarelessQueue() }.run(.deadLetters) }
    }
}
