public import Callsign
import Foundation
public import Logging
public import PostgresNIO

/// A `RateLimitStore` in PostgreSQL: one rate limit kept by every process of a fleet.
///
/// Give every process's `RateLimits` a store on the same database and the same limits, and
/// together they send no more than the limit — `.perSecond(5)` is five a second for the fleet,
/// not five per process:
///
/// ```swift
/// let shared = PostgresRateLimitStore(client: postgres)
/// let client = APIClient(configuration: .init {
///     $0.rateLimits = RateLimits(perOrigin: .perSecond(5), perTag: ["search": .per(10, .seconds(10))], store: shared)
/// })
/// ```
///
/// Each gate is one row. A call takes its turn in **one statement** — an
/// `INSERT … ON CONFLICT DO UPDATE … RETURNING` that locks the gate's row, reads the database's
/// clock (`clock_timestamp()`), and keeps the turns handed out in the last window: the turn is the
/// first instant after the gate's closing, not before the last turn, and a `window` after the
/// turn `count` turns back. So the promise of the in-memory gate holds for the fleet — at most
/// `count` turns in **any** window, not a token bucket's average — with one round trip per call,
/// and one clock (the database's) for every process, whatever their own clocks say. A call whose
/// turn comes after its deadline takes none and fails at once with `timedOut`.
///
/// A server's "wait" (`Retry-After` on 429 and 503, `RateLimit` fields with nothing remaining)
/// closes the gate's row too, so every process waits, not only the one that got the answer.
///
/// Rows are outside data: a turn or closing further away than ``maximumWait``, a value that
/// overflows, or a column of another type is an `APIError` with the storage code, never a
/// trap or a wait without end. Delete a damaged row to reset its gate. The table is
/// `UNLOGGED` — a gate's turns matter for seconds, not after a crash of the database server.
/// When the database cannot be reached a call fails with the storage code and sends nothing:
/// a shared limit is not silently dropped.
public final class PostgresRateLimitStore: RateLimitStore {
    /// The connection pool.
    public let client: PostgresClient
    /// The tables' names; the gates are in ``PostgresTables/rateLimits``.
    public let tables: PostgresTables
    /// The longest wait a gate's row may ask for: a longer one means the row is damaged. Default one day.
    public let maximumWait: Duration
    private let logger: Logger
    private let schema: PostgresSchema

    /// A store in `client`'s database.
    ///
    /// - Parameters:
    ///   - client: the running `PostgresClient` whose database holds the gates.
    ///   - tables: the names of Callsign's tables. Default `.standard` (`callsign_rate_limits`).
    ///   - maximumWait: the longest wait a gate's row may ask for before it is taken as damaged.
    ///     Default one day.
    ///   - logger: the logger of the store's queries. Default: label `callsign.postgres`.
    public init(
        client: PostgresClient, tables: PostgresTables = .standard, maximumWait: Duration = .seconds(86_400),
        logger: Logger = Logger(label: "callsign.postgres")
    ) {
        self.client = client
        self.tables = tables
        self.maximumWait = min(max(.milliseconds(1), maximumWait), .seconds(Self.longestWindowSeconds))
        self.logger = logger
        schema = PostgresSchema(Self.migrations, client: client, tables: tables, logger: logger)
    }

    /// The table's migrations, version 1 first. Times are milliseconds since 1970 on the
    /// database's clock.
    static let migrations = PostgresMigrations.Component(name: "rate_limits", steps: [
        { tables in
            [
                """
                CREATE UNLOGGED TABLE IF NOT EXISTS \(tables.rateLimits) (
                    gate text PRIMARY KEY,
                    turns bigint[] NOT NULL DEFAULT '{}',
                    closed_until bigint NOT NULL DEFAULT 0,
                    checked_at bigint NOT NULL,
                    offered bigint NOT NULL,
                    admitted boolean NOT NULL)
                """
            ]
        },
    ])

    /// Creates the table if it is missing (done on first use too).
    public func migrate() async throws(APIError) {
        try await schema.migrate()
    }

    /// The database's clock, in milliseconds since 1970.
    private static let now = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
    /// The most turns a row keeps: those of the last window (a released turn leaves the ones
    /// before it in force), never more than twice the largest count.
    private static let keptTurns = Int32(2 * RateLimit.maximumCount)
    /// Windows are kept to ten years: longer ones hold the same, and sums stay far from overflow.
    private static let longestWindowSeconds: Int64 = 315_360_000

    public func reserve(_ gate: String, limit: RateLimit?, within: Duration?) async throws(APIError) -> RateLimitReservation {
        // Count 0: no limit, only the gate's closing holds the call.
        let count = Int32(limit?.count ?? 0)
        let window = limit.map { Self.roundedUp($0.window) } ?? 0
        let within = within.map { max(0, $0.wholeMilliseconds) }
        let rows = try await schema.run("take a rate-limit turn") {
            try await client.query(
                """
                INSERT INTO \(unescaped: tables.rateLimits) AS g (gate, turns, closed_until, checked_at, offered, admitted)
                SELECT \(gate), CASE WHEN \(count) > 0 THEN ARRAY[n.now] ELSE '{}'::bigint[] END, 0, n.now, n.now, true
                FROM (SELECT \(unescaped: Self.now) AS now) n
                ON CONFLICT (gate) DO UPDATE SET (turns, checked_at, offered, admitted) = (
                    SELECT CASE WHEN t.admitted AND \(count) > 0 THEN r.recent || t.turn ELSE g.turns END, n.now, t.turn, t.admitted
                    FROM (SELECT \(unescaped: Self.now) AS now) n
                    CROSS JOIN LATERAL (SELECT ARRAY(
                        SELECT y.turn FROM (
                            SELECT x.turn, x.i FROM unnest(g.turns) WITH ORDINALITY AS x(turn, i)
                            WHERE \(count) > 0 AND x.turn > n.now - \(window) ORDER BY x.i DESC LIMIT \(Self.keptTurns - 1)) y
                        ORDER BY y.i) AS recent) r
                    CROSS JOIN LATERAL (SELECT greatest(n.now, g.closed_until, r.recent[cardinality(r.recent)],
                        CASE WHEN \(count) > 0 AND cardinality(r.recent) >= \(count)
                            THEN r.recent[cardinality(r.recent) + 1 - \(count)] + \(window) END) AS turn) o
                    CROSS JOIN LATERAL (SELECT o.turn, (\(within)::bigint IS NULL OR o.turn - n.now <= \(within)) AS admitted) t)
                RETURNING g.offered - g.checked_at AS wait, g.admitted, g.offered
                """, logger: logger
            ).collect()
        }
        return try read(rows, gate: gate, counted: count > 0)
    }

    /// The one row a reservation returns, through bounds: a wait from 0 to ``maximumWait``.
    private func read(_ rows: [PostgresRow], gate: String, counted: Bool) throws(APIError) -> RateLimitReservation {
        do {
            guard let row = rows.first else { throw APIError(.storage, localized: "the rate-limit gate \(gate) returned no row") }
            let cells = row.makeRandomAccess()
            let wait = try PostgresRows.cell(cells, "wait", as: Int64.self)
            let admitted = try PostgresRows.cell(cells, "admitted", as: Bool.self)
            let turn = try PostgresRows.cell(cells, "offered", as: Int64.self)
            guard wait >= 0, wait <= maximumWait.wholeMilliseconds else {
                throw APIError(
                    .storage,
                    localized: "the rate-limit gate \(gate) in PostgreSQL asks to wait \(wait) ms, more than the store's maximum of \(maximumWait.wholeMilliseconds) ms: its row looks damaged; delete it to reset the gate")
            }
            return RateLimitReservation(wait: .milliseconds(wait), isAdmitted: admitted, turn: counted ? turn : nil)
        } catch let error as APIError {
            throw error
        } catch {
            throw PostgresFailure.wrap(error, doing: "take a rate-limit turn")
        }
    }

    public func release(_ gate: String, reservation: RateLimitReservation) async {
        guard let turn = reservation.turn else { return }
        // The caller is usually a cancelled call, and PostgresNIO ends a cancelled task's query:
        // the turn goes back from a task of its own, which that cancellation does not reach, awaited here.
        await Task { await giveBack(turn, at: gate) }.value
    }

    private func giveBack(_ turn: Int64, at gate: String) async {
        do {
            try await schema.run("give back a rate-limit turn") {
                try await client.query(
                    """
                    UPDATE \(unescaped: tables.rateLimits) g
                    SET turns = g.turns[:array_position(g.turns, \(turn)) - 1] || g.turns[array_position(g.turns, \(turn)) + 1:]
                    WHERE g.gate = \(gate) AND array_position(g.turns, \(turn)) IS NOT NULL
                    """, logger: logger)
            }
        } catch {
            // A turn not given back only goes unused: the limit is still kept.
            logger.debug("the rate-limit store could not give back a turn", metadata: ["callsign.error": "\(error)"])
        }
    }

    public func close(_ gate: String, for duration: Duration) async throws(APIError) {
        let milliseconds = min(Self.roundedUp(duration), maximumWait.wholeMilliseconds)
        guard milliseconds > 0 else { return }
        try await schema.run("close a rate-limit gate") {
            try await client.query(
                """
                INSERT INTO \(unescaped: tables.rateLimits) AS g (gate, turns, closed_until, checked_at, offered, admitted)
                SELECT \(gate), '{}'::bigint[], n.now + \(milliseconds), n.now, n.now, false
                FROM (SELECT \(unescaped: Self.now) AS now) n
                ON CONFLICT (gate) DO UPDATE SET closed_until = greatest(g.closed_until, EXCLUDED.closed_until)
                """, logger: logger)
        }
    }

    /// Until when the database says `gate` is closed, if it is: for an app that shows "try again in …".
    ///
    /// ```swift
    /// if let wait = try await shared.closedFor("origin https://api.example.com:443") { show("Try again in \(wait)") }
    /// ```
    ///
    /// - Returns: how long from now the gate stays closed; `nil` when it is open.
    public func closedFor(_ gate: String) async throws(APIError) -> Duration? {
        let rows = try await schema.run("read a rate-limit gate") {
            try await client.query(
                "SELECT closed_until - \(unescaped: Self.now) AS wait FROM \(unescaped: tables.rateLimits) WHERE gate = \(gate)", logger: logger
            ).collect()
        }
        do {
            guard let row = rows.first else { return nil }
            let wait = try PostgresRows.cell(row.makeRandomAccess(), "wait", as: Int64.self)
            return wait > 0 ? .milliseconds(min(wait, maximumWait.wholeMilliseconds)) : nil
        } catch {
            throw PostgresFailure.wrap(error, doing: "read a rate-limit gate")
        }
    }

    /// A duration in whole milliseconds, rounded up (a window never shrinks), from 1 ms to ten years.
    private static func roundedUp(_ duration: Duration) -> Int64 {
        let whole = duration.wholeMilliseconds
        let rest = duration - .milliseconds(whole)
        return min(max(1, rest > .zero ? whole + 1 : whole), longestWindowSeconds * 1000)
    }
}
