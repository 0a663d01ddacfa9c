import Callsign
import CallsignPostgres
import CallsignTesting
import Foundation
import Logging
import PostgresNIO

/// A running `PostgresClient` on a throwaway cluster, for `body`.
func withPostgres<T>(_ body: (PostgresTestServer, PostgresClient) async throws -> T) async throws -> T {
    try await PostgresTestServer.withRunning { server in
        let client = PostgresClient(configuration: try PostgresURL.configuration(server.url))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(server, client)
        }
    }
}

/// Tables of their own for one test, so tests can share a cluster.
func uniqueTables() throws -> PostgresTables {
    try PostgresTables(prefix: "t\(UUID().uuidString.prefix(8).lowercased())_")
}

let postgresLogger = Logger(label: "callsign.tests.postgres")
