/// The time source for retry waits and deadlines. Inject one in tests so back-off never sleeps.
///
/// ```swift
/// let clock = TestClock()                                  // from CallsignTesting
/// let client = APIClient(configuration: .init { $0.clock = clock })
/// … // run a call that retries
/// #expect(clock.sleeps == [.milliseconds(500), .seconds(1)])
/// ```
public protocol CallClock: Sendable {
    /// The current instant of a monotonic clock.
    var now: ContinuousClock.Instant { get }
    /// Waits `duration` (or returns at once, for a test clock). Throws when cancelled.
    func sleep(for duration: Duration) async throws
}

extension CallClock {
    /// `operation`'s result, or `nil` when `timeout` passes on this clock first; the loser is
    /// cancelled and awaited.
    ///
    /// ```swift
    /// let answered = await clock.first(of: { (try? await connection.ping()) != nil }, within: .seconds(5)) ?? false
    /// ```
    package func first<T: Sendable>(of operation: @escaping @Sendable () async -> T, within timeout: Duration) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await operation() }
            group.addTask {
                try? await sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}

/// The real, monotonic clock.
public struct SystemClock: CallClock {
    /// Creates the system clock.
    public init() {}
    public var now: ContinuousClock.Instant { ContinuousClock.now }
    /// Waits in the process's one table of timers (as deadlines do), so a wait cut short — a
    /// hedge's delay when the answer comes first — sets and tears down no system timer.
    public func sleep(for duration: Duration) async throws {
        guard duration > .zero else { return try Task.checkCancellation() }
        do {
            // A century at most: a duration of any size never reaches the clock's arithmetic.
            try await ExpiryTimers.shared.wait(until: .now + min(duration, .seconds(3_155_760_000)), idle: nil)
        } catch is Deadline.Expired {
            return
        }
    }
}
