public import Callsign
import Logging
import PostgresNIO
import Synchronization

/// The names of Callsign's tables in PostgreSQL, for apps with their own naming rules.
///
/// Every name is a lower-case SQL identifier (letters, digits and `_`, at most 48 characters),
/// optionally qualified by a schema (`billing.outbox`): names are checked when the value is made,
/// so none can carry SQL.
///
/// ```swift
/// let tables = try PostgresTables(prefix: "payments_")      // payments_outbox, payments_http_cache, …
/// let queue = PostgresOfflineQueue(client: postgres, tables: tables)
/// ```
public struct PostgresTables: Sendable, Hashable {
    /// Pending requests (the outbox).
    public let outbox: String
    /// Requests that failed for good.
    public let deadLetters: String
    /// The shared HTTP cache.
    public let cache: String
    /// Which migrations have run, per component.
    public let schemaVersion: String
    /// The shared rate-limit gates (``PostgresRateLimitStore``).
    public let rateLimits: String

    /// Tables named `<prefix>outbox`, `<prefix>outbox_dead`, `<prefix>http_cache`,
    /// `<prefix>schema_version` and `<prefix>rate_limits`. Default prefix `callsign_`.
    ///
    /// - Throws: `APIError` (`APIError.Code.invalidRequest`) for a prefix that would not make
    ///   plain identifiers.
    public init(prefix: String = "callsign_") throws(APIError) {
        self.init(unchecked: prefix)
        try Self.check(outbox, deadLetters, cache, schemaVersion, rateLimits)
    }

    /// Tables with names of your own.
    ///
    /// - Parameters:
    ///   - outbox: pending requests.
    ///   - deadLetters: requests that failed for good.
    ///   - cache: the shared HTTP cache.
    ///   - schemaVersion: which migrations have run.
    ///   - rateLimits: the shared rate-limit gates. Default `callsign_rate_limits`.
    public init(
        outbox: String, deadLetters: String, cache: String, schemaVersion: String, rateLimits: String = "callsign_rate_limits"
    ) throws(APIError) {
        try Self.check(outbox, deadLetters, cache, schemaVersion, rateLimits)
        self.outbox = outbox
        self.deadLetters = deadLetters
        self.cache = cache
        self.schemaVersion = schemaVersion
        self.rateLimits = rateLimits
    }

    /// The default names (`callsign_outbox`, …).
    public static let standard = PostgresTables(unchecked: "callsign_")

    private init(unchecked prefix: String) {
        outbox = prefix + "outbox"
        deadLetters = prefix + "outbox_dead"
        cache = prefix + "http_cache"
        schemaVersion = prefix + "schema_version"
        rateLimits = prefix + "rate_limits"
    }

    private static func check(
        _ outbox: String, _ deadLetters: String, _ cache: String, _ schemaVersion: String, _ rateLimits: String
    ) throws(APIError) {
        for name in [outbox, deadLetters, cache, schemaVersion, rateLimits] where !Self.isIdentifier(name) {
            throw APIError(
                .invalidRequest,
                localized: "\"\(name)\" is not a table name Callsign uses: lower-case letters, digits and _, at most 48 characters, optionally schema.table")
        }
        guard Set([outbox, deadLetters, cache, schemaVersion]).count == 4 else {
            throw APIError(.invalidRequest, localized: "the outbox, dead-letter, cache and schema-version tables need four different names")
        }
        guard ![outbox, deadLetters, cache, schemaVersion].contains(rateLimits) else {
            throw APIError(.invalidRequest, localized: "the rate-limit table needs a name of its own, not one of the outbox, dead-letter, cache or schema-version tables")
        }
    }

    static func isIdentifier(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count) else { return false }
        return parts.allSatisfy { part in
            guard let first = part.utf8.first, (1...48).contains(part.utf8.count), !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first)
            else { return false }
            return part.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "_")
            }
        }
    }

    /// The name of an index or sequence beside table `table`, without its schema.
    static func local(_ table: String, _ suffix: String) -> String {
        (table.split(separator: ".").last.map(String.init) ?? table) + suffix
    }
}

/// Versioned migrations in the schema-version table, applied once, under an advisory lock so
/// that processes starting together do not race.
enum PostgresMigrations {
    /// A component's migrations, in order: version `n` is `steps[n - 1]`.
    struct Component: Sendable {
        let name: String
        let steps: [@Sendable (PostgresTables) -> [String]]
    }

    static func migrate(_ component: Component, tables: PostgresTables, client: PostgresClient, logger: Logger) async throws(APIError) {
        do {
            try await client.withTransaction(logger: logger) { connection in
                // One lock per schema-version table: concurrent first uses wait for each other.
                try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(tables.schemaVersion)))", logger: logger)
                try await connection.query(
                    "CREATE TABLE IF NOT EXISTS \(unescaped: tables.schemaVersion) (component text PRIMARY KEY, version integer NOT NULL)",
                    logger: logger)
                let rows = try await connection.query(
                    "SELECT version FROM \(unescaped: tables.schemaVersion) WHERE component = \(component.name)", logger: logger
                ).collect()
                let current = try rows.first?.decode(Int.self) ?? 0
                guard current <= component.steps.count else {
                    throw APIError(
                        .storage,
                        localized: "the \(component.name) tables are at schema version \(current), newer than this Callsign knows (\(component.steps.count)); update Callsign")
                }
                for version in current..<component.steps.count {
                    for statement in component.steps[version](tables) {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                }
                if current < component.steps.count {
                    try await connection.query(
                        """
                        INSERT INTO \(unescaped: tables.schemaVersion) (component, version) VALUES (\(component.name), \(component.steps.count))
                        ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version
                        """, logger: logger)
                }
            }
        } catch {
            throw PostgresFailure.wrap(error, doing: "migrate the \(component.name) tables")
        }
    }
}

/// What the queue and the cache share: their tables migrated once per process, then every
/// operation run with its failure as a storage error.
final class PostgresSchema: Sendable {
    let client: PostgresClient
    let tables: PostgresTables
    let logger: Logger
    private let component: PostgresMigrations.Component
    private let migrated = Mutex(false)

    init(_ component: PostgresMigrations.Component, client: PostgresClient, tables: PostgresTables, logger: Logger) {
        self.component = component
        self.client = client
        self.tables = tables
        self.logger = logger
    }

    func migrate() async throws(APIError) {
        if migrated.withLock({ $0 }) { return }
        try await PostgresMigrations.migrate(component, tables: tables, client: client, logger: logger)
        migrated.withLock { $0 = true }
    }

    /// Runs `body` once the tables exist; a failure becomes ``APIError/Code/storage`` naming `what`.
    @discardableResult
    func run<T>(_ what: String, _ body: () async throws -> T) async throws(APIError) -> T {
        try await migrate()
        do {
            return try await body()
        } catch {
            throw PostgresFailure.wrap(error, doing: what)
        }
    }
}

/// Errors of PostgreSQL as ``APIError``s with the storage code — never with the connection's
/// password, which PostgresNIO's errors do not carry.
enum PostgresFailure {
    static func wrap(_ error: any Error, doing what: String) -> APIError {
        if let error = error as? APIError { return error }
        let detail = (error as? PSQLError).map { psql in psql.serverInfo?[.message] ?? "\(psql.code)" } ?? "\(error)"
        return APIError(.storage, localized: "PostgreSQL failed to \(what): \(detail)", underlyingError: error)
    }
}
