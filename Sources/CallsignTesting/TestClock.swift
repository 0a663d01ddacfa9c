public import Callsign
import Synchronization

/// A clock for tests of retries and deadlines: `sleep(for:)` returns at once, moves the clock's
/// time forward by the duration, and records it.
///
/// ```swift
/// let clock = TestClock()
/// let client = APIClient(configuration: .init { $0.clock = clock; $0.retry.jitter = .none })
/// _ = try await client.get("/flaky").send()
/// #expect(clock.sleeps == [.milliseconds(500), .seconds(1)])
/// ```
public final class TestClock: CallClock {
    private let start = ContinuousClock.now
    private let state = Mutex<(offset: Duration, sleeps: [Duration])>((.zero, []))

    /// Creates a clock at the current instant.
    public init() {}

    public var now: ContinuousClock.Instant { start + state.withLock { $0.offset } }

    public func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        state.withLock { state in
            state.offset += duration
            state.sleeps.append(duration)
        }
        await Task.yield()
    }

    /// Every sleep requested so far, in order.
    public var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// Moves the clock forward without a sleep.
    public func advance(by duration: Duration) { state.withLock { $0.offset += duration } }
}
