/// When a slow call sends a second attempt and takes whichever answers first: hedged requests
/// (the ``MiddlewareStage/hedging`` stage), for the tail latency one slow server or connection adds.
///
/// If no answer head has arrived after ``delay``, the stage sends the same request again and
/// returns the first answer; the other attempt is cancelled (its connection closed). Up to
/// ``maximumExtraAttempts`` hedges go, one per delay. A hedge is sent only for a request that may
/// be sent twice — by the same rule the ``MiddlewareStage/retry`` stage uses: GET, HEAD, OPTIONS,
/// TRACE, PUT and DELETE, POST and PATCH only with an `Idempotency-Key`, and never with a one-shot
/// body stream — never for a download to a file, and never when the call's deadline leaves less
/// time than the delay.
///
/// Off unless you ask: per client (``APIClient/Configuration/hedging``), per definition
/// (``CallOptions/hedging``, `hedging:` in a file) or per call (``CallOptions/hedging``,
/// ``RequestBuilder/hedging(_:)``); the call's wins over its definition's, which wins over the
/// client's.
///
/// ```swift
/// configuration.hedging = .after(.milliseconds(200))
/// request.hedging = .observedPercentile(95, minimum: .milliseconds(50), fallback: .milliseconds(300))
/// ```
public struct HedgePolicy: Sendable, Hashable, CustomStringConvertible {
    /// How long a call waits for an answer head before it sends a hedge.
    public struct Delay: Sendable, Hashable, CustomStringConvertible {
        private enum Kind: Sendable, Hashable {
            case fixed(Duration)
            case observed(percentile: Double, minimum: Duration, fallback: Duration)
        }

        private let kind: Kind

        /// A fixed delay, at least 1 millisecond.
        ///
        /// ```swift
        /// let policy = HedgePolicy(delay: .after(.milliseconds(200)))
        /// ```
        public static func after(_ delay: Duration) -> Delay {
            Delay(kind: .fixed(max(delay, HedgePolicy.shortestDelay)))
        }

        /// The `percentile` of the latencies the stage observed for the same API (its definition's
        /// name, else its origin), never below `minimum`; `fallback` until
        /// ``HedgePolicy/minimumSamples`` answers were seen.
        ///
        /// A latency is the time from a call's first attempt to its first answer head, on the
        /// client's clock (for a hedged call, a lower bound of what the first attempt would have
        /// taken); the last ``HedgePolicy/sampleWindow`` of them are kept per API.
        ///
        /// - Parameters:
        ///   - percentile: from 1 to 99.9 (clamped); 95 sends a hedge for about one call in twenty.
        ///   - minimum: the shortest delay, however fast the API has been. Default 10 ms.
        ///   - fallback: the delay before enough latencies were seen.
        public static func observedPercentile(_ percentile: Double, minimum: Duration = .milliseconds(10), fallback: Duration) -> Delay {
            let clamped = percentile.isNaN ? 95 : min(max(percentile, 1), 99.9)
            let floor = max(minimum, HedgePolicy.shortestDelay)
            return Delay(kind: .observed(percentile: clamped, minimum: floor, fallback: max(fallback, floor)))
        }

        /// Whether the delay is an observed percentile, which needs the API's latencies.
        var isObserved: Bool {
            if case .observed = kind { return true }
            return false
        }

        /// The delay for one call: the fixed one, or the percentile `measure` finds (`nil`: too
        /// few latencies yet, so the fallback), never below the floor.
        func duration(measuring measure: (_ percentile: Double) -> Duration?) -> Duration {
            switch kind {
            case .fixed(let delay): delay
            case .observed(let percentile, let minimum, let fallback): max(measure(percentile) ?? fallback, minimum)
            }
        }

        public var description: String {
            switch kind {
            case .fixed(let delay): "after \(APIClient.describe(delay))"
            case .observed(let percentile, let minimum, let fallback):
                "p\(percentile == percentile.rounded() ? String(Int(percentile)) : String(percentile)) (at least \(APIClient.describe(minimum)), \(APIClient.describe(fallback)) until measured)"
            }
        }
    }

    /// How long a call waits for an answer head before each hedge.
    public var delay: Delay
    /// How many hedges one attempt may add, from 0 (off) to 4. Default 1: two requests at most.
    public var maximumExtraAttempts: Int {
        didSet { maximumExtraAttempts = Self.clamp(maximumExtraAttempts) }
    }

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - delay: how long to wait for an answer head before each hedge.
    ///   - maximumExtraAttempts: how many hedges at most, 0 to 4 (clamped). Default 1.
    public init(delay: Delay, maximumExtraAttempts: Int = 1) {
        self.delay = delay
        self.maximumExtraAttempts = Self.clamp(maximumExtraAttempts)
    }

    /// A hedge after a fixed delay.
    ///
    /// ```swift
    /// configuration.hedging = .after(.milliseconds(200))
    /// ```
    public static func after(_ delay: Duration, maximumExtraAttempts: Int = 1) -> HedgePolicy {
        HedgePolicy(delay: .after(delay), maximumExtraAttempts: maximumExtraAttempts)
    }

    /// A hedge after the observed `percentile` of the API's latencies (see
    /// ``Delay/observedPercentile(_:minimum:fallback:)``).
    ///
    /// ```swift
    /// configuration.hedging = .observedPercentile(95, minimum: .milliseconds(50), fallback: .milliseconds(300))
    /// ```
    public static func observedPercentile(
        _ percentile: Double, minimum: Duration = .milliseconds(10), fallback: Duration, maximumExtraAttempts: Int = 1
    ) -> HedgePolicy {
        HedgePolicy(delay: .observedPercentile(percentile, minimum: minimum, fallback: fallback), maximumExtraAttempts: maximumExtraAttempts)
    }

    /// No hedging: for one call or definition when the client hedges.
    ///
    /// ```swift
    /// let report = try await client.get("reports/big").hedging(.off).send()
    /// ```
    public static let off = HedgePolicy(delay: .after(.seconds(1)), maximumExtraAttempts: 0)

    /// Whether the policy sends any hedge.
    public var isEnabled: Bool { maximumExtraAttempts > 0 }

    /// The most hedges one attempt may add.
    public static let maximumAllowedExtraAttempts = 4
    /// How many latencies are kept per API for ``Delay/observedPercentile(_:minimum:fallback:)``.
    public static let sampleWindow = 256
    /// How many latencies an API needs before its percentile is used instead of the fallback.
    public static let minimumSamples = 20
    /// The shortest delay: a hedge sent at once would double every call.
    static let shortestDelay: Duration = .milliseconds(1)

    private static func clamp(_ count: Int) -> Int { min(max(count, 0), maximumAllowedExtraAttempts) }

    public var description: String {
        isEnabled ? "hedge \(delay), at most \(maximumExtraAttempts)" : "no hedging"
    }
}
