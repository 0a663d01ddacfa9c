public import Foundation
import HTTPTypes
import Synchronization

/// Rate limits shared by every call to an origin (or of a tag): what the servers announce, and
/// the limits you set (``APIClient/Configuration/rateLimits``, the ``MiddlewareStage/rateLimit`` stage).
///
/// Each origin has one gate, and so has each tag given a limit in ``perTag``. When a server
/// says "wait" — `Retry-After` on a `429` or `503`, or `RateLimit`/`X-RateLimit-Remaining: 0`
/// with a reset — the gate closes for **every** call through it, not just the one that got the
/// answer. A `RateLimit-Policy` the server publishes becomes the gate's limit when you set none.
/// A call waits at its gate on the client's ``APIClient/Configuration/clock``; one that cannot
/// go before its deadline fails at once with ``APIError/Code/timedOut`` and sends nothing.
///
/// ```swift
/// configuration.rateLimits = RateLimits()                                      // only what servers say
/// configuration.rateLimits = RateLimits(perOrigin: .perSecond(5))              // and at most 5 a second to each origin
/// configuration.rateLimits = RateLimits(perTag: ["search": .per(10, .seconds(10))])
/// ```
///
/// One `RateLimits` may be given to several clients: they then share its gates. To share them
/// between processes — a fleet keeping to one limit — give it a ``store``:
///
/// ```swift
/// configuration.rateLimits = RateLimits(perOrigin: .perSecond(5), store: PostgresRateLimitStore(client: postgres))
/// ```
public final class RateLimits: Sendable {
    /// The limit of each origin's gate. Default `nil`: only what servers announce.
    public let perOrigin: RateLimit?
    /// Tags with a gate of their own, and its limit. Default none.
    public let perTag: [String: RateLimit]
    /// Whether what servers announce closes the gate (`Retry-After` on 429 and 503, the
    /// `RateLimit` fields). Default `true`.
    public let followsServer: Bool
    /// The longest a server can close a gate for with one answer. Default 5 minutes.
    public let maximumWait: Duration
    /// Where the gates' turns are kept when processes share them. Default `nil`: in this
    /// process's memory. With a store, each call takes its turn from it (one round trip), and a
    /// server's "wait" is told to it, so every process sharing the store waits too; a
    /// `RateLimit-Policy` a server publishes still becomes the limit only in the process that read it.
    public let store: (any RateLimitStore)?

    /// A gate's key: a tag with its own limit, else the origin.
    enum Key: Hashable, Sendable {
        case origin(Origin)
        case tag(String)

        /// The gate's name in a ``RateLimitStore``: at most 256 bytes, a long host or tag
        /// named by its SHA-256 (a store's key column need not hold any length).
        var storeName: String {
            let (kind, name) = switch self {
            case .origin(let origin): ("origin", origin.description)
            case .tag(let tag): ("tag", tag)
            }
            return name.utf8.count <= 200 ? "\(kind) \(name)" : "\(kind) sha256:\(Digest.sha256Hex(name))"
        }
    }

    /// One gate.
    private struct Gate {
        /// Until when the server asked everyone to wait.
        var closedUntil: ContinuousClock.Instant?
        /// When the last requests went (or will go: reserved by waiting calls), in order.
        var sends: [ContinuousClock.Instant] = []
        /// The quota the server publishes (`RateLimit-Policy`).
        var serverLimit: RateLimit?

        /// Whether the gate remembers nothing that still matters at `now`.
        func isIdle(at now: ContinuousClock.Instant) -> Bool {
            (closedUntil.map { $0 <= now } ?? true) && (sends.last.map { $0 <= now } ?? true) && serverLimit == nil
        }
    }

    private let gates = Mutex<[Key: Gate]>([:])
    /// Gates kept at most: past it, idle gates are forgotten (a client that calls many origins).
    static let maximumGates = 1024

    /// Creates rate limits.
    ///
    /// - Parameters:
    ///   - perOrigin: the limit of every origin's gate. Default `nil`: only what servers announce.
    ///   - perTag: tags with a gate of their own, and its limit. Default none.
    ///   - followsServer: whether servers' answers close the gates. Default `true`.
    ///   - maximumWait: the longest one answer can close a gate for. Default 5 minutes.
    ///   - store: where the gates' turns are kept when processes share them. Default `nil`: in
    ///     this process's memory.
    public init(
        perOrigin: RateLimit? = nil, perTag: [String: RateLimit] = [:], followsServer: Bool = true, maximumWait: Duration = .seconds(300),
        store: (any RateLimitStore)? = nil
    ) {
        self.perOrigin = perOrigin
        self.perTag = perTag
        self.followsServer = followsServer
        self.maximumWait = max(.zero, maximumWait)
        self.store = store
    }

    /// Until when the server asked calls to this URL's origin (or to `tag`, if it has a gate of
    /// its own) to wait; `nil` when it did not. For an app that shows "try again in …".
    ///
    /// ```swift
    /// if let reopens = limits.closedUntil(URL(string: "https://api.example.com/")!), reopens > .now { … }
    /// ```
    public func closedUntil(_ url: URL, tag: String? = nil) -> ContinuousClock.Instant? {
        guard let key = key(path: url.absoluteString, tag: tag) else { return nil }
        return gates.withLock { $0[key]?.closedUntil }
    }

    /// Until when this process knows the gate is closed, on the call clock.
    func closedUntil(_ key: Key) -> ContinuousClock.Instant? {
        gates.withLock { $0[key]?.closedUntil }
    }

    /// The gate's limit: the one you set, else the one its server published.
    func limit(for key: Key) -> RateLimit? {
        configuredLimit(key) ?? gates.withLock { $0[key]?.serverLimit }
    }

    /// The gate a request goes through: its tag's, if the tag has a limit, else its origin's.
    func key(path: String, tag: String?) -> Key? {
        if let tag, perTag[tag] != nil { return .tag(tag) }
        return Origin(path).map(Key.origin)
    }

    /// What a call at a gate is told.
    enum Admission: Equatable {
        /// Go now.
        case go
        /// Wait until the instant, then ask again; `reserved` is the send slot now held.
        case wait(until: ContinuousClock.Instant, reserved: ContinuousClock.Instant?)
        /// The call could not go before its deadline: nothing was reserved.
        case refused(until: ContinuousClock.Instant)
    }

    /// Admits a call at `now`, holding the slot `reserved` if it already has one.
    func admit(
        _ key: Key, now: ContinuousClock.Instant, deadline: ContinuousClock.Instant?, reserved: ContinuousClock.Instant?
    ) -> Admission {
        let configured = configuredLimit(key)
        return gates.withLock { gates in
            var gate = gates[key] ?? Gate()
            defer { keep(gate, at: key, in: &gates, now: now) }
            var until = max(now, gate.closedUntil ?? now)
            var slot = reserved
            if let limit = configured ?? gate.serverLimit {
                if let held = slot {
                    until = max(until, held)
                } else {
                    gate.sends.removeFirst(gate.sends.prefix { $0 <= now - limit.window }.count)
                    if gate.sends.count >= limit.count { until = max(until, gate.sends[gate.sends.count - limit.count] + limit.window) }
                    // Kept in order: a slot never goes before one already reserved.
                    until = max(until, gate.sends.last ?? until)
                    if let deadline, until > deadline { return .refused(until: until) }
                    gate.sends.append(until)
                    slot = until
                }
            }
            if let deadline, until > deadline {
                if let held = slot, let index = gate.sends.lastIndex(of: held) { gate.sends.remove(at: index) }
                return .refused(until: until)
            }
            return until > now ? .wait(until: until, reserved: slot) : .go
        }
    }

    /// The limit you set for a gate, if any.
    private func configuredLimit(_ key: Key) -> RateLimit? {
        if case .tag(let tag) = key { perTag[tag] } else { perOrigin }
    }

    /// Gives back a slot a call will not use (it was cancelled while it waited).
    func release(_ key: Key, slot: ContinuousClock.Instant) {
        gates.withLock { gates in
            if let index = gates[key]?.sends.lastIndex(of: slot) { gates[key]?.sends.remove(at: index) }
        }
    }

    /// Reads what an answer says about the server's limits, at `now` on the call clock.
    ///
    /// - Returns: how long the answer closed the gate for, if it did.
    @discardableResult
    func observe(_ response: Response, key: Key, now: ContinuousClock.Instant) -> Duration? {
        guard followsServer else { return nil }
        var wait: Duration?
        let status = response.status.code
        if status == 429 || status == 503, let header = response.headers[.retryAfter], let after = RetryAfter.parse(header) {
            wait = after
        }
        let reading = RateLimitFields.read(response.headers)
        if reading.remaining == 0, let reset = reading.reset { wait = max(wait ?? .zero, reset) }
        guard wait != nil || reading.policy != nil else { return nil }
        let closing = wait.flatMap { $0 > .zero ? min($0, maximumWait) : nil }
        gates.withLock { gates in
            var gate = gates[key] ?? Gate()
            if let closing {
                let end = now + closing
                gate.closedUntil = max(gate.closedUntil ?? end, end)
            }
            if let policy = reading.policy, configuredLimit(key) == nil {
                // The answer that brought the policy counts against it: its send was not recorded.
                if gate.serverLimit == nil { gate.sends.append(now) }
                gate.serverLimit = policy
            }
            keep(gate, at: key, in: &gates, now: now)
        }
        return closing
    }

    /// Stores a gate, forgetting idle ones once there are too many.
    private func keep(_ gate: Gate, at key: Key, in gates: inout [Key: Gate], now: ContinuousClock.Instant) {
        gates[key] = gate
        guard gates.count > Self.maximumGates else { return }
        gates = gates.filter { $0.key == key || !$0.value.isIdle(at: now) }
        // Every gate busy (a flood of origins): others are forgotten, never the one in use.
        while gates.count > Self.maximumGates, let victim = gates.keys.first(where: { $0 != key }) { gates[victim] = nil }
    }
}
