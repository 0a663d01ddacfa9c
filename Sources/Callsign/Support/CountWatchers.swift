/// Tasks waiting for a count — calls in line, waiters of a call — to reach a value. Kept inside
/// the state a lock guards; what ``take(reaching:)`` returns is resumed after the lock is left.
///
/// It lets code (tests of a state machine, above all) await "three calls are waiting" instead of
/// polling for it, which on a busy machine would hold one of the cooperative pool's few threads.
struct CountWatchers: Sendable {
    private var entries: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    /// Adds a watcher for `count`.
    mutating func add(_ count: Int, _ continuation: CheckedContinuation<Void, Never>) {
        entries.append((count, continuation))
    }

    /// Takes out the watchers that `current` satisfies.
    mutating func take(reaching current: Int) -> [CheckedContinuation<Void, Never>] {
        guard entries.contains(where: { $0.count <= current }) else { return [] }
        let ready = entries.filter { $0.count <= current }.map(\.continuation)
        entries.removeAll { $0.count <= current }
        return ready
    }
}
