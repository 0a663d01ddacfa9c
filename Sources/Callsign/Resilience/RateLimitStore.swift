/// Where the gates of ``RateLimits`` keep their turns when several processes must share one limit:
/// a database every process of a fleet reaches (`PostgresRateLimitStore` in `CallsignPostgres`).
///
/// Without a store (``RateLimits/store`` `nil`, the default) a gate lives in the memory of its
/// process, and only the clients given the same ``RateLimits`` share it. With one, each call takes
/// its turn from the store — one round trip, atomic in the store — so any number of processes
/// configured with the same store and the same ``RateLimit`` together keep to that limit.
///
/// A store keeps the same promise as the in-memory gate: at most ``RateLimit/count`` turns in any
/// ``RateLimit/window``, turns handed out in order, and none later than the caller can wait.
/// Times are the store's own (a database's clock), told to the caller as a wait from now.
///
/// ```swift
/// let shared = PostgresRateLimitStore(client: postgres)
/// configuration.rateLimits = RateLimits(perOrigin: .perSecond(5), store: shared)
/// ```
public protocol RateLimitStore: Sendable {
    /// Takes the next turn at `gate`, unless it comes later than `within` from now.
    ///
    /// The turn is the first instant that is after every wait the gate was closed for
    /// (``close(_:for:)``), not before the turn handed out last, and — with a `limit` — at least
    /// `limit.window` after the turn `limit.count` turns back. Without a `limit` no turn is
    /// recorded: the call only waits for the gate to open.
    ///
    /// - Parameters:
    ///   - gate: the gate's name: `origin <scheme://host:port>`, or `tag <tag>` for a tag with a
    ///     gate of its own.
    ///   - limit: the gate's limit, or `nil` when only a server's "wait" holds it.
    ///   - within: how long the caller can wait (the time to its deadline); `nil`: as long as it takes.
    /// - Returns: the wait, and whether the turn was taken.
    /// - Throws: `APIError` (``APIError/Code/storage``) when the store cannot be reached or
    ///   holds something that is not a gate's state.
    func reserve(_ gate: String, limit: RateLimit?, within: Duration?) async throws(APIError) -> RateLimitReservation

    /// Gives back a turn a call will not use (it was cancelled while it waited). Best effort:
    /// a turn not given back is only a turn unused.
    func release(_ gate: String, reservation: RateLimitReservation) async

    /// Closes `gate` for `duration` from now for every process (a server said "wait"); a gate
    /// already closed for longer stays so.
    ///
    /// - Throws: `APIError` (``APIError/Code/storage``) when the store cannot be reached.
    func close(_ gate: String, for duration: Duration) async throws(APIError)
}

/// What a ``RateLimitStore`` answers a call that asks for a turn.
///
/// ```swift
/// let turn = try await store.reserve("origin https://api.example.com:443", limit: .perSecond(5), within: .seconds(10))
/// if turn.isAdmitted { try await Task.sleep(for: turn.wait) }
/// ```
public struct RateLimitReservation: Sendable, Hashable {
    /// How long from now until the turn; `.zero`: go now. Never negative.
    public let wait: Duration
    /// Whether the call may go once ``wait`` is over. `false`: the turn comes after the time the
    /// call has (``wait`` says when it comes), and nothing was taken.
    public let isAdmitted: Bool
    /// The turn taken, in the store's own terms, for ``RateLimitStore/release(_:reservation:)``;
    /// `nil` when none was taken (refused, or a gate without a limit).
    public let turn: Int64?

    /// A store's answer.
    ///
    /// - Parameters:
    ///   - wait: how long from now until the turn (a negative value counts as zero).
    ///   - isAdmitted: whether the call may go once the wait is over.
    ///   - turn: the turn taken, in the store's terms; `nil` when none was taken.
    public init(wait: Duration, isAdmitted: Bool, turn: Int64?) {
        self.wait = max(.zero, wait)
        self.isAdmitted = isAdmitted
        self.turn = isAdmitted ? turn : nil
    }
}
