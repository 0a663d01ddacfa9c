@testable import Callsign
import Synchronization
import Testing

/// The concurrency limit's state machine on its own: slots, FIFO hand-over, cancellation.
@Suite("AsyncLimiter", .hangGuard)
struct AsyncLimiterTests {
    /// Waits until `limiter` has `waiting` calls in line (each one is a task that really suspended).
    private func waitUntil(_ limiter: AsyncLimiter, waiting: Int) async {
        await limiter.waitUntil(waiting: waiting)
    }

    @Test("up to the limit at once; the rest wait and are served first come, first served")
    func fifo() async throws {
        let limiter = AsyncLimiter(limit: 2)
        try await limiter.acquire()
        try await limiter.acquire()
        #expect(limiter.counts == (0, 2))
        let order = OrderLog()
        var tasks: [Task<Void, any Error>] = []
        for number in 0..<5 {
            tasks.append(Task {
                try await limiter.acquire()
                order.append(number)
            })
            await waitUntil(limiter, waiting: number + 1)  // each enqueued before the next starts
        }
        // One slot at a time, each served before the next is freed: the order seen is the grant order.
        for served in 1...5 {
            limiter.release()
            await order.waitUntil(count: served)
        }
        for task in tasks { try await task.value }
        #expect(order.values == [0, 1, 2, 3, 4])
        #expect(limiter.counts == (0, 2), "a released slot passes straight to the next waiter")
        limiter.release()
        limiter.release()
        #expect(limiter.counts == (0, 0))
    }

    @Test("a cancelled waiter leaves the line without taking a slot")
    func cancellation() async throws {
        let limiter = AsyncLimiter(limit: 1)
        try await limiter.acquire()
        let cancelled = Task { try await limiter.acquire() }
        await waitUntil(limiter, waiting: 1)
        let next = Task { try await limiter.acquire() }
        await waitUntil(limiter, waiting: 2)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(limiter.counts.waiting == 1)
        limiter.release()
        try await next.value
        #expect(limiter.counts == (0, 1))
        let already = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await limiter.acquire()
        }
        await #expect(throws: CancellationError.self) { try await already.value }
        #expect(limiter.counts == (0, 1))
    }

    @Test("a long line keeps its order across compaction of served waiters")
    func longLine() async throws {
        let limiter = AsyncLimiter(limit: 1)
        try await limiter.acquire()
        let order = OrderLog()
        var tasks: [Task<Void, any Error>] = []
        for number in 0..<200 {
            tasks.append(Task {
                try await limiter.acquire()
                order.append(number)
                limiter.release()
            })
            await waitUntil(limiter, waiting: number + 1)
        }
        limiter.release()
        for task in tasks { try await task.value }
        #expect(order.values == Array(0..<200))
        #expect(limiter.counts == (0, 0))
    }
}

/// The order in which waiters got their slot; awaitable, so no test polls for it.
private final class OrderLog: Sendable {
    private let state = Mutex<(values: [Int], watchers: CountWatchers)>(([], CountWatchers()))

    func append(_ value: Int) {
        let ready = state.withLock { state in
            state.values.append(value)
            return state.watchers.take(reaching: state.values.count)
        }
        for watcher in ready { watcher.resume() }
    }

    var values: [Int] { state.withLock { $0.values } }

    /// Returns once `count` values are in the log.
    func waitUntil(count: Int) async {
        await CountWatchers.wait { continuation in
            state.withLock { $0.watchers.register(count, current: $0.values.count, continuation) }
        }
    }
}
