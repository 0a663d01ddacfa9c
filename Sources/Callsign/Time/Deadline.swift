import Foundation
import Synchronization

/// Runs work under time limits — an end instant, an idle limit, or both — cancelling it when one
/// passes.
///
/// The timers race real I/O, so they run on the continuous clock, not the injected
/// ``CallClock``: a test clock's sleeps return at once, which would end every call at once.
enum Deadline {
    /// The limit passed before the work finished.
    struct Expired: Error {}

    /// No byte moved for `limit` (``APIClient/Configuration/Timeouts/idle``).
    struct Idle: Error {
        let limit: Duration
    }

    /// Runs `operation`, throwing ``Expired`` (and cancelling it) once `limit` has passed.
    static func run<T: Sendable>(
        within limit: Duration, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await run(until: .now + limit, idle: nil, operation)
    }

    /// Runs `operation`, throwing ``Expired`` (and cancelling it) once `instant` has passed.
    static func run<T: Sendable>(
        until instant: ContinuousClock.Instant, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await run(until: instant, idle: nil, operation)
    }

    /// Runs `operation`, throwing ``Expired`` once `end` has passed, or ``Idle`` once `idle` has
    /// seen no byte for its limit; either way `operation` is cancelled and awaited (one waiting
    /// task and an entry in ``ExpiryTimers``, however often the idle watch restarts). A result
    /// that comes back once `end` has passed is ``Expired`` too. With neither, `operation` just
    /// runs.
    static func run<T: Sendable>(
        until end: ContinuousClock.Instant?, idle: IdleWatch?, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard end != nil || idle != nil else { return try await operation() }
        return try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await ExpiryTimers.shared.wait(until: end, idle: idle)
                throw CancellationError()  // not reached: the wait only returns by throwing
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            // A result that comes back once the end has passed is late, whichever side was
            // scheduled first: on a pool held for longer than the limit, the timer's turn and the
            // work's run in the order they were queued, and the timer's has one hop more.
            if let end, ContinuousClock.now >= end { throw Expired() }
            return first
        }
    }
}

/// How long a transfer may go without a byte (``APIClient/Configuration/Timeouts/idle``):
/// restarted by every byte that moves, watched by the ``MiddlewareStage/timeout`` stage, which
/// ends the attempt once it passes. One per attempt (``MiddlewareContext/Fields/idleWatch``), shared by
/// whoever moves its bytes; restarting it costs one clock read and one atomic store, no task.
///
/// ```swift
/// for try await chunk in body {
///     context.idleWatch?.touch()   // a wire middleware that produces bytes itself
///     …
/// }
/// ```
public final class IdleWatch: Sendable {
    /// How long the transfer may go without a byte.
    public let limit: Duration
    private let origin: ContinuousClock.Instant
    /// Nanoseconds from `origin` to the last byte (or the start).
    private let last = Atomic<Int64>(0)
    /// The response head, once it has arrived: for the error when the limit passes in its body.
    private let head = Mutex<Response?>(nil)

    /// A watch whose idle period starts now.
    public init(limit: Duration) {
        self.limit = max(limit, .zero)
        origin = .now
    }

    /// A byte moved: the idle period starts again.
    public func touch() {
        last.store(origin.duration(to: .now).nanoseconds, ordering: .relaxed)
    }

    /// The head arrived (a byte moved too).
    func arrived(_ response: Response) {
        head.withLock { $0 = response }
        touch()
    }

    /// The head, if it arrived.
    var arrivedHead: Response? { head.withLock { $0 } }

    /// When the limit passes unless another byte moves first.
    public var due: ContinuousClock.Instant {
        origin + .nanoseconds(last.load(ordering: .relaxed)) + limit
    }
}
