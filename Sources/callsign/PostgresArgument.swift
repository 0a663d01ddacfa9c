import ArgumentParser
import Callsign
import CallsignPostgres
import Foundation
import Logging
import PostgresNIO
import CallsignSQLite

/// A `postgres://` argument: a connection pool that runs while a command needs it.
enum PostgresArgument {
    static func withClient<T: Sendable>(_ url: String, _ body: (PostgresClient) async throws -> T) async throws -> T {
        let configuration = try PostgresURL.configuration(url)
        var logger = Logger(label: "callsign.postgres")
        logger.logLevel = .critical  // failures reach the user as errors, once, without the pool's chatter
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await reach(client, url: url)
            return try await body(client)
        }
    }

    /// The pool retries a server it cannot reach for a minute before it gives up; a command says
    /// so after `limit` instead.
    private static func reach(_ client: PostgresClient, url: String, limit: Duration = .seconds(10)) async throws {
        let reached = await SystemClock().first(of: { () async -> Result<Void, any Error> in
            do {
                return .success(try await client.withConnection { _ in })
            } catch {
                return .failure(error)
            }
        }, within: limit)
        guard let reached else {
            try Task.checkCancellation()  // a command stopped while it waited was not refused
            throw cliError(.storage, "PostgreSQL at \(PostgresURL.redacted(url)) could not be reached within \(limit.components.seconds) s")
        }
        try reached.get()
    }
}

/// `callsign queue migrate --postgres URL`: creates or updates the outbox, cache and rate-limit tables.
struct QueueMigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: localized("Create or update Callsign's tables in a PostgreSQL database (the outbox, its dead letters, the HTTP cache and the shared rate limits)."))

    @Option(help: .localized("The database: a postgres:// URL (password from the URL, PGPASSWORD or ?passwordFile=)."))
    var postgres: String

    @Option(help: .localized("A prefix for the tables' names. Default: callsign_."))
    var prefix: String = "callsign_"

    func run() async throws {
        try await reportingErrors {
            let tables = try PostgresTables(prefix: prefix)
            try await PostgresArgument.withClient(postgres) { client in
                try await PostgresOfflineQueue(client: client, tables: tables).migrate()
                try await PostgresCacheStorage(client: client, partitionKey: Data(count: 32), tables: tables).migrate()
                try await PostgresRateLimitStore(client: client, tables: tables).migrate()
            }
            Terminal.out(
                localized("\(PostgresURL.redacted(postgres)): \(tables.outbox), \(tables.deadLetters), \(tables.cache) and \(tables.rateLimits) are ready."))
        }
    }
}

/// The partition key of a cache shared in PostgreSQL: `CALLSIGN_CACHE_KEY` (64 hex digits, the
/// same in every process that shares the cache), else a key made once and kept owner-only in
/// the per-user data folder — never in the database.
enum CacheKey {
    static func shared(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Data {
        if let hex = environment["CALLSIGN_CACHE_KEY"] {
            guard hex.utf8.count == 64, let key = Data(hexadecimal: hex) else {
                throw ValidationError(localized("CALLSIGN_CACHE_KEY must be 64 hexadecimal digits (32 bytes)"))
            }
            return key
        }
        let folder = SQLiteOfflineQueue.defaultURL.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return try KeyFile.load(folder.appendingPathComponent("postgres-cache.key").path) {
            Data((0..<KeyFile.size).map { _ in UInt8.random(in: .min ... .max) })
        }
    }
}

extension Data {
    /// Bytes from hexadecimal digits; `nil` for an odd count or a non-digit.
    init?(hexadecimal text: String) {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in text.utf8 {
            let value: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let first = high {
                bytes.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        guard high == nil else { return nil }
        self.init(bytes)
    }
}
