import Callsign
import CallsignPostgres
import CallsignTesting
import Foundation
import PostgresNIO
import Synchronization
import Testing

/// Two clients on one test server, as two processes of a fleet would be: each with its own
/// `PostgresClient` (its own pool) on the same database, its own `PostgresRateLimitStore` and its
/// own `RateLimits` made by `limits`, sharing only the table.
private func withTwoClients(
    _ database: TestDatabase, _ first: PostgresClient, tables: PostgresTables, clock: TestClock? = nil,
    limits: @escaping @Sendable (PostgresRateLimitStore) -> RateLimits,
    _ body: (TestServer, APIClient, APIClient) async throws -> Void
) async throws {
    let second = PostgresClient(configuration: try PostgresURL.configuration(database.url))
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await second.run() }
        defer { group.cancelAll() }
        try await TestServer.withRunning { server in
            let clients = [first, second].map { postgres in
                APIClient(configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.retry = .none
                    if let clock { $0.clock = clock }
                    $0.rateLimits = limits(PostgresRateLimitStore(client: postgres, tables: tables, logger: postgresLogger))
                })
            }
            try await body(server, clients[0], clients[1])
        }
    }
}

/// A `GET /limited` with a deadline.
private func limited(within deadline: Duration?) -> Request {
    var request = Request.get("/limited")
    request.deadline = deadline
    return request
}

/// The gate's name of the test server's origin.
private func gate(_ server: TestServer) -> String {
    "origin http://\(server.baseURL.host ?? "127.0.0.1"):\(server.baseURL.port ?? 80)"
}

@Suite("PostgreSQL rate limits: one limit kept by every process sharing the store", .hangGuard, .sharedPostgresCluster)
struct PostgresRateLimitTests {
    @Test("two clients, 5 per 10 minutes: of 12 calls with a 2-minute deadline, 5 go and 7 fail at once with timedOut, sending nothing")
    func fleetKeepsTheLimit() async throws {
        try await withPostgres { database, postgres in
            let tables = try uniqueTables()
            let clock = TestClock()
            // A window far longer than the deadline, and a deadline far longer than the calls need:
            // at the start of a full run on two cores, the calls that go have taken over 20 s (a
            // pool's first connections to a cluster just started), and a refusal must still be
            // certain (the next turn is minutes past the deadline).
            try await withTwoClients(database, postgres, tables: tables, clock: clock, limits: { RateLimits(perOrigin: .per(5, .seconds(600)), store: $0) }) {
                server, first, second in
                server.route("/limited") { _ in .json(["ok": true]) }
                let outcomes = try await withThrowingTaskGroup(of: APIError?.self) { group in
                    for index in 0..<12 {
                        let client = index.isMultiple(of: 2) ? first : second
                        group.addTask { await apiError { _ = try await client.send(limited(within: .seconds(120))) } }
                    }
                    return try await group.reduce(into: [APIError?]()) { $0.append($1) }
                }
                let refused = outcomes.compactMap { $0 }
                #expect(outcomes.count - refused.count == 5)
                #expect(refused.count == 7)
                for error in refused {
                    #expect(error.code == .timedOut, "\(error)")
                    #expect(error.requestSent == false)
                    #expect(error.message.contains("after the call's deadline"))
                }
                #expect(server.hits("/limited") == 5)
                #expect(clock.sleeps.isEmpty, "a refused call waits for nothing")
                let turns = try await postgres.query(
                    "SELECT cardinality(turns) FROM \(unescaped: tables.rateLimits) WHERE gate = \(gate(server))", logger: postgresLogger
                ).collect().first?.decode(Int.self)
                #expect(turns == 5, "a refused call takes no turn")
            }
        }
    }

    @Test("a call that can wait gets its turn a window after the first; a window gone by in the database refills the gate")
    func waitingAndRefill() async throws {
        try await withPostgres { database, postgres in
            let tables = try uniqueTables()
            let clock = TestClock()
            // A window of 10 minutes: the database's clock is the real one, and the first minute of
            // a busy full run has taken over 30 s between two calls.
            try await withTwoClients(database, postgres, tables: tables, clock: clock, limits: { RateLimits(perOrigin: .per(2, .seconds(600)), store: $0) }) {
                server, first, second in
                server.route("/limited") { _ in .json(["ok": true]) }
                // Calls that must go get far more real time than they need (a busy full run took 20 s).
                _ = try await first.send(limited(within: .seconds(900)))
                _ = try await second.send(limited(within: .seconds(900)))
                #expect(clock.sleeps.isEmpty)

                // The third turn is the first's plus 600 s on the database's clock: the call waits for
                // it (what real time has passed since the first turn, up to 2 minutes, is taken off).
                let waited = try await first.send(limited(within: .seconds(900)))
                #expect(waited.status == .ok)
                #expect(clock.sleeps.count == 1)
                #expect(clock.sleeps.allSatisfy { $0 > .seconds(480) && $0 <= .seconds(600) }, "\(clock.sleeps)")

                // Twenty minutes later, as the database sees it: two more go at once, the next is refused.
                try await postgres.query(
                    "UPDATE \(unescaped: tables.rateLimits) SET turns = ARRAY(SELECT turn - 1200000 FROM unnest(turns) AS turn)",
                    logger: postgresLogger)
                _ = try await second.send(limited(within: .seconds(900)))
                _ = try await first.send(limited(within: .seconds(900)))
                let error = await apiError { _ = try await second.send(limited(within: .seconds(20))) }
                #expect(error?.code == .timedOut)
                #expect(clock.sleeps.count == 1)
                #expect(server.hits("/limited") == 5)
            }
        }
    }

    @Test("on the real clock, 2 per 400 ms across two clients: every turn is a window after the turn two back, and every call goes")
    func realClockSpacing() async throws {
        try await withPostgres { database, postgres in
            let tables = try uniqueTables()
            try await withTwoClients(database, postgres, tables: tables, limits: { RateLimits(perOrigin: .per(2, .milliseconds(400)), store: $0) }) {
                server, first, second in
                server.route("/limited") { _ in .json(["ok": true]) }
                var turns: [Int64] = []
                for index in 0..<6 {
                    let response = try await (index.isMultiple(of: 2) ? first : second).send(limited(within: nil))
                    #expect(response.status == .ok)
                    let offered = try await postgres.query(
                        "SELECT offered FROM \(unescaped: tables.rateLimits) WHERE gate = \(gate(server))", logger: postgresLogger
                    ).collect().first?.decode(Int64.self)
                    turns.append(try #require(offered))
                }
                for index in 2..<turns.count {
                    #expect(turns[index] - turns[index - 2] >= 400, "turns \(turns)")
                }
                #expect(turns[5] - turns[0] >= 800)
                #expect(server.hits("/limited") == 6)
            }
        }
    }

    @Test("a call cancelled while it waits gives its turn back, and the turns before it stay in force")
    func cancelledWaitGivesItsTurnBack() async throws {
        try await withPostgres { database, postgres in
            let tables = try uniqueTables()
            let clock = TestClock(waitsForAdvance: true)
            try await withTwoClients(database, postgres, tables: tables, clock: clock, limits: { RateLimits(perOrigin: .per(1, .seconds(60)), store: $0) }) {
                server, first, second in
                server.route("/limited") { _ in .json(["ok": true]) }
                let turns = { @Sendable () async throws -> Int? in
                    try await postgres.query(
                        "SELECT cardinality(turns) FROM \(unescaped: tables.rateLimits) WHERE gate = \(gate(server))", logger: postgresLogger
                    ).collect().first?.decode(Int.self)
                }
                _ = try await first.send(limited(within: nil))
                let waiting = Task { try await second.send(limited(within: nil)) }
                await clock.waitUntilSleeping()
                #expect(try await turns() == 2)
                waiting.cancel()
                let error = await apiError { _ = try await waiting.value }
                #expect(error?.isCancellation == true, "\(String(describing: error))")
                #expect(try await turns() == 1, "the cancelled call's turn is given back")
                // The first call's turn still holds the window.
                let refused = await apiError { _ = try await first.send(limited(within: .seconds(20))) }
                #expect(refused?.code == .timedOut)
                #expect(server.hits("/limited") == 1)
            }
        }
    }

    @Test("a server's Retry-After to one client closes the gate for the other: it waits, or fails at once before its deadline")
    func serverWaitIsShared() async throws {
        try await withPostgres { database, postgres in
            let tables = try uniqueTables()
            let clock = TestClock()
            let stores = Mutex<[PostgresRateLimitStore]>([])
            try await withTwoClients(database, postgres, tables: tables, clock: clock, limits: { store in
                stores.withLock { $0.append(store) }
                return RateLimits(store: store)
            }) { server, first, second in
                let answered = Mutex(false)
                server.route("/limited") { _ in
                    let isFirst = answered.withLock { answered in
                        defer { answered = true }
                        return !answered
                    }
                    return isFirst ? .json(["error": "slow down"], status: 429, headers: [("Retry-After", "30")]) : .json(["ok": true])
                }
                let refused = try await first.send(limited(within: nil))
                #expect(refused.status.code == 429)
                let store = try #require(stores.withLock { $0.first })
                let closed = try #require(try await store.closedFor(gate(server)))
                #expect(closed > .seconds(20) && closed <= .seconds(30))

                let error = await apiError { _ = try await second.send(limited(within: .seconds(10))) }
                #expect(error?.code == .timedOut)
                #expect(error?.requestSent == false)
                #expect(server.hits("/limited") == 1)

                let waited = try await second.send(limited(within: .seconds(60)))
                #expect(waited.status == .ok)
                #expect(clock.sleeps.count == 1)
                #expect(clock.sleeps.allSatisfy { $0 > .seconds(20) && $0 <= .seconds(30) }, "\(clock.sleeps)")
                #expect(server.hits("/limited") == 2)
            }
        }
    }

    @Test("a damaged row is a storage error that sends nothing — never a trap or an endless wait; deleting it resets the gate")
    func damagedRows() async throws {
        try await withPostgres { database, postgres in
            let tables = try uniqueTables()
            try await withTwoClients(database, postgres, tables: tables, clock: TestClock(), limits: { RateLimits(perOrigin: .per(1, .seconds(60)), store: $0) }) {
                server, first, _ in
                server.route("/limited") { _ in .json(["ok": true]) }
                _ = try await first.send(limited(within: nil))
                let table = tables.rateLimits

                // A turn ten years away: read as damage, not waited for.
                try await postgres.query(
                    "UPDATE \(unescaped: table) SET turns = ARRAY[(extract(epoch FROM now()) * 1000)::bigint + 315360000000]", logger: postgresLogger)
                let far = await apiError { _ = try await first.send(limited(within: nil)) }
                #expect(far?.code == .storage)
                #expect(far?.requestSent == false)
                #expect(far?.message.contains("damaged") == true, "\(String(describing: far))")

                // A turn at the edge of bigint: the window overflows in SQL, not in Swift.
                try await postgres.query("UPDATE \(unescaped: table) SET turns = ARRAY[9223372036854775000]", logger: postgresLogger)
                let overflow = await apiError { _ = try await first.send(limited(within: nil)) }
                #expect(overflow?.code == .storage)
                #expect(overflow?.message.contains("PostgreSQL failed to take a rate-limit turn") == true, "\(String(describing: overflow))")

                // A column of another type.
                try await postgres.query("ALTER TABLE \(unescaped: table) ALTER COLUMN closed_until TYPE text", logger: postgresLogger)
                let retyped = await apiError { _ = try await first.send(limited(within: nil)) }
                #expect(retyped?.code == .storage)
                try await postgres.query(
                    "ALTER TABLE \(unescaped: table) ALTER COLUMN closed_until TYPE bigint USING closed_until::bigint", logger: postgresLogger)

                // Nulls and a closing far in the past are harmless; deleting the row resets the gate.
                try await postgres.query(
                    "UPDATE \(unescaped: table) SET turns = ARRAY[NULL, NULL]::bigint[], closed_until = -9223372036854775000", logger: postgresLogger)
                #expect(try await first.send(limited(within: nil)).status == .ok)
                try await postgres.query("DELETE FROM \(unescaped: table)", logger: postgresLogger)
                #expect(try await first.send(limited(within: nil)).status == .ok)
                #expect(server.hits("/limited") == 3)
            }
        }
    }

    @Test("the store's table is <prefix>rate_limits, a name of its own; a long gate name is kept short")
    func tableAndGateNames() async throws {
        #expect(PostgresTables.standard.rateLimits == "callsign_rate_limits")
        #expect(try PostgresTables(prefix: "billing.pay_").rateLimits == "billing.pay_rate_limits")
        #expect(throws: APIError.self) { try PostgresTables(outbox: "a", deadLetters: "b", cache: "c", schemaVersion: "d", rateLimits: "a") }
        #expect(throws: APIError.self) { try PostgresTables(outbox: "a", deadLetters: "b", cache: "c", schemaVersion: "d", rateLimits: "x; DROP") }

        try await withPostgres { database, postgres in
            let tables = try uniqueTables()
            let tag = String(repeating: "t", count: 5000)
            try await withTwoClients(database, postgres, tables: tables, clock: TestClock(), limits: { RateLimits(perTag: [tag: .perMinute(1)], store: $0) }) {
                server, first, second in
                server.route("/limited") { _ in .json(["ok": true]) }
                _ = try await first.get("/limited").tag(tag).send()
                let error = await apiError {
                    var request = limited(within: .seconds(20))
                    request.tag = tag
                    _ = try await second.send(request)
                }
                #expect(error?.code == .timedOut)
                let names = try await postgres.query("SELECT gate FROM \(unescaped: tables.rateLimits)", logger: postgresLogger).collect()
                    .map { try $0.decode(String.self) }
                #expect(names.count == 1 && names.allSatisfy { $0.hasPrefix("tag sha256:") && $0.utf8.count <= 256 }, "\(names)")
            }
        }
    }
}
