import Callsign
import CallsignPostgres
import CallsignTesting
import Foundation
import HTTPTypes
import PostgresNIO
import Testing

@Suite("CallsignPostgres: URLs, tables, migrations and the cache's budget", .hangGuard, .sharedPostgresCluster)
struct PostgresStorageTests {
    @Test("postgres:// URLs: user, password, host, port, database, socket, sslmode; the password never shows")
    func urls() throws {
        let full = try PostgresURL.configuration("postgres://app:s3cr%40t@db.internal:6543/shop?sslmode=require", environment: [:])
        #expect(full.username == "app" && full.password == "s3cr@t" && full.host == "db.internal" && full.port == 6543)
        #expect(full.database == "shop")
        let local = try PostgresURL.configuration("postgresql://app@127.0.0.1/shop", environment: ["PGPASSWORD": "from-env"])
        #expect(local.password == "from-env" && local.port == 5432)
        let socket = try PostgresURL.configuration("postgres://app@localhost:5433/shop?host=/run/postgresql", environment: [:])
        #expect(socket.unixSocketPath == "/run/postgresql/.s.PGSQL.5433")
        try withTemporaryFolderSync { folder in
            let file = folder.appendingPathComponent("password")
            try Data("from-file\nignored\n".utf8).write(to: file)
            let filed = try PostgresURL.configuration("postgres://app@127.0.0.1/shop?passwordFile=\(file.path)", environment: [:])
            #expect(filed.password == "from-file")
        }
        #expect(PostgresURL.redacted("postgres://app:hunter2@db/shop") == "postgres://app:***@db/shop")
        #expect(PostgresURL.redacted("postgres://app:hunter2@db:port/shop") == "postgres://app:***@db:port/shop")
        let refusals = [
            "http://app@db/shop", "postgres://db/shop", "postgres://app:hunter2@/shop", "postgres://app:hunter2@db:0/shop",
            "postgres://app:hunter2@db/shop?sslmode=sometimes", "postgres://app@db/shop?passwordFile=/nonexistent/file",
            // Found by the fuzzer: "@" and a combining mark make one Character, and Foundation reads no URL.
            "postgres://app:hunter2@\u{0593}",
        ]
        for url in refusals {
            do {
                _ = try PostgresURL.configuration(url, environment: [:])
                Issue.record("\(url) should be refused")
            } catch {
                #expect(error.code == .invalidRequest)
                #expect(!error.message.contains("hunter2"), "\(error.message)")
            }
        }
    }

    @Test("table names are checked identifiers; the default prefix is callsign_")
    func tableNames() throws {
        #expect(PostgresTables.standard.outbox == "callsign_outbox")
        #expect(try PostgresTables(prefix: "billing.pay_").cache == "billing.pay_http_cache")
        for prefix in ["Bad", "x; DROP TABLE y; --", "a.b.c_", "9x_", String(repeating: "a", count: 60)] {
            #expect(throws: APIError.self) { try PostgresTables(prefix: prefix) }
        }
        #expect(throws: APIError.self) { try PostgresTables(outbox: "a", deadLetters: "a", cache: "c", schemaVersion: "d") }
    }

    @Test("migrations run once, record their version, and refuse a newer schema")
    func migrations() async throws {
        try await withPostgres { _, postgres in
            let tables = try uniqueTables()
            let first = PostgresOfflineQueue(client: postgres, tables: tables)
            try await first.migrate()
            try await PostgresOfflineQueue(client: postgres, tables: tables).migrate()  // a second process: nothing to do
            let versions = try await postgres.query(
                "SELECT component, version FROM \(unescaped: tables.schemaVersion) ORDER BY component", logger: postgresLogger
            ).collect().map { try $0.decode((String, Int).self) }
            #expect(versions.map(\.0) == ["outbox"] && versions.map(\.1) == [1])
            try await postgres.query("UPDATE \(unescaped: tables.schemaVersion) SET version = 99", logger: postgresLogger)
            do {
                try await PostgresOfflineQueue(client: postgres, tables: tables).migrate()
                Issue.record("a newer schema must be refused")
            } catch let error as APIError {
                #expect(error.code == .storage && error.message.contains("99"))
            }
        }
    }

    // The byte budget, eviction order and a stable key are checked by the shipped
    // CacheStorageConformance suite in PostgresConformanceTests.
    @Test("the shared cache needs a real partition key: the one given, and none shorter than 16 bytes")
    func cacheKey() async throws {
        try await withPostgres { _, postgres in
            let key = Data(repeating: 7, count: 32)
            let cache = PostgresCacheStorage(client: postgres, partitionKey: key, tables: try uniqueTables(), unlogged: true)
            #expect(try await cache.partitionKey() == key)
            let weak = PostgresCacheStorage(client: postgres, partitionKey: Data(count: 4), tables: try uniqueTables())
            await #expect(throws: APIError.self) { _ = try await weak.partitionKey() }
        }
    }

    @Test("callsign queue migrate --postgres URL creates the tables; the queue commands take the URL")
    func commandLine() async throws {
        try CLIRunner.requireBuilt()
        try await withPostgres { postgres, client in
            let migrate = try await CLIRunner.run(["queue", "migrate", "--postgres", postgres.url, "--prefix", "shop_"])
            #expect(migrate.status == 0, "\(migrate.standardError)")
            #expect(migrate.standardOutput.contains("shop_outbox, shop_outbox_dead, shop_http_cache and shop_rate_limits are ready"))
            let tables = try await client.query(
                "SELECT count(*) FROM pg_tables WHERE tablename = 'shop_rate_limits'", logger: postgresLogger
            ).collect().first?.decode(Int.self)
            #expect(tables == 1, "the fleet's rate-limit table is made beforehand too")
            let list = try await CLIRunner.run(["queue", "list", "--queue", postgres.url])
            #expect(list.status == 0, "\(list.standardError)")
            #expect(list.standardOutput.contains("The queue is empty."))
            let wrong = try await CLIRunner.run(["queue", "list", "--queue", "postgres://app:hunter2@127.0.0.1:1/none"])
            #expect(wrong.status != 0)
            #expect(!wrong.standardError.contains("hunter2") && !wrong.standardOutput.contains("hunter2"))
        }
    }
}

/// `withTemporaryFolder` for synchronous bodies.
private func withTemporaryFolderSync(_ body: (URL) throws -> Void) throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    try body(folder)
}
