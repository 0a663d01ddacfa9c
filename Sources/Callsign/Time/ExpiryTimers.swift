import Foundation
import Synchronization

/// The timers of every ``Deadline`` race, `SystemClock` wait and transport attempt limit in the
/// process, kept by one sleeping task.
///
/// A race used to start a task that slept until its limit and was cancelled, woken and ended
/// when the work finished first: a system timer set and torn down per call (about 7 µs and a
/// few dozen allocations each). Here a waiter is an entry in a table — added, and removed when
/// the work finishes, under one lock — and one driver task sleeps until the earliest entry is
/// due. A new entry due later than the driver's wake-up (the usual case: calls with the same
/// limit end in the order they start) changes no timer; only an earlier one re-arms it.
final class ExpiryTimers: Sendable {
    /// The process's timers.
    static let shared = ExpiryTimers()

    private struct Waiter {
        let end: ContinuousClock.Instant?
        let idle: IdleWatch?
        let ending: Ending

        /// How a waiter is told that its limit passed.
        enum Ending {
            /// An awaiting task, resumed with which limit passed.
            case resuming(CheckedContinuation<Void, any Error>)
            /// A callback (a transport's timer), called on the driver's task.
            case calling(@Sendable () -> Void)
        }

        /// When this waiter must next be looked at: its end or its idle watch's due instant,
        /// whichever is first (a watch touched meanwhile only moves it later).
        var due: ContinuousClock.Instant {
            switch (end, idle) {
            case let (end?, idle?): min(end, idle.due)
            case let (end?, nil): end
            case let (nil, idle?): idle.due
            case (nil, nil): .now + .seconds(86_400)  // no limit: looked at once a day, ended by cancelling
            }
        }

        /// Which limit has passed at `now`, if one has: the end first, as ``Deadline/run(until:idle:_:)`` promises.
        func passed(at now: ContinuousClock.Instant) -> (any Error)? {
            if let end, now >= end { return Deadline.Expired() }
            if let idle, now >= idle.due { return Deadline.Idle(limit: idle.limit) }
            return nil
        }

        /// Tells the waiter its limit passed.
        func end(with error: any Error) {
            switch ending {
            case .resuming(let continuation): continuation.resume(throwing: error)
            case .calling(let action): action()
            }
        }
    }

    private enum Slot {
        case waiting(Waiter)
        /// The waiter's task was cancelled before its entry was added.
        case cancelled
    }

    private struct State {
        var slots: [UInt64: Slot] = [:]
        /// When the driver wakes next; `nil` while there is no driver.
        var armed: ContinuousClock.Instant?
        /// Which driver is current: one replaced by an earlier wake-up ends at its next look.
        var generation: UInt64 = 0
        var driver: Task<Void, Never>?
    }

    private let state = Mutex(State())
    /// The last waiter's identifier: taken without the lock, which a wait then takes once to file it.
    private let lastID = Atomic<UInt64>(0)

    /// How many waits are under way, and when the driver wakes next (for tests).
    var pending: (waits: Int, wake: ContinuousClock.Instant?) {
        state.withLock { state in
            (state.slots.values.count { if case .waiting = $0 { true } else { false } }, state.armed)
        }
    }

    /// Returns by throwing: ``Deadline/Expired`` once `end` has passed, ``Deadline/Idle`` once
    /// `idle` has seen no byte for its limit, or `CancellationError` when the calling task is
    /// cancelled first (the race's work finished).
    func wait(until end: ContinuousClock.Instant?, idle: IdleWatch?) async throws {
        let id = lastID.wrappingAdd(1, ordering: .relaxed).newValue
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if !add(Waiter(end: end, idle: idle, ending: .resuming(continuation)), id: id) {
                    continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let waiting: Waiter? = state.withLock { state in
                if case .waiting(let waiter) = state.slots.removeValue(forKey: id) { return waiter }
                // Cancelled before the entry was added: `add` finds this and ends the wait.
                state.slots[id] = .cancelled
                return nil
            }
            waiting?.end(with: CancellationError())
        }
    }

    /// A callback waiting in the table (``schedule(at:_:)``).
    struct Scheduled: Sendable {
        fileprivate let timers: ExpiryTimers
        fileprivate let id: UInt64

        /// Takes the callback out: it is not called unless it already was.
        func cancel() {
            timers.state.withLock { state in _ = state.slots.removeValue(forKey: id) }
        }
    }

    /// Calls `action` once `instant` has passed, on the driver's task (keep it short and
    /// non-blocking), unless the returned ``Scheduled`` is cancelled first. A transport's
    /// per-attempt timer: no system timer is set or torn down for it.
    func schedule(at instant: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> Scheduled {
        let id = lastID.wrappingAdd(1, ordering: .relaxed).newValue
        _ = add(Waiter(end: instant, idle: nil, ending: .calling(action)), id: id)
        return Scheduled(timers: self, id: id)
    }

    /// Files a waiter; `false` when its task was cancelled before it was filed.
    private func add(_ waiter: Waiter, id: UInt64) -> Bool {
        state.withLock { state in
            if case .cancelled = state.slots.removeValue(forKey: id) { return false }
            state.slots[id] = .waiting(waiter)
            let due = waiter.due
            if let armed = state.armed, armed <= due { return true }
            // Due before the driver wakes (or no driver): a new driver, the old one retired.
            state.armed = due
            state.generation &+= 1
            state.driver?.cancel()
            let generation = state.generation
            state.driver = Task.detached { [self] in await drive(generation: generation, firstWake: due) }
            return true
        }
    }

    /// Sleeps until the earliest entry is due, ends the waits whose limit has passed, and
    /// sleeps again while entries remain; ends when none do, or when a newer driver took over.
    private func drive(generation: UInt64, firstWake: ContinuousClock.Instant) async {
        var wake = firstWake
        while true {
            // At most a day per sleep: a limit of any size never reaches the clock's arithmetic.
            let now = ContinuousClock.now
            if wake > now {
                do {
                    try await Task.sleep(until: min(wake, now + .seconds(86_400)), clock: .continuous)
                } catch {
                    return  // cancelled: a driver with an earlier wake-up took over
                }
            }
            let (ended, next) = expire(at: .now, generation: generation)
            for (waiter, error) in ended { waiter.end(with: error) }
            guard let next else { return }
            wake = next
        }
    }

    /// Takes out the waiters whose limit has passed and arms the driver for the next one;
    /// `nil` when this driver should end.
    private func expire(
        at now: ContinuousClock.Instant, generation: UInt64
    ) -> (ended: [(Waiter, any Error)], next: ContinuousClock.Instant?) {
        state.withLock { state in
            guard state.generation == generation else { return ([], nil) }
            var ended: [(Waiter, any Error)] = []
            var next: ContinuousClock.Instant?
            for (id, slot) in state.slots {
                guard case .waiting(let waiter) = slot else { continue }
                if let error = waiter.passed(at: now) {
                    ended.append((waiter, error))
                    state.slots[id] = nil
                } else {
                    next = next.map { min($0, waiter.due) } ?? waiter.due
                }
            }
            state.armed = next
            if next == nil { state.driver = nil }
            return (ended, next)
        }
    }
}
