import Callsign
import Foundation
import GRDB
import Synchronization

/// One SQLite file behind a store: opened on first use (WAL), migrated, created with mode 0600,
/// moved aside when corrupt, and every failure reported as an ``APIError`` with
/// ``APIError/Code/storage`` that says what a person can do about it.
final class SQLiteDatabase: Sendable {
    let url: URL
    /// "offline queue" or "HTTP cache", for messages.
    let purpose: LocalizedMessage
    private let schema: @Sendable (inout DatabaseMigrator) -> Void
    private let synchronousFull: Bool
    private let maximumSize: Int?
    private let pool = Mutex<DatabasePool?>(nil)

    init(
        url: URL, purpose: LocalizedMessage, synchronousFull: Bool, maximumSize: Int? = nil,
        schema: @escaping @Sendable (inout DatabaseMigrator) -> Void
    ) {
        self.url = url
        self.purpose = purpose
        self.synchronousFull = synchronousFull
        self.maximumSize = maximumSize
        self.schema = schema
    }

    /// Runs `updates` in an immediate transaction, so a read-then-write cannot race another
    /// process between its read and its write.
    func write<T: Sendable>(_ what: String, _ updates: @escaping @Sendable (Database) throws -> T) async throws(APIError) -> T {
        let pool = try opened()
        do {
            return try await pool.writeWithoutTransaction { db in
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try updates(db)
                    return .commit
                }
                guard let result else { throw DatabaseError(resultCode: .SQLITE_ERROR, message: "the transaction returned nothing") }
                return result
            }
        } catch {
            throw failure(error, while: what)
        }
    }

    /// Runs `reads` on a read connection.
    func read<T: Sendable>(_ what: String, _ reads: @escaping @Sendable (Database) throws -> T) async throws(APIError) -> T {
        let pool = try opened()
        do {
            return try await pool.read(reads)
        } catch {
            throw failure(error, while: what)
        }
    }

    /// Runs a short indexed read on the calling thread. A cache lookup takes microseconds; the
    /// hop to GRDB's reader queue and back cost more than the read itself.
    func readNow<T>(_ what: String, _ reads: (Database) throws -> T) throws(APIError) -> T {
        let pool = try opened()
        do {
            return try pool.read(reads)
        } catch {
            throw failure(error, while: what)
        }
    }

    private func opened() throws(APIError) -> DatabasePool {
        let result = pool.withLock { (pool: inout DatabasePool?) -> Result<DatabasePool, any Error> in
            if let pool { return .success(pool) }
            do {
                let opened = try open()
                pool = opened
                return .success(opened)
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let pool): return pool
        case .failure(let error): throw failure(error, while: "open")  // outside the lock: it may quarantine
        }
    }

    private func open() throws -> DatabasePool {
        let manager = FileManager.default
        let folder = url.deletingLastPathComponent()
        if !manager.fileExists(atPath: folder.path) {
            try manager.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        if !manager.fileExists(atPath: url.path) {
            // Owner-only from the first byte (SQLite gives its -wal and -shm files the same mode),
            // created by the one writer; someone else creating it first is fine.
            try FileWriter.createPrivate(url)?.close()
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let synchronousFull = self.synchronousFull
        let maximumSize = self.maximumSize
        configuration.prepareDatabase { db in
            try db.execute(sql: synchronousFull ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
            if let maximumSize {
                let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
                try db.execute(sql: "PRAGMA max_page_count = \(max(16, maximumSize / pageSize))")
            }
        }
        let pool = try DatabasePool(path: url.path, configuration: configuration)
        var migrator = DatabaseMigrator()
        schema(&migrator)
        try migrator.migrate(pool)
        return pool
    }

    /// Turns a database failure into a storage error; a corrupt file is moved aside so the
    /// next use starts a new one instead of failing forever.
    private func failure(_ error: any Error, while what: String) -> APIError {
        if let apiError = error as? APIError { return apiError }
        let path = url.path
        guard let databaseError = error as? DatabaseError else {
            return APIError(.storage, localized: "the \(purpose) at \(path) failed (\(what)): \(error)", underlyingError: error)
        }
        switch databaseError.resultCode {
        case .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_CANTOPEN, .SQLITE_AUTH:
            return APIError(
                .storage, localized: "the \(purpose) at \(path) is read-only or cannot be opened (check the permissions of the file and its folder)",
                underlyingError: error)
        case .SQLITE_FULL:
            return APIError(
                .storage,
                localized: maximumSize.map { limit in "the \(purpose) at \(path) is full (the disk or its size limit of \(limit) bytes)" }
                    ?? "the \(purpose) at \(path) is full (the disk)",
                underlyingError: error)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            let moved = quarantine()
            return APIError(
                .storage,
                localized: moved.map { place in "the \(purpose) at \(path) was corrupt; it was moved to \(place) and a new one will be created on next use" }
                    ?? "the \(purpose) at \(path) was corrupt and could not be moved aside; a new one will be created on next use",
                underlyingError: error)
        default:
            return APIError(.storage, localized: "the \(purpose) at \(path) failed (\(what)): \(databaseError.message ?? "\(databaseError.resultCode)")", underlyingError: error)
        }
    }

    /// Closes the database and renames the file (and its -wal and -shm) to `NAME.corrupt-TIME`.
    private func quarantine() -> String? {
        let closing = pool.withLock { pool in
            defer { pool = nil }
            return pool
        }
        try? closing?.close()
        let stamp = Int(Date().timeIntervalSince1970)
        let target = url.path + ".corrupt-\(stamp)"
        guard rename(url.path, target) == 0 else { return nil }
        for suffix in ["-wal", "-shm"] { _ = rename(url.path + suffix, target + suffix) }
        return target
    }
}

enum DataDirectory {
    /// The folder where Callsign keeps per-user data: Application Support on Apple platforms,
    /// `$XDG_DATA_HOME` (else `~/.local/share`) on Linux, plus `callsign`.
    static var url: URL {
        #if os(Linux) || os(Android)
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("callsign", isDirectory: true)
        }
        return FileManager.default.homeDirectoryForCurrentUser
            .appendingPathComponent(".local/share/callsign", isDirectory: true)
        #else
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.homeDirectoryForCurrentUser
        return base.appendingPathComponent("callsign", isDirectory: true)
        #endif
    }
}
