/// A client-side rate limit: at most ``count`` requests in any ``window``, for APIs that publish
/// their limits only in their documentation.
///
/// The promise is kept over every window, not on average: `.per(5, .seconds(10))` never lets a
/// sixth request go within ten seconds of the first five (a token bucket would let ten through
/// the first ten seconds: its burst, then its refill).
///
/// ```swift
/// configuration.rateLimits = RateLimits(perOrigin: .perSecond(5))
/// configuration.rateLimits = RateLimits(perTag: ["search": .per(10, .seconds(10))])
/// ```
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    /// The most requests in any window, at least 1.
    public let count: Int
    /// The window, at least a millisecond.
    public let window: Duration

    /// At most `count` requests in any `window`.
    ///
    /// A limit above ``maximumCount`` is kept as the same rate over a shorter window (a million a
    /// second as a thousand a millisecond), so a limiter never remembers more than that many sends.
    public init(_ count: Int, per window: Duration) {
        var count = max(1, count)
        var window = max(window, .milliseconds(1))
        if count > Self.maximumCount {
            let factor = (count + Self.maximumCount - 1) / Self.maximumCount
            count /= factor
            window = max(window / factor, .milliseconds(1))
        }
        self.count = count
        self.window = window
    }

    /// The largest ``count`` kept as written.
    public static let maximumCount = 1024

    /// At most `count` requests a second.
    public static func perSecond(_ count: Int) -> RateLimit { RateLimit(count, per: .seconds(1)) }

    /// At most `count` requests a minute.
    public static func perMinute(_ count: Int) -> RateLimit { RateLimit(count, per: .seconds(60)) }

    /// At most `count` requests in any `window`: `.per(10, .seconds(10))`.
    public static func per(_ count: Int, _ window: Duration) -> RateLimit { RateLimit(count, per: window) }

    public var description: String { "\(count) per \(APIClient.describe(window))" }
}
