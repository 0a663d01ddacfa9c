package import Foundation

/// When and how a failed attempt is tried again (APEReactiveNetworking's automatic retry, with
/// `Retry-After`).
///
/// - Only idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE) are retried, and POST/PATCH only
///   when they carry an `Idempotency-Key` — set ``addsIdempotencyKey`` to have Callsign generate
///   one per logical request, identical on every attempt.
/// - Retried: the statuses in ``retryableStatusCodes`` and transport failures before any response
///   byte (refused, reset, DNS). A one-shot body is never retried.
/// - Waits grow exponentially from ``baseDelay`` up to ``maximumDelay``, with full jitter; a
///   `Retry-After` (seconds or an HTTP date) is honoured up to ``maximumRetryAfter``.
/// - With a deadline, a wait that would end after it fails at once with ``APIError/Code/timedOut``.
///
/// ```swift
/// configuration.retry = RetryPolicy(maximumAttempts: 4, baseDelay: .milliseconds(200))
/// configuration.retry = .none
/// ```
///
/// In a definitions file: `retry: 3` (attempts) or
/// `retry: {attempts: 4, baseDelay: 0.2, maxDelay: 10, statusCodes: [503], idempotencyKey: true}`.
public struct RetryPolicy: Sendable, Hashable {
    /// How waits are randomized.
    public enum Jitter: Sendable, Hashable {
        /// A random wait between zero and the exponential value (the default; spreads retries).
        case full
        /// Exactly the exponential value.
        case none
    }

    /// Attempts in all, the first included; 1 means no retry. Default 3.
    public var maximumAttempts: Int
    /// The wait before the second attempt, doubled for each later one. Default 0.5 s.
    public var baseDelay: Duration
    /// The longest exponential wait. Default 30 s.
    public var maximumDelay: Duration
    /// The longest `Retry-After` honoured; a longer one ends the retries. Default 5 minutes.
    public var maximumRetryAfter: Duration
    /// Statuses that are retried. Default 408, 429, 500, 502, 503, 504.
    public var retryableStatusCodes: Set<Int>
    /// Whether transport failures before any response byte are retried. Default `true`.
    public var retriesTransportErrors: Bool
    /// Whether POST and PATCH get a generated `Idempotency-Key` (and so become retryable). Default `false`.
    public var addsIdempotencyKey: Bool
    /// How waits are randomized. Default ``Jitter/full``.
    public var jitter: Jitter

    /// Creates a policy.
    public init(
        maximumAttempts: Int = 3, baseDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(30),
        maximumRetryAfter: Duration = .seconds(300), retryableStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504],
        retriesTransportErrors: Bool = true, addsIdempotencyKey: Bool = false, jitter: Jitter = .full
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
        self.retryableStatusCodes = retryableStatusCodes
        self.retriesTransportErrors = retriesTransportErrors
        self.addsIdempotencyKey = addsIdempotencyKey
        self.jitter = jitter
    }

    /// Three attempts, 0.5 s doubling to 30 s, full jitter.
    public static let `default` = RetryPolicy()
    /// One attempt: no retry.
    public static let none = RetryPolicy(maximumAttempts: 1)

    /// A copy adjusted by `change`.
    ///
    /// ```swift
    /// request.retry = RetryPolicy.default.with { $0.maximumAttempts = 5 }
    /// ```
    public func with(_ change: (inout RetryPolicy) -> Void) -> RetryPolicy {
        var copy = self
        change(&copy)
        return copy
    }

    /// The exponential wait after `attempt` failed attempts (1-based), before jitter.
    func exponentialDelay(afterAttempt attempt: Int) -> Duration {
        let factor = Double(1 << min(max(attempt - 1, 0), 30))
        let delay = baseDelay.seconds * factor
        return .saturating(seconds: delay, maximum: max(.zero, maximumDelay))
    }

    /// The wait after `attempt` failed attempts, with jitter.
    func delay(afterAttempt attempt: Int) -> Duration {
        let ceiling = exponentialDelay(afterAttempt: attempt)
        switch jitter {
        case .none: return ceiling
        case .full:
            var generator = SystemRandomNumberGenerator()
            let milliseconds = max(0, ceiling.wholeMilliseconds)
            return .milliseconds(Int64.random(in: 0...milliseconds, using: &generator))
        }
    }
}

/// Reads `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP date.
///
/// Anything else — a negative or fractional number, `inf`, a date outside years 1…9999 — is
/// not a `Retry-After` at all (`nil`), and the retry policy's own back-off applies. Values
/// saturate at 2^31 seconds, far beyond any ``RetryPolicy/maximumRetryAfter``.
package enum RetryAfter {
    package static func parse(_ value: String, now: Date = Date()) -> Duration? {
        if let seconds = DeltaSeconds.parse(value) { return .seconds(seconds) }
        if let date = HTTPDate.parse(value, now: now) {
            return .saturating(seconds: date.timeIntervalSince(now))
        }
        return nil
    }
}
