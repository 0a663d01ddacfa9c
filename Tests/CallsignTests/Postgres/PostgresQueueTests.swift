import Callsign
import CallsignPostgres
import CallsignTesting
import Foundation
import PostgresNIO
import Synchronization
import Testing

@Suite("PostgreSQL outbox (CallsignPostgres)", .hangGuard, .sharedPostgresCluster)
struct PostgresQueueTests {
    private func request(_ key: String?, _ number: Int, idempotencyKey: String = UUID().uuidString) -> QueuedRequest {
        QueuedRequest(
            apiName: "Charge", method: "POST", url: "http://127.0.0.1:1/charges/\(number)",
            headers: ["Content-Type": "application/json", "Idempotency-Key": idempotencyKey], body: Data("{\"n\":\(number)}".utf8),
            orderingKey: key)
    }

    @Test("claims follow each ordering key's order, different keys in parallel; only the owner completes")
    func orderingKeys() async throws {
        try await withPostgres { _, postgres in
            let queue = PostgresOfflineQueue(client: postgres, tables: try uniqueTables())
            for number in 0..<3 {
                _ = try await queue.enqueue(request("a", number))
                _ = try await queue.enqueue(request("b", number))
            }
            let first = try #require(try await queue.claimNext(lease: .seconds(30), owner: "one"))
            let second = try #require(try await queue.claimNext(lease: .seconds(30), owner: "two"))
            #expect([first.orderingKey, second.orderingKey] == ["a", "b"])
            #expect(try await queue.claimNext(lease: .seconds(30), owner: "three") == nil, "each key's head is in flight")
            #expect(try await queue.complete(first.id, owner: "two") == false, "only the owner completes")
            #expect(try await queue.complete(first.id, owner: "one"))
            let next = try #require(try await queue.claimNext(lease: .seconds(30), owner: "one"))
            #expect(next.orderingKey == "a" && next.url.hasSuffix("/1"))
            try await queue.release(next.id, owner: "one", error: "503")
            let again = try #require(try await queue.claimNext(lease: .seconds(30), owner: "one"))
            #expect(again.id == next.id && again.attempts == 1 && again.lastError == "503")

            try await queue.moveToDeadLetter(again.id, owner: "one", error: "422")
            #expect(try await queue.list(.deadLetter).map(\.id) == [again.id])
            let after = try #require(try await queue.claimNext(lease: .seconds(30), owner: "one"))
            #expect(after.url.hasSuffix("/2"), "a dead letter no longer holds its key back")
            try await queue.release(after.id, owner: "one", error: "later")
            #expect(try await queue.revive(again.id))
            let revived = try #require(try await queue.claimNext(lease: .seconds(30), owner: "one"))
            #expect(revived.id == again.id, "back at its place in line")
        }
    }

    // Leases (expiry, takeover, renewal by the owner only) are checked by the shipped
    // QueueStorageConformance suite in PostgresConformanceTests.
    @Test("one Idempotency-Key is one row: enqueueing it again returns the request already queued")
    func idempotencyKeys() async throws {
        try await withPostgres { _, postgres in
            let queue = PostgresOfflineQueue(client: postgres, tables: try uniqueTables())
            let stored = try await queue.enqueue(request(nil, 1, idempotencyKey: "k-1"))
            let duplicate = try await queue.enqueue(request(nil, 2, idempotencyKey: "k-1"))
            #expect(duplicate.id == stored.id && duplicate.url.hasSuffix("/1"))
            #expect(try await queue.list(.pending).count == 1)
        }
    }

    @Test("a transactional enqueue rolled back leaves no row and makes no call; committed, it is sent once")
    func transactionalEnqueue() async throws {
        try await withPostgres { _, postgres in
            try await TestServer.withRunning { server in
                let queue = PostgresOfflineQueue(client: postgres, tables: try uniqueTables())
                try await queue.migrate()
                let client = APIClient(configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.offline.queue = queue
                    $0.offline.drain = .manual  // sent by the replay() below
                    $0.retry = .none
                })
                struct Rollback: Error {}
                await #expect(throws: PostgresTransactionError.self) {
                    _ = try await postgres.withTransaction(logger: postgresLogger) { connection in
                        try await queue.enqueue(.post("anything/charges", parameters: ["order": 1]), from: client, on: connection)
                        throw Rollback()
                    }
                }
                #expect(try await client.replay().items.isEmpty)
                #expect(server.requests.isEmpty, "no call for a rolled-back order")
                _ = try await postgres.withTransaction(logger: postgresLogger) { connection in
                    try await queue.enqueue(.post("anything/charges", parameters: ["order": 2]), from: client, on: connection)
                }
                let report = try await client.replay()
                #expect(report.sent == 1, "\(report.items.map(\.outcome))")
                #expect(server.requests.count == 1)
                #expect(server.requests.first?.header("Idempotency-Key")?.isEmpty == false)
                #expect(try JSONValue(parsing: server.requests.first?.body ?? Data())["order"] == 2)
            }
        }
    }
}
