public import Callsign
public import Foundation
import GRDB

/// A durable offline queue in a SQLite file (WAL, `synchronous = FULL`).
///
/// Every enqueue is one transaction that has committed — and reached the disk — before the
/// caller hears "queued". Claims are taken in immediate transactions, so two replayers, even in
/// two processes, never send the same request twice. No credential is ever written: the offline
/// stage refuses requests that carry one and authentication adds them at replay.
///
/// ```swift
/// import CallsignSQLite
/// let client = APIClient(configuration: .init {
///     $0.offline.queue = SQLiteOfflineQueue(url: SQLiteOfflineQueue.defaultURL)
/// })
/// ```
///
/// A read-only, full or corrupt file is an `APIError` with `APIError.Code.storage` at
/// enqueue, so the caller knows the request was **not** queued; a corrupt file is moved aside
/// (`NAME.corrupt-TIME`) and the next use starts a new one.
public final class SQLiteOfflineQueue: OfflineQueueStorage {
    /// The database file.
    public var url: URL { database.url }
    private let database: SQLiteDatabase

    /// The per-user default: `offline-queue.sqlite` in Application Support on Apple platforms,
    /// `$XDG_DATA_HOME/callsign` (else `~/.local/share/callsign`) on Linux.
    public static var defaultURL: URL { DataDirectory.url.appendingPathComponent("offline-queue.sqlite") }

    /// Opens (on first use) or creates the queue at `url`.
    ///
    /// - Parameters:
    ///   - url: the SQLite file of the queue (``defaultURL`` is the conventional place).
    ///   - maximumSize: the largest the file may grow, in bytes; past it an enqueue fails
    ///     with `APIError.Code.storage`. Default `nil`: as large as the disk allows.
    public init(url: URL, maximumSize: Int? = nil) {
        database = SQLiteDatabase(url: url, purpose: "offline queue", synchronousFull: true, maximumSize: maximumSize) { migrator in
            migrator.registerMigration("v1") { db in
                try db.execute(
                    sql: """
                        CREATE TABLE queued_request (
                            id INTEGER PRIMARY KEY AUTOINCREMENT,
                            enqueued_at REAL NOT NULL,
                            api_name TEXT,
                            method TEXT NOT NULL,
                            url TEXT NOT NULL,
                            headers BLOB NOT NULL,
                            body BLOB,
                            needs_authorization INTEGER NOT NULL,
                            tag TEXT,
                            attempts INTEGER NOT NULL DEFAULT 0,
                            last_error TEXT,
                            dead INTEGER NOT NULL DEFAULT 0,
                            claimed_until REAL
                        );
                        CREATE INDEX queued_request_line ON queued_request(dead, id);
                        """)
            }
            // v2: the owner of a claim, so only the replayer holding it can finish it.
            migrator.registerMigration("v2") { db in
                try db.execute(sql: "ALTER TABLE queued_request ADD COLUMN claim_owner TEXT")
            }
        }
    }

    public var isDurable: Bool { true }

    public func enqueue(_ request: QueuedRequest) async throws -> QueuedRequest {
        let headers = StoredFields.encode(request.headers)
        return try await database.write("enqueue a request") { db in
            try db.execute(
                sql: """
                    INSERT INTO queued_request (enqueued_at, api_name, method, url, headers, body, needs_authorization, tag)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    request.enqueuedAt.timeIntervalSince1970, request.apiName, request.method, request.url, headers, request.body,
                    request.needsAuthorization, request.tag,
                ])
            var stored = request
            stored.id = db.lastInsertedRowID
            return stored
        }
    }

    /// The oldest pending request, claimed by `owner` in one transaction, unless another claim is live.
    public func claimNext(lease: Duration, owner: String) async throws -> QueuedRequest? {
        let now = Date().timeIntervalSince1970
        let until = now + Self.seconds(lease)
        return try await database.write("claim the next request") { db -> QueuedRequest? in
            let live = try Bool.fetchOne(
                db, sql: "SELECT EXISTS (SELECT 1 FROM queued_request WHERE dead = 0 AND claimed_until > ?)", arguments: [now])
            guard live == false else { return nil }
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM queued_request WHERE dead = 0 ORDER BY id LIMIT 1") else {
                return nil
            }
            let request = Self.request(from: row)
            try db.execute(
                sql: "UPDATE queued_request SET claimed_until = ?, claim_owner = ? WHERE id = ?", arguments: [until, owner, request.id])
            return request
        }
    }

    /// Extends `owner`'s claim; `false` when the row is no longer theirs.
    public func renewClaim(_ id: Int64, owner: String, lease: Duration) async throws -> Bool {
        let until = Date().timeIntervalSince1970 + Self.seconds(lease)
        return try await database.write("renew a claim") { db in
            try db.execute(
                sql: "UPDATE queued_request SET claimed_until = ? WHERE id = ? AND dead = 0 AND claim_owner = ?",
                arguments: [until, id, owner])
            return db.changesCount > 0
        }
    }

    /// Deletes a sent request; `false` when the claim is no longer `owner`'s.
    public func complete(_ id: Int64, owner: String) async throws -> Bool {
        try await database.write("remove a sent request") { db in
            try db.execute(sql: "DELETE FROM queued_request WHERE id = ? AND claim_owner = ?", arguments: [id, owner])
            return db.changesCount > 0
        }
    }

    /// Gives a request back with its error, when `owner` still holds it.
    public func release(_ id: Int64, owner: String, error: String) async throws {
        try await database.write("keep a request") { db in
            try db.execute(
                sql: """
                    UPDATE queued_request SET claimed_until = NULL, claim_owner = NULL, attempts = attempts + 1, last_error = ?
                    WHERE id = ? AND claim_owner = ?
                    """,
                arguments: [error, id, owner])
        }
    }

    /// Moves a request to the dead-letter list, when `owner` still holds it.
    public func moveToDeadLetter(_ id: Int64, owner: String, error: String) async throws {
        try await database.write("dead-letter a request") { db in
            try db.execute(
                sql: """
                    UPDATE queued_request SET claimed_until = NULL, claim_owner = NULL, dead = 1, attempts = attempts + 1, last_error = ?
                    WHERE id = ? AND claim_owner = ?
                    """,
                arguments: [error, id, owner])
        }
    }

    public func list(_ list: OfflineQueueList) async throws -> [QueuedRequest] {
        let dead = list == .deadLetter
        return try await database.read("list the queue") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM queued_request WHERE dead = ? ORDER BY id", arguments: [dead])
                .map(Self.request(from:))
        }
    }

    /// Moves a dead letter back to its place in line (its id).
    public func revive(_ id: Int64) async throws -> Bool {
        try await database.write("move a dead letter back") { db in
            try db.execute(
                sql: "UPDATE queued_request SET dead = 0, claimed_until = NULL, claim_owner = NULL, last_error = NULL WHERE id = ? AND dead = 1",
                arguments: [id])
            return db.changesCount > 0
        }
    }

    public func remove(_ id: Int64) async throws -> Bool {
        try await database.write("remove a request") { db in
            try db.execute(sql: "DELETE FROM queued_request WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// A row through the queue's one door (``QueuedRequest/reading(storedRow:limits:_:)``): a
    /// damaged or edited row comes back as a placeholder with its id and the reason, never as an
    /// error for the whole queue nor a trap.
    private static func request(from row: Row) -> QueuedRequest {
        let id = (try? row.decode(Int64.self, forColumn: "id")) ?? 0
        return QueuedRequest.reading(storedRow: id) {
            let enqueuedAt = try cell(row, "enqueued_at", as: Double.self)
            return QueuedRequest(
                id: id, enqueuedAt: Date(timeIntervalSince1970: enqueuedAt.isFinite ? enqueuedAt : 0),
                apiName: try optionalCell(row, "api_name", as: String.self), method: try cell(row, "method", as: String.self),
                url: try cell(row, "url", as: String.self), headers: try StoredFields.decodeHeaders(try cell(row, "headers", as: Data.self)),
                body: try optionalCell(row, "body", as: Data.self), needsAuthorization: try cell(row, "needs_authorization", as: Bool.self),
                tag: try optionalCell(row, "tag", as: String.self), attempts: try cell(row, "attempts", as: Int.self),
                lastError: try optionalCell(row, "last_error", as: String.self))
        }
    }

    /// One cell, or an error that names its column (GRDB's own would quote the whole row).
    private static func cell<Value: DatabaseValueConvertible>(_ row: Row, _ column: String, as type: Value.Type) throws -> Value {
        do {
            return try row.decode(Value.self, forColumn: column)
        } catch {
            throw APIError(.storage, localized: "the column \(column) does not hold a value of its type")
        }
    }

    /// One cell that may be NULL, or an error that names its column.
    private static func optionalCell<Value: DatabaseValueConvertible>(_ row: Row, _ column: String, as type: Value.Type) throws -> Value? {
        do {
            return try row.decode(Value?.self, forColumn: column)
        } catch {
            throw APIError(.storage, localized: "the column \(column) does not hold a value of its type")
        }
    }
}
