extension ContinuousClock.Instant {
    /// Whole nanoseconds from now until this instant: 0 once it has passed, at most a year, so
    /// that no arithmetic on a far deadline (a timer's, NIO's) can overflow.
    var nanosecondsFromNow: Int64 {
        min(max(ContinuousClock.now.duration(to: self).nanoseconds, 0), 365 * 86_400 * 1_000_000_000)
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }

    /// The duration in seconds as a `Double`.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// A duration of `seconds`, saturating: NaN and negative values are zero, and anything
    /// beyond `maximum` is `maximum`. For seconds computed from outside values.
    static func saturating(seconds: Double, maximum: Duration = .seconds(Int64(DeltaSeconds.maximum))) -> Duration {
        if seconds.isNaN || seconds <= 0 { return .zero }
        if seconds >= maximum.seconds { return maximum }
        return .milliseconds(Int64(saturating: (seconds * 1000).rounded()))
    }

    /// The duration in whole milliseconds, saturating; for log and metric values.
    package var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000_000_000).partialValue
    }
}
