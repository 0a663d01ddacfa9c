public import Callsign
import Foundation
public import Logging
public import PostgresNIO

/// An `OfflineQueueStorage` in PostgreSQL: the transactional outbox of a fleet of processes.
///
/// - **Claims** take the oldest request of an *ordering key* whose turn it is (no older request
///   of that key is waiting or in flight) with `SELECT … FOR UPDATE SKIP LOCKED`, under a lease
///   owned by the replayer's token. The lease is renewed while the send or a `Retry-After` wait
///   is in flight; completing, releasing and dead-lettering only work with the owner's token. So
///   every key is FIFO, different keys drain in parallel on every replayer of every machine, and
///   a replayer that dies gives its request back when the lease ends.
/// - **Dead letters** go to their own table; `APIClient.retryDeadLetter(_:)` puts one back at
///   its original place in line.
/// - **The `Idempotency-Key`** is unique: the same request queued twice is kept once, and the
///   key stays the same from the first attempt through every replay.
/// - **Transactional enqueue**: ``enqueue(_:from:on:)`` writes the row inside your own
///   transaction, so "insert the order" and "charge the card" commit or roll back together.
///
/// ```swift
/// let postgres = PostgresClient(configuration: try PostgresURL.configuration("postgres://app@db/shop"))
/// let outbox = PostgresOfflineQueue(client: postgres)
/// let client = APIClient(configuration: .init { $0.offline.queue = outbox })
/// try await postgres.withTransaction(logger: logger) { connection in
///     try await connection.query("INSERT INTO orders (id) VALUES (\(orderID))", logger: logger)
///     try await outbox.enqueue(.post("charges", parameters: ["order": .string(orderID)]), from: client, on: connection)
/// }
/// ```
///
/// The `PostgresClient` must be running (`await postgres.run()` in a task, or in your
/// `ServiceGroup`). Tables are created on first use, or by `callsign queue migrate --postgres URL`.
public final class PostgresOfflineQueue: OfflineQueueStorage {
    /// The connection pool.
    public let client: PostgresClient
    /// The tables' names.
    public let tables: PostgresTables
    /// The channel `NOTIFY`ed when a request is queued (``OutboxWorker`` listens on it).
    public var channel: String { PostgresTables.local(tables.outbox, "_added") }
    let logger: Logger
    private let schema: PostgresSchema

    /// A queue in `client`'s database.
    public init(client: PostgresClient, tables: PostgresTables = .standard, logger: Logger = Logger(label: "callsign.postgres")) {
        self.client = client
        self.tables = tables
        self.logger = logger
        schema = PostgresSchema(Self.migrations, client: client, tables: tables, logger: logger)
    }

    public var isDurable: Bool { true }

    /// The queue's migrations, version 1 first.
    static let migrations = PostgresMigrations.Component(name: "outbox", steps: [
        { tables in
            let columns = """
                id bigint PRIMARY KEY,
                enqueued_at timestamptz NOT NULL,
                ordering_key text NOT NULL,
                api_name text,
                method text NOT NULL,
                url text NOT NULL,
                headers bytea NOT NULL,
                body bytea,
                needs_authorization boolean NOT NULL,
                tag text,
                attempts integer NOT NULL DEFAULT 0,
                last_error text,
                idempotency_key text UNIQUE
                """
            let sequence = tables.outbox + "_id"
            return [
                "CREATE SEQUENCE IF NOT EXISTS \(sequence)",
                "CREATE TABLE IF NOT EXISTS \(tables.outbox) (\(columns), lease_owner text, lease_until timestamptz)",
                "ALTER TABLE \(tables.outbox) ALTER COLUMN id SET DEFAULT nextval('\(sequence)')",
                "CREATE INDEX IF NOT EXISTS \(PostgresTables.local(tables.outbox, "_key_order")) ON \(tables.outbox) (ordering_key, id)",
                "CREATE TABLE IF NOT EXISTS \(tables.deadLetters) (\(columns), dead_at timestamptz NOT NULL DEFAULT now())",
            ]
        },
    ])

    /// Creates the tables if they are missing (done on first use too).
    public func migrate() async throws(APIError) {
        try await schema.migrate()
    }

    @discardableResult
    private func run<T>(_ what: String, _ body: () async throws -> T) async throws(APIError) -> T {
        try await schema.run(what, body)
    }

    // MARK: - OfflineQueueStorage

    public func enqueue(_ request: QueuedRequest) async throws -> QueuedRequest {
        try await run("queue a request") {
            try await client.withConnection { connection in try await insert(request, on: connection) }
        }
    }

    /// Queues `request` on `connection`, inside whatever transaction it is in: the row (and the
    /// `NOTIFY` that wakes the workers) exists only if that transaction commits.
    ///
    /// - Returns: the stored request; when one with the same `Idempotency-Key` is already
    ///   queued, that one.
    @discardableResult
    public func enqueue(_ request: QueuedRequest, on connection: PostgresConnection) async throws(APIError) -> QueuedRequest {
        try await run("queue a request") { try await insert(request, on: connection) }
    }

    /// Queues what `client` would send for `request` (URL resolved, headers and body as sent, an
    /// `Idempotency-Key` added), on `connection`, inside your transaction. Credentials are never
    /// written: the client's authentication adds them when the request is replayed.
    ///
    /// ```swift
    /// try await postgres.withTransaction(logger: logger) { connection in
    ///     try await outbox.enqueue(.post("charges", parameters: ["amount": 1200]), from: client, on: connection)
    /// }
    /// ```
    @discardableResult
    public func enqueue(_ request: Request, from client: APIClient, on connection: PostgresConnection) async throws(APIError) -> QueuedRequest {
        let queued = try await client.queuedForm(of: request)
        return try await enqueue(queued, on: connection)
    }

    private func insert(_ request: QueuedRequest, on connection: PostgresConnection) async throws -> QueuedRequest {
        let headers = PostgresRows.encode(request.headers)
        let rows = try await connection.query(
            """
            INSERT INTO \(unescaped: tables.outbox)
                (enqueued_at, ordering_key, api_name, method, url, headers, body, needs_authorization, tag, attempts, last_error, idempotency_key)
            VALUES (\(request.enqueuedAt), \(request.orderingKey ?? ""), \(request.apiName), \(request.method), \(request.url), \(headers),
                \(request.body), \(request.needsAuthorization), \(request.tag), \(request.attempts), \(request.lastError), \(request.idempotencyKey))
            ON CONFLICT (idempotency_key) DO NOTHING
            RETURNING *
            """, logger: logger
        ).collect()
        if let row = rows.first {
            try await connection.query("SELECT pg_notify(\(channel), \(String(request.orderingKey ?? "")))", logger: logger)
            return PostgresRows.request(row)
        }
        // Already queued under the same key: that one stands.
        let existing = try await connection.query(
            "SELECT * FROM \(unescaped: tables.outbox) WHERE idempotency_key = \(request.idempotencyKey)", logger: logger
        ).collect()
        guard let row = existing.first else {
            throw APIError(.storage, localized: "the request's Idempotency-Key is already taken by a dead letter; retry or remove that one")
        }
        return PostgresRows.request(row)
    }

    public func claimNext(lease: Duration, owner: String) async throws -> QueuedRequest? {
        try await run("claim the next queued request") {
            // The head of each ordering key, by a loose index scan over (ordering_key, id): a
            // handful of index probes per key, however long the queue is.
            let outbox = tables.outbox
            let rows = try await client.query(
                """
                WITH RECURSIVE keys AS (
                    (SELECT ordering_key FROM \(unescaped: outbox) ORDER BY ordering_key LIMIT 1)
                    UNION ALL
                    SELECT (SELECT o.ordering_key FROM \(unescaped: outbox) o WHERE o.ordering_key > keys.ordering_key
                            ORDER BY o.ordering_key LIMIT 1)
                    FROM keys WHERE keys.ordering_key IS NOT NULL
                ), heads AS (
                    SELECT (SELECT o.id FROM \(unescaped: outbox) o WHERE o.ordering_key = keys.ordering_key ORDER BY o.id LIMIT 1) AS id
                    FROM keys WHERE keys.ordering_key IS NOT NULL
                ), next AS (
                    SELECT o.id FROM \(unescaped: outbox) o JOIN heads ON o.id = heads.id
                    WHERE o.lease_until IS NULL OR o.lease_until < clock_timestamp()
                    ORDER BY o.id LIMIT 1
                    FOR UPDATE OF o SKIP LOCKED
                )
                UPDATE \(unescaped: outbox) o
                SET lease_owner = \(owner), lease_until = clock_timestamp() + \(PostgresRows.milliseconds(lease)) * interval '1 millisecond'
                FROM next WHERE o.id = next.id
                RETURNING o.*
                """, logger: logger
            ).collect()
            return rows.first.map(PostgresRows.request)
        }
    }

    public func renewClaim(_ id: Int64, owner: String, lease: Duration) async throws -> Bool {
        try await run("renew a claim") {
            try await client.query(
                """
                UPDATE \(unescaped: tables.outbox) SET lease_until = clock_timestamp() + \(PostgresRows.milliseconds(lease)) * interval '1 millisecond'
                WHERE id = \(id) AND lease_owner = \(owner) RETURNING id
                """, logger: logger
            ).collect().count == 1
        }
    }

    public func complete(_ id: Int64, owner: String) async throws -> Bool {
        try await run("remove a sent request") {
            try await client.query(
                "DELETE FROM \(unescaped: tables.outbox) WHERE id = \(id) AND lease_owner = \(owner) RETURNING id", logger: logger
            ).collect().count == 1
        }
    }

    public func release(_ id: Int64, owner: String, error: String) async throws {
        try await run("keep a request") {
            try await client.query(
                """
                UPDATE \(unescaped: tables.outbox) SET lease_owner = NULL, lease_until = NULL, attempts = attempts + 1, last_error = \(error)
                WHERE id = \(id) AND lease_owner = \(owner)
                """, logger: logger)
        }
    }

    public func moveToDeadLetter(_ id: Int64, owner: String, error: String) async throws {
        try await run("dead-letter a request") {
            try await client.query(
                """
                WITH moved AS (DELETE FROM \(unescaped: tables.outbox) WHERE id = \(id) AND lease_owner = \(owner) RETURNING *)
                INSERT INTO \(unescaped: tables.deadLetters) (\(unescaped: PostgresRows.columns))
                SELECT id, enqueued_at, ordering_key, api_name, method, url, headers, body, needs_authorization, tag,
                    attempts + 1, \(error), idempotency_key
                FROM moved
                """, logger: logger)
        }
    }

    public func list(_ list: OfflineQueueList) async throws -> [QueuedRequest] {
        try await run("list the queue") {
            let table = list == .pending ? tables.outbox : tables.deadLetters
            return try await client.query("SELECT * FROM \(unescaped: table) ORDER BY id", logger: logger).collect().map(PostgresRows.request)
        }
    }

    public func remove(_ id: Int64) async throws -> Bool {
        try await run("remove a queued request") {
            try await !client.query(
                """
                WITH pending AS (DELETE FROM \(unescaped: tables.outbox) WHERE id = \(id) RETURNING id),
                dead AS (DELETE FROM \(unescaped: tables.deadLetters) WHERE id = \(id) RETURNING id)
                SELECT id FROM pending UNION ALL SELECT id FROM dead
                """, logger: logger
            ).collect().isEmpty
        }
    }

    public func revive(_ id: Int64) async throws -> Bool {
        try await run("move a dead letter back") {
            let columns = PostgresRows.columns
            let moved = try await client.query(
                """
                WITH moved AS (DELETE FROM \(unescaped: tables.deadLetters) WHERE id = \(id) RETURNING *)
                INSERT INTO \(unescaped: tables.outbox) (\(unescaped: columns))
                SELECT id, enqueued_at, ordering_key, api_name, method, url, headers, body, needs_authorization, tag,
                    attempts, NULL, idempotency_key
                FROM moved RETURNING id
                """, logger: logger
            ).collect()
            if !moved.isEmpty { try await client.query("SELECT pg_notify(\(channel), '')", logger: logger) }
            return !moved.isEmpty
        }
    }
}
