@testable import Callsign
import Foundation

/// How many child processes the suite runs at once — the CLI, python, shells, PostgreSQL's
/// programs — so that a run on two busy cores does not start a hundred processes in its first
/// second and starve the in-process servers and transports. Waiting for a slot is FIFO and
/// polls nothing (the library's own ``AsyncLimiter``).
///
/// `CALLSIGN_TEST_PROCESSES` sets the number; the default is twice the cores, at least 4 (a
/// child process mostly waits for its server).
enum ProcessSlots {
    static let capacity: Int = {
        let configured = ProcessInfo.processInfo.environment["CALLSIGN_TEST_PROCESSES"].flatMap { Int($0) }
        return max(1, configured ?? max(4, 2 * ProcessInfo.processInfo.activeProcessorCount))
    }()

    private static let limiter = AsyncLimiter(limit: capacity)

    /// Whether this task already holds a slot: what it starts inside runs on that slot, so one
    /// test never waits for a second slot while holding the first.
    @TaskLocal private static var holdsSlot = false

    /// Runs `body` holding one slot, from before its process starts until after it is reaped.
    static func withSlot<T>(_ body: () async throws -> T) async throws -> T {
        if holdsSlot { return try await body() }
        try await limiter.acquire()
        defer { limiter.release() }
        return try await $holdsSlot.withValue(true) { try await body() }
    }
}
