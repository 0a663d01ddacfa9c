import Foundation

/// Runs seconds of synchronous CPU work (a 20,000-operation document in a debug build) on a
/// thread of its own. The cooperative pool has two threads on a 2-core machine; a test that holds
/// one of them that long stalls every other test's servers, transports and timers, and their
/// deadlines then fail for no fault of theirs.
func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
