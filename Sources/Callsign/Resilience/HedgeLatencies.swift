import Synchronization

/// The latencies the ``MiddlewareStage/hedging`` stage observed, per API, for
/// ``HedgePolicy/Delay/observedPercentile(_:minimum:fallback:)``: the last
/// ``HedgePolicy/sampleWindow`` per API (its definition's name, else its origin), for at most
/// ``maximumKeys`` APIs (the one recorded longest ago is forgotten first). One per client.
final class HedgeLatencies: Sendable {
    /// Whose latencies: a definition's, or an origin's for calls no definition built.
    enum Key: Hashable, Sendable {
        case api(String)
        case origin(Origin)

        init?(_ request: Request) {
            if let name = request.apiName {
                self = .api(name)
            } else if let origin = Origin(request.path) {
                self = .origin(origin)
            } else {
                return nil
            }
        }
    }

    /// One API's window: a ring of the last samples.
    private struct Window {
        var samples: [Duration] = []
        var next = 0
        var lastUsed: UInt64 = 0

        mutating func add(_ sample: Duration, limit: Int) {
            if samples.count < limit {
                samples.append(sample)
            } else {
                samples[next] = sample
                next = (next + 1) % limit
            }
        }
    }

    private struct State {
        var windows: [Key: Window] = [:]
        var uses: UInt64 = 0
    }

    /// APIs kept at most.
    static let maximumKeys = 256

    private let state = Mutex(State())

    /// Records one latency for `key`.
    func record(_ latency: Duration, for key: Key) {
        guard latency >= .zero else { return }
        state.withLock { state in
            state.uses &+= 1
            var window = state.windows[key] ?? Window()
            window.add(latency, limit: HedgePolicy.sampleWindow)
            window.lastUsed = state.uses
            state.windows[key] = window
            if state.windows.count > Self.maximumKeys,
                let oldest = state.windows.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key
            {
                state.windows[oldest] = nil
            }
        }
    }

    /// The `percentile` (nearest rank) of `key`'s latencies, or `nil` before
    /// ``HedgePolicy/minimumSamples`` were seen.
    func percentile(_ percentile: Double, for key: Key) -> Duration? {
        let samples = state.withLock { $0.windows[key]?.samples ?? [] }
        guard samples.count >= HedgePolicy.minimumSamples else { return nil }
        let sorted = samples.sorted()
        // `percentile` is clamped to 1…99.9 and the count to the window: the rank fits.
        let rank = Int((min(max(percentile, 1), 99.9) / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    /// How many latencies `key` has (for tests).
    func count(for key: Key) -> Int { state.withLock { $0.windows[key]?.samples.count ?? 0 } }
}
