extension ValueReader {
    /// `hedging: 0.2` (a hedge after 0.2 seconds), `hedging: false` (none, when `DEFAULT` or the
    /// client hedges), or a dictionary:
    ///
    /// ```yaml
    /// hedging: {after: 0.2, extraAttempts: 2}
    /// hedging: {percentile: 95, minimum: 0.05, fallback: 0.3}
    /// ```
    ///
    /// Delays are seconds (more than 0, at most a day), `percentile` 1–99.9, `extraAttempts` 0–4.
    func hedgePolicy() throws(APIError) -> HedgePolicy {
        switch value {
        case .bool(false):
            return .off
        case .int, .double:
            return .after(try seconds())
        case .object(let members):
            var after: Duration?
            var percentile: Double?
            var minimum: Duration?
            var fallback: Duration?
            var extraAttempts = 1
            for key in members.keys.sorted() {
                guard let member = members[key] else { continue }
                let nested = ValueReader(api: api, key: "\(self.key).\(key)", line: line, value: member)
                switch key {
                case "after": after = try nested.seconds()
                case "minimum": minimum = try nested.seconds()
                case "fallback": fallback = try nested.seconds()
                case "percentile":
                    let number: Double? =
                        switch member {
                        case .int(let whole): Double(whole)
                        case .double(let fraction): fraction
                        default: nil
                        }
                    guard let number, number.isFinite, number >= 1, number <= 99.9 else {
                        throw nested.error("must be a number from 1 to 99.9")
                    }
                    percentile = number
                case "extraAttempts":
                    guard let count = member.intValue, (0...HedgePolicy.maximumAllowedExtraAttempts).contains(count) else {
                        throw nested.error("must be a whole number from 0 to 4")
                    }
                    extraAttempts = count
                default:
                    throw nested.error("unknown; use after, percentile, minimum, fallback, extraAttempts")
                }
            }
            switch (after, percentile) {
            case (let after?, nil):
                guard minimum == nil, fallback == nil else {
                    throw error("minimum and fallback belong with percentile, not with after")
                }
                return .after(after, maximumExtraAttempts: extraAttempts)
            case (nil, let percentile?):
                guard let fallback else { throw error("percentile needs a fallback: the delay until enough answers were measured") }
                return .observedPercentile(
                    percentile, minimum: minimum ?? .milliseconds(10), fallback: fallback, maximumExtraAttempts: extraAttempts)
            default:
                throw error("needs either after (a fixed delay) or percentile (an observed one), not both")
            }
        default:
            throw error("must be a delay in seconds, false, or a dictionary with after or percentile")
        }
    }
}
