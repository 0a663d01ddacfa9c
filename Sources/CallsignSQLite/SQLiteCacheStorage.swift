public import Callsign
public import Foundation
import GRDB
import HTTPTypes
import Synchronization

/// An `HTTPCacheStorage` in a SQLite file: survives restarts, keeps within a byte budget by
/// dropping the least recently used entries.
///
/// ```swift
/// import CallsignSQLite
/// let client = APIClient(configuration: .init {
///     $0.cache = HTTPCache(storage: SQLiteCacheStorage(directory: cachesFolder))
/// })
/// ```
///
/// No credential is written: entries are keyed by an HMAC of the request's credentials under a
/// random key kept beside the database in `NAME.key` (owner-only, never inside the database),
/// secret query values are redacted from the stored URL, and `Set-Cookie` is not kept.
public final class SQLiteCacheStorage: HTTPCacheStorage {
    /// The database file.
    public var url: URL { database.url }
    /// The most bytes of entries kept.
    public let byteBudget: Int
    private let database: SQLiteDatabase
    private let key = Mutex<Data?>(nil)

    /// How stale an entry's last-use time may get before a read refreshes it: reads stay reads.
    private static let accessGranularity: TimeInterval = 60

    /// Opens (on first use) or creates the cache at `url`.
    ///
    /// - Parameters:
    ///   - url: the SQLite file of the cache.
    ///   - byteBudget: the most bytes of entries kept. Default 64 MiB.
    public init(url: URL, byteBudget: Int = 64 << 20) {
        self.byteBudget = byteBudget
        database = SQLiteDatabase(url: url, purpose: "HTTP cache", synchronousFull: false) { migrator in
            migrator.registerMigration("v1") { db in
                try db.execute(
                    sql: """
                        CREATE TABLE cached_response (
                            url TEXT NOT NULL,
                            partition TEXT NOT NULL,
                            method TEXT NOT NULL,
                            variant TEXT NOT NULL,
                            varying BLOB NOT NULL,
                            status INTEGER NOT NULL,
                            headers BLOB NOT NULL,
                            body BLOB NOT NULL,
                            request_time REAL NOT NULL,
                            response_time REAL NOT NULL,
                            size INTEGER NOT NULL,
                            last_access REAL NOT NULL,
                            PRIMARY KEY (url, partition, method, variant)
                        );
                        CREATE INDEX cached_response_access ON cached_response(last_access);
                        """)
            }
        }
    }

    /// The cache in `directory/callsign-cache.sqlite`.
    public convenience init(directory: URL, byteBudget: Int = 64 << 20) {
        self.init(url: directory.appendingPathComponent("callsign-cache.sqlite"), byteBudget: byteBudget)
    }

    public func entries(url: String, partition: String, method: String) async throws -> [CachedResponse] {
        let rows = try database.readNow("read entries") { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM cached_response WHERE url = ? AND partition = ? AND method = ? ORDER BY response_time DESC",
                arguments: [url, partition, method]
            ).map { row in (entry: try Self.entry(from: row), lastAccess: try row.decode(Double.self, forColumn: "last_access")) }
        }
        let now = Date().timeIntervalSince1970
        if rows.contains(where: { $0.lastAccess < now - Self.accessGranularity }) {
            try await database.write("record a use") { db in
                try db.execute(
                    sql: "UPDATE cached_response SET last_access = ? WHERE url = ? AND partition = ? AND method = ?",
                    arguments: [now, url, partition, method])
            }
        }
        return rows.map(\.entry)
    }

    public func store(_ entry: CachedResponse) async throws {
        guard entry.size <= byteBudget else { return }
        let headers = StoredFields.encode(entry.headers)
        let varying = try JSONEncoder().encode(entry.varyingHeaders)
        let budget = byteBudget
        try await database.write("store an entry") { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO cached_response
                        (url, partition, method, variant, varying, status, headers, body, request_time, response_time, size, last_access)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    entry.url, entry.partition, entry.method, entry.variant, varying, entry.status, headers, entry.body,
                    entry.requestTime.timeIntervalSince1970, entry.responseTime.timeIntervalSince1970, entry.size,
                    Date().timeIntervalSince1970,
                ])
            try Self.evict(db, budget: budget)
        }
    }

    public func removeEntries(url: String) async throws {
        try await database.write("invalidate entries") { db in
            try db.execute(sql: "DELETE FROM cached_response WHERE url = ?", arguments: [url])
        }
    }

    /// Removes the entries stored under one partition (a sign-out).
    public func removeEntries(partition: String) async throws {
        try await database.write("remove a partition") { db in
            try db.execute(sql: "DELETE FROM cached_response WHERE partition = ?", arguments: [partition])
        }
    }

    /// The partition key, from `NAME.key` beside the database (created 0600 on first use).
    public func partitionKey() async throws -> Data {
        try key.withLock { cached in
            if let cached { return cached }
            let folder = url.deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let loaded = try KeyFile.load(url.path + ".key", make: { Data((0..<KeyFile.size).map { _ in UInt8.random(in: .min ... .max) }) })
            cached = loaded
            return loaded
        }
    }

    public func removeAll() async throws {
        try await database.write("empty the cache") { db in
            try db.execute(sql: "DELETE FROM cached_response")
        }
    }

    /// The bytes of entries stored now.
    public func storedBytes() async throws -> Int {
        try await database.read("measure the cache") { db in
            try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(size), 0) FROM cached_response") ?? 0
        }
    }

    /// Drops least recently used entries until the total is at most 90% of the budget.
    private static func evict(_ db: Database, budget: Int) throws {
        var total = try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(size), 0) FROM cached_response") ?? 0
        guard total > budget else { return }
        let target = budget / 10 * 9
        let victims = try Row.fetchCursor(db, sql: "SELECT rowid, size FROM cached_response ORDER BY last_access")
        var doomed: [Int64] = []
        while total > target, let row = try victims.next() {
            doomed.append(try row.decode(forColumn: "rowid"))
            let (remaining, overflow) = total.subtractingReportingOverflow(try row.decode(Int.self, forColumn: "size"))
            total = overflow ? 0 : remaining
        }
        for rowid in doomed {
            try db.execute(sql: "DELETE FROM cached_response WHERE rowid = ?", arguments: [rowid])
        }
    }

    /// A row is outside data (the file may be old, damaged or edited): every column is decoded
    /// with a throwing read, never GRDB's trapping subscript, and a bad row is an error.
    private static func entry(from row: Row) throws -> CachedResponse {
        let headers = try StoredFields.decode(try row.decode(Data.self, forColumn: "headers"))
        return CachedResponse(
            url: try row.decode(forColumn: "url"), partition: try row.decode(forColumn: "partition"),
            method: try row.decode(forColumn: "method"),
            varyingHeaders: try JSONDecoder().decode([String: String].self, from: try row.decode(Data.self, forColumn: "varying")),
            status: try row.decode(forColumn: "status"), headers: headers, body: try row.decode(forColumn: "body"),
            requestTime: Date(timeIntervalSince1970: try finiteTime(row.decode(forColumn: "request_time"))),
            responseTime: Date(timeIntervalSince1970: try finiteTime(row.decode(forColumn: "response_time"))))
    }

    private static func finiteTime(_ value: Double) throws -> Double {
        guard value.isFinite else { throw SQLiteRowError(message: "a stored time is not a finite number") }
        return value
    }
}

/// A stored row whose values cannot be what Callsign wrote.
struct SQLiteRowError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
