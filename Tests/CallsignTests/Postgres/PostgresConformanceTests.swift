import Callsign
import CallsignPostgres
import CallsignTesting
import Foundation
import Testing

/// CallsignPostgres's storages run the conformance suites CallsignTesting ships, each check on
/// tables of its own in the suite's throwaway cluster.
@Suite("CallsignPostgres storages pass the shipped conformance suites", .hangGuard, .sharedPostgresCluster)
struct PostgresConformanceTests {
    @Test("PostgresCacheStorage passes every CacheStorageConformance check", arguments: CacheStorageConformance.Check.allCases)
    func cache(check: CacheStorageConformance.Check) async throws {
        try await withPostgres { _, postgres in
            try await CacheStorageConformance(byteBudget: 64 << 10) {
                PostgresCacheStorage(
                    client: postgres, partitionKey: Data(repeating: 7, count: 32), tables: try uniqueTables(), byteBudget: 64 << 10, unlogged: true)
            }.run(check)
        }
    }

    @Test("PostgresOfflineQueue passes every QueueStorageConformance check", arguments: QueueStorageConformance.Check.allCases)
    func queue(check: QueueStorageConformance.Check) async throws {
        try await withPostgres { _, postgres in
            try await QueueStorageConformance { PostgresOfflineQueue(client: postgres, tables: try uniqueTables()) }.run(check)
        }
    }
}
