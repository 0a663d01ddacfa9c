import Callsign
import CallsignTesting
import Foundation
import HTTPTypes

// The ```swift blocks of Testing.md ("Testing a storage you write") and CallsignTesting.md,
// compiled in the context they need. ArticleSamplesTests checks that each block appears here
// line for line: change the articles and this file together.

enum ConformanceSamples {
    private typealias MyCacheStorage = MemoryCacheStorage
    private typealias MyQueueStorage = MemoryOfflineQueue

    // Testing.md
    static func suites() async throws {
        // In a test: every check runs, and the error names each one that failed.
        try await CacheStorageConformance(byteBudget: 64 << 10) {
            MyCacheStorage(byteBudget: 64 << 10)
        }.run()
        try await QueueStorageConformance { MyQueueStorage() }.run()
        // Or one check at a time, for a report per check:
        for check in QueueStorageConformance.Check.allCases {
            try await QueueStorageConformance { MyQueueStorage() }.run(check)
        }
    }

    // Testing.md
    static func storedFields(entry: CachedResponse) throws -> HTTPFields {
        // Writing a row: the header list as Callsign's storages write it.
        let column = StoredFields.encode(entry.headers)
        // Reading it back, bounded like a response head; a damaged column throws APIError(.storage).
        let headers = try StoredFields.decode(column)
        return headers
    }
}
