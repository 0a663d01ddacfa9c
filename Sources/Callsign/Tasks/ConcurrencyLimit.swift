import Synchronization

/// How many calls may run at once (Malibu's modes), client-wide or per tag.
///
/// ```swift
/// configuration.tasks.concurrency = .limited(4)
/// configuration.tasks.tagConcurrency["uploads"] = .serial
/// ```
///
/// Calls over the limit wait in FIFO order without polling; a waiting call that is cancelled
/// leaves the queue and is never sent.
public struct ConcurrencyLimit: Sendable, Hashable, CustomStringConvertible {
    let maximum: Int?

    /// No limit.
    public static let unlimited = ConcurrencyLimit(maximum: nil)
    /// One call at a time.
    public static let serial = ConcurrencyLimit(maximum: 1)
    /// At most `count` calls at a time (at least 1).
    public static func limited(_ count: Int) -> ConcurrencyLimit { ConcurrencyLimit(maximum: max(1, count)) }

    public var description: String { maximum.map { "limited(\($0))" } ?? "unlimited" }
}

/// A FIFO counting semaphore for async code: no busy-waiting, cancellation-aware.
final class AsyncLimiter: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var running = 0
        var waiters: [Waiter] = []
        var head = 0
        var nextID: UInt64 = 0
        /// Who awaits a line of at least so many waiters (``waitUntil(waiting:)``).
        var watchers = CountWatchers()
    }

    private let limit: Int
    private let state = Mutex(State())

    init(limit: Int) { self.limit = limit }

    /// Calls waiting for a slot now, and calls holding one (for tests of the state machine).
    var counts: (waiting: Int, running: Int) {
        state.withLock { ($0.waiters.count - $0.head, $0.running) }
    }

    /// Returns once at least `count` calls wait in line — each one really suspended — without
    /// polling, so a test can order its steps on a machine of any speed.
    func waitUntil(waiting count: Int) async {
        await CountWatchers.wait { continuation in
            state.withLock { $0.watchers.register(count, current: $0.waiters.count - $0.head, continuation) }
        }
    }

    /// Waits for a slot. Throws `CancellationError` if the task is cancelled while waiting.
    func acquire() async throws {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (outcome, watchers) = state.withLock { state -> (Bool?, [CheckedContinuation<Void, Never>]) in
                    if Task.isCancelled { return (false, []) }
                    if state.running < limit {
                        state.running += 1
                        return (true, [])
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return (nil, state.watchers.take(reaching: state.waiters.count - state.head))
                }
                for watcher in watchers { watcher.resume() }
                switch outcome {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            let removed = state.withLock { state -> Waiter? in
                guard let index = state.waiters[state.head...].firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            removed?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Frees a slot, handing it to the longest waiter if there is one.
    func release() {
        let next = state.withLock { state -> Waiter? in
            if state.head < state.waiters.count {
                let waiter = state.waiters[state.head]
                state.head += 1
                if state.head > 64 && state.head * 2 > state.waiters.count {
                    state.waiters.removeFirst(state.head)
                    state.head = 0
                }
                return waiter
            }
            state.running -= 1
            return nil
        }
        next?.continuation.resume()
    }
}
