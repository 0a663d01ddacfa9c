import Foundation

/// Runs work under a time limit, cancelling it when the limit passes.
enum Deadline {
    /// The limit passed before the work finished.
    struct Expired: Error {}

    /// Runs `operation`, throwing ``Expired`` (and cancelling it) once `limit` has passed.
    static func run<T: Sendable>(
        within limit: Duration, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await race(operation) { try await Task.sleep(for: limit) }
    }

    /// Runs `operation`, throwing ``Expired`` (and cancelling it) once `instant` has passed.
    static func run<T: Sendable>(
        until instant: ContinuousClock.Instant, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await race(operation) { try await Task.sleep(until: instant, clock: .continuous) }
    }

    private static func race<T: Sendable>(
        _ operation: @escaping @Sendable () async throws -> T, timer: @escaping @Sendable () async throws -> Void
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await timer()
                throw Expired()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }
}
