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
///
/// For a test that must see what happens *before* a wait ends — a hedge that should not be sent
/// yet — make one whose sleeps wait until the test moves its time past them:
///
/// ```swift
/// let clock = TestClock(waitsForAdvance: true)
/// let call = Task { try await client.get("/slow").send() }
/// await clock.waitUntilSleeping()        // the call waits on the clock now
/// clock.advance(by: .milliseconds(200))  // and that wait is over
/// ```
///
/// A client with an offline queue drains it by itself (`APIClient.Configuration.Offline.drain`),
/// and its waits between probes are sleeps on this clock: with `TestClock()` they end at once, so
/// the drain probes a server that is down again and again and the clock's time runs ahead. In a
/// test that queues requests, pick `TestClock(waitsForAdvance: true)` and move the time yourself,
/// or set `offline.drain = .manual` and call `replay()`.
public final class TestClock: CallClock {
    private struct Sleeper {
        let end: Duration
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var offset: Duration = .zero
        var sleeps: [Duration] = []
        var sleepers: [Int: Sleeper] = [:]
        /// Sleeps cancelled before they were registered.
        var cancelled: Set<Int> = []
        var nextSleeper = 0
        var watchers: [(awaited: Awaited, continuation: CheckedContinuation<Void, Never>)] = []

        /// What a test waits for.
        enum Awaited {
            /// At least this many sleepers.
            case count(Int)
            /// A sleeper whose end is this late or later.
            case until(Duration)
        }

        func holds(_ awaited: Awaited) -> Bool {
            switch awaited {
            case .count(let count): count <= sleepers.count
            case .until(let end): sleepers.values.contains { $0.end >= end }
            }
        }

        /// The watchers that now see what they wait for, removed.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
            var ready: [CheckedContinuation<Void, Never>] = []
            var waiting: [(awaited: Awaited, continuation: CheckedContinuation<Void, Never>)] = []
            for watcher in watchers {
                if holds(watcher.awaited) { ready.append(watcher.continuation) } else { waiting.append(watcher) }
            }
            watchers = waiting
            return ready
        }
    }

    private let start = ContinuousClock.now
    private let state = Mutex(State())
    private let waitsForAdvance: Bool

    /// Creates a clock at the current instant whose sleeps return at once.
    public init() { waitsForAdvance = false }

    /// Creates a clock at the current instant.
    ///
    /// - Parameter waitsForAdvance: `true` for sleeps that wait until ``advance(by:)`` moves the
    ///   time to their end (or their task is cancelled); `false` for sleeps that return at once
    ///   and move the time themselves, as ``init()``.
    public init(waitsForAdvance: Bool) { self.waitsForAdvance = waitsForAdvance }

    public var now: ContinuousClock.Instant { start + state.withLock { $0.offset } }

    public func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        guard waitsForAdvance else {
            state.withLock { state in
                state.offset += duration
                state.sleeps.append(duration)
            }
            await Task.yield()
            return
        }
        let (id, end) = state.withLock { state in
            defer { state.nextSleeper += 1 }
            state.sleeps.append(duration)
            return (state.nextSleeper, state.offset + duration)
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (outcome, ready) = state.withLock { state -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
                    if state.cancelled.remove(id) != nil { return (.failure(CancellationError()), []) }
                    if end <= state.offset { return (.success(()), []) }
                    state.sleepers[id] = Sleeper(end: end, continuation: continuation)
                    return (nil, state.satisfiedWatchers())
                }
                for watcher in ready { watcher.resume() }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelled.insert(id)
                    return Sleeper?.none
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Every sleep requested so far, in order.
    public var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// How many sleeps wait for ``advance(by:)`` now (only with `waitsForAdvance`).
    public var pendingSleeps: Int { state.withLock { $0.sleepers.count } }

    /// Moves the clock forward without a sleep, ending the sleeps that waited for it.
    public func advance(by duration: Duration) {
        let ended = state.withLock { state in
            state.offset += duration
            let due = state.sleepers.filter { $0.value.end <= state.offset }
            for id in due.keys { state.sleepers[id] = nil }
            return due.sorted { $0.value.end < $1.value.end }.map(\.value.continuation)
        }
        for continuation in ended { continuation.resume() }
    }

    /// Returns once at least `count` sleeps wait for ``advance(by:)`` (only with `waitsForAdvance`):
    /// the code under test has reached its wait, so advancing the time now ends it.
    ///
    /// A sleep of zero returns at once and never waits, so it is never seen here. A back-off with
    /// full jitter (`RetryPolicy.Jitter.full`, the default) is zero about once in every 500 waits
    /// of half a second: a test that waits for a back-off gives its policy `jitter: .none`.
    public func waitUntilSleeping(_ count: Int = 1) async {
        await wait(for: .count(count))
    }

    /// Returns once a sleep waits for ``advance(by:)`` to move the time to `end` or later —
    /// `end` counted from the clock's start, as the sum of every sleep and advance (only with
    /// `waitsForAdvance`). It tells one wait from another: a keep-alive back at its 30-second
    /// interval, not still at its 10-second limit.
    ///
    /// ```swift
    /// clock.advance(by: .seconds(30))                  // a ping goes out; its limit is at 40 s
    /// await clock.waitUntilSleeping(until: .seconds(60)) // answered: the next ping is due at 60 s
    /// ```
    public func waitUntilSleeping(until end: Duration) async {
        await wait(for: .until(end))
    }

    private func wait(for awaited: State.Awaited) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                guard !state.holds(awaited) else { return true }
                state.watchers.append((awaited, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
