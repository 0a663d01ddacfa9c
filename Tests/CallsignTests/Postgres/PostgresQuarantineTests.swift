import Callsign
import CallsignPostgres
import CallsignTesting
import Foundation
import PostgresNIO
import Testing

@Suite("PostgreSQL outbox: a row that cannot be read is quarantined", .hangGuard, .sharedPostgresCluster)
struct PostgresQuarantineTests {
    @Test("rows edited in the database are listed with their ids and reasons, dead-lettered unsent; the others are delivered")
    func quarantine() async throws {
        try CLIRunner.requireBuilt()
        try await withPostgres { database, postgres in
            try await withServer { server, _ in
                installInbox(on: server)
                // The standard tables, so `callsign queue list --queue URL` finds them.
                let queue = PostgresOfflineQueue(client: postgres)
                let client = APIClient(configuration: .init { $0.offline.queue = queue; $0.offline.drain = .manual })
                let ids = try await enqueueNumbered(5, to: queue, server: server)
                let outbox = queue.tables.outbox
                try await postgres.query("UPDATE \(unescaped: outbox) SET method = 'NOT A METHOD' WHERE id = \(ids[1])", logger: postgresLogger)
                try await postgres.query("UPDATE \(unescaped: outbox) SET headers = \(Data([0, 0xFF])) WHERE id = \(ids[2])", logger: postgresLogger)
                try await postgres.query(
                    "UPDATE \(unescaped: outbox) SET url = 'ftp://x/y', attempts = -3 WHERE id = \(ids[3])", logger: postgresLogger)

                let listed = try await client.queuedRequests()
                #expect(listed.map(\.id) == ids)
                #expect(listed.filter { $0.quarantineReason != nil }.map(\.id) == Array(ids[1...3]))
                #expect(listed[1].quarantineReason?.contains("method") == true)
                #expect(listed[3].quarantineReason?.contains("URL") == true)

                let list = try await CLIRunner.run(["queue", "list", "--queue", database.url])
                #expect(list.status == 0, "\(list.standardError)")
                #expect(list.standardOutput.contains("#\(ids[2])  cannot be read"), "\(list.standardOutput)")

                let report = try await client.replay()
                #expect(report.sent == 2)
                #expect(report.deadLettered == 3)
                #expect(report.remaining == 0)
                #expect(server.requests.filter { $0.rawPath == "/inbox" }.map { String(decoding: $0.body, as: UTF8.self) } == ["1", "5"])
                let dead = try await client.queuedRequests(.deadLetter)
                #expect(dead.map(\.id) == Array(ids[1...3]))
                #expect(dead.allSatisfy { $0.quarantineReason != nil })
            }
        }
    }
}
