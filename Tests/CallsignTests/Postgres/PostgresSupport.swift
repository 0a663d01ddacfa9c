import Callsign
import CallsignPostgres
import CallsignTesting
import Foundation
import Logging
import PostgresNIO
import Testing

/// A database of one test's own, in the suite's shared cluster or in a cluster of its own.
struct TestDatabase: Sendable {
    /// A `postgres://` URL for it, through the cluster's socket.
    let url: String
}

/// One throwaway PostgreSQL cluster for a whole suite: its tests each get a fresh database in it
/// (``withPostgres(_:)``) instead of starting a cluster each, so a run starts a few PostgreSQL
/// servers, not one per test.
struct SharedPostgresCluster: SuiteTrait, TestScoping {
    @TaskLocal static var current: PostgresTestServer?

    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await PostgresTestServer.withRunning { cluster in
            try await Self.$current.withValue(cluster) { try await function() }
        }
    }
}

extension Trait where Self == SharedPostgresCluster {
    /// One PostgreSQL cluster for the suite; each test gets a database of its own in it.
    static var sharedPostgresCluster: Self { Self() }
}

/// A running `PostgresClient` on a fresh database — in the suite's shared cluster
/// (``SharedPostgresCluster``) or, outside such a suite, in a throwaway cluster — for `body`.
func withPostgres<T>(_ body: (TestDatabase, PostgresClient) async throws -> T) async throws -> T {
    guard let cluster = SharedPostgresCluster.current else {
        return try await PostgresTestServer.withRunning { cluster in try await run(on: TestDatabase(url: cluster.url), body) }
    }
    return try await run(on: TestDatabase(url: try await cluster.createDatabase()), body)
}

private func run<T>(on database: TestDatabase, _ body: (TestDatabase, PostgresClient) async throws -> T) async throws -> T {
    let client = PostgresClient(configuration: try PostgresURL.configuration(database.url))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        return try await body(database, client)
    }
}

/// Tables of their own for one test, so tests can share a cluster.
func uniqueTables() throws -> PostgresTables {
    try PostgresTables(prefix: "t\(UUID().uuidString.prefix(8).lowercased())_")
}

let postgresLogger = Logger(label: "callsign.tests.postgres")
