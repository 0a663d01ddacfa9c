public import Callsign
public import Foundation
public import Logging
public import PostgresNIO

/// An `HTTPCacheStorage` in PostgreSQL: one HTTP cache shared by every process of a fleet.
///
/// Entries are partitioned exactly as in any Callsign cache: a response to a request with
/// credentials is stored under an HMAC of those credentials, so it is served only to requests
/// with the same credentials. For processes to share private entries they must share the HMAC
/// key: give every process the same `partitionKey` (32 random bytes from your secret store). The
/// key is never written to the database.
///
/// The table keeps within `byteBudget` by dropping the least recently used entries. Made
/// `unlogged`, it skips PostgreSQL's write-ahead log: faster, emptied after a crash of the
/// database server, never replicated — often right for a cache.
///
/// ```swift
/// let cache = PostgresCacheStorage(client: postgres, partitionKey: keyFromVault, unlogged: true)
/// let client = APIClient(configuration: .init { $0.cache = HTTPCache(storage: cache) })
/// ```
public final class PostgresCacheStorage: HTTPCacheStorage {
    /// The connection pool.
    public let client: PostgresClient
    /// The tables' names.
    public let tables: PostgresTables
    /// The most bytes of entries kept.
    public let byteBudget: Int
    private let key: Data
    private let logger: Logger
    private let schema: PostgresSchema

    /// How stale an entry's last-use time may get before a read refreshes it: reads stay reads.
    private static let accessGranularity: TimeInterval = 60

    /// A cache in `client`'s database.
    ///
    /// - Parameters:
    ///   - client: the running `PostgresClient` whose database holds the cache.
    ///   - partitionKey: the HMAC key of private partitions, the same in every process that
    ///     shares the cache (at least 16 bytes; 32 random bytes recommended).
    ///   - tables: the names of Callsign's tables. Default `.standard`.
    ///   - byteBudget: the most bytes of entries kept. Default 256 MiB.
    ///   - unlogged: create the table `UNLOGGED` (decided when the table is created). Default `false`.
    ///   - logger: the logger of the cache's queries. Default: label `callsign.postgres`.
    public init(
        client: PostgresClient, partitionKey: Data, tables: PostgresTables = .standard, byteBudget: Int = 256 << 20,
        unlogged: Bool = false, logger: Logger = Logger(label: "callsign.postgres")
    ) {
        self.client = client
        self.key = partitionKey
        self.tables = tables
        self.byteBudget = max(0, byteBudget)
        self.logger = logger
        let component = PostgresMigrations.Component(name: "http_cache", steps: [
            { tables in
                [
                    """
                    CREATE \(unlogged ? "UNLOGGED " : "")TABLE IF NOT EXISTS \(tables.cache) (
                        url text NOT NULL, partition text NOT NULL, method text NOT NULL, variant text NOT NULL,
                        varying text NOT NULL, status integer NOT NULL, headers bytea NOT NULL, body bytea NOT NULL,
                        request_time timestamptz NOT NULL, response_time timestamptz NOT NULL, size bigint NOT NULL,
                        last_access timestamptz NOT NULL,
                        PRIMARY KEY (url, partition, method, variant))
                    """,
                    "CREATE INDEX IF NOT EXISTS \(PostgresTables.local(tables.cache, "_access")) ON \(tables.cache) (last_access)",
                ]
            },
        ])
        schema = PostgresSchema(component, client: client, tables: tables, logger: logger)
    }

    /// Creates the table if it is missing (done on first use too).
    public func migrate() async throws(APIError) {
        try await schema.migrate()
    }

    @discardableResult
    private func run<T>(_ what: String, _ body: () async throws -> T) async throws(APIError) -> T {
        try await schema.run(what, body)
    }

    public func partitionKey() async throws -> Data {
        guard key.count >= 16 else {
            throw APIError(.storage, localized: "the shared cache's partition key has \(key.count) bytes; it needs at least 16 (32 random bytes recommended)")
        }
        return key
    }

    public func entries(url: String, partition: String, method: String) async throws -> [CachedResponse] {
        try await run("read cache entries") {
            let rows = try await client.query(
                """
                SELECT * FROM \(unescaped: tables.cache) WHERE url = \(url) AND partition = \(partition) AND method = \(method)
                ORDER BY response_time DESC
                """, logger: logger
            ).collect()
            var entries: [CachedResponse] = []
            var stale = false
            let now = Date()
            for row in rows {
                let cells = row.makeRandomAccess()
                let varying = try JSONDecoder().decode([String: String].self, from: Data(try cells["varying"].decode(String.self).utf8))
                entries.append(
                    CachedResponse(
                        url: try cells["url"].decode(String.self), partition: try cells["partition"].decode(String.self),
                        method: try cells["method"].decode(String.self), varyingHeaders: varying, status: try cells["status"].decode(Int.self),
                        headers: try StoredFields.decode(try cells["headers"].decode(Data.self)), body: try cells["body"].decode(Data.self),
                        requestTime: try cells["request_time"].decode(Date.self), responseTime: try cells["response_time"].decode(Date.self)))
                if try cells["last_access"].decode(Date.self) < now.addingTimeInterval(-Self.accessGranularity) { stale = true }
            }
            if stale {
                try await client.query(
                    """
                    UPDATE \(unescaped: tables.cache) SET last_access = now() WHERE url = \(url) AND partition = \(partition) AND method = \(method)
                    """, logger: logger)
            }
            return entries
        }
    }

    public func store(_ entry: CachedResponse) async throws {
        guard entry.size <= byteBudget else { return }
        let varying = String(decoding: try JSONEncoder().encode(entry.varyingHeaders), as: UTF8.self)
        try await run("store a cache entry") {
            try await client.query(
                """
                INSERT INTO \(unescaped: tables.cache)
                    (url, partition, method, variant, varying, status, headers, body, request_time, response_time, size, last_access)
                VALUES (\(entry.url), \(entry.partition), \(entry.method), \(entry.variant), \(varying), \(entry.status),
                    \(StoredFields.encode(entry.headers)), \(entry.body), \(entry.requestTime), \(entry.responseTime), \(Int64(entry.size)), now())
                ON CONFLICT (url, partition, method, variant) DO UPDATE SET
                    varying = EXCLUDED.varying, status = EXCLUDED.status, headers = EXCLUDED.headers, body = EXCLUDED.body,
                    request_time = EXCLUDED.request_time, response_time = EXCLUDED.response_time, size = EXCLUDED.size,
                    last_access = EXCLUDED.last_access
                """, logger: logger)
            // Least recently used first, down to 90% of the budget once it is exceeded.
            let budget = Int64(byteBudget)
            let target = budget / 10 * 9
            try await client.query(
                """
                WITH total AS (SELECT COALESCE(SUM(size), 0) AS bytes FROM \(unescaped: tables.cache)),
                ranked AS (SELECT ctid, size, SUM(size) OVER (ORDER BY last_access, ctid) AS freed FROM \(unescaped: tables.cache))
                DELETE FROM \(unescaped: tables.cache) WHERE ctid IN (
                    SELECT ranked.ctid FROM ranked, total
                    WHERE total.bytes > \(budget) AND ranked.freed - ranked.size < total.bytes - \(target))
                """, logger: logger)
        }
    }

    public func removeEntries(url: String) async throws {
        try await run("invalidate cache entries") {
            try await client.query("DELETE FROM \(unescaped: tables.cache) WHERE url = \(url)", logger: logger)
        }
    }

    public func removeEntries(partition: String) async throws {
        try await run("remove a cache partition") {
            try await client.query("DELETE FROM \(unescaped: tables.cache) WHERE partition = \(partition)", logger: logger)
        }
    }

    public func removeAll() async throws {
        try await run("empty the cache") {
            try await client.query("DELETE FROM \(unescaped: tables.cache)", logger: logger)
        }
    }

    /// The bytes of entries stored now.
    public func storedBytes() async throws(APIError) -> Int {
        try await run("measure the cache") {
            let rows = try await client.query("SELECT COALESCE(SUM(size), 0)::bigint FROM \(unescaped: tables.cache)", logger: logger).collect()
            return Int(clamping: try rows.first?.decode(Int64.self) ?? 0)
        }
    }
}
