/// Tasks waiting for a count — calls in line, waiters of a call — to reach a value. Kept inside
/// the state a lock guards; what ``take(reaching:)`` returns is resumed after the lock is left.
///
/// It lets code (tests of a state machine, above all) await "three calls are waiting" instead of
/// polling for it, which on a busy machine would hold one of the cooperative pool's few threads.
struct CountWatchers: Sendable {
    private var entries: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    /// Whether `current` has reached `count` already; if not, `continuation` waits here for it.
    mutating func register(_ count: Int, current: Int, _ continuation: CheckedContinuation<Void, Never>) -> Bool {
        guard current < count else { return true }
        entries.append((count, continuation))
        return false
    }

    /// Waits until `register` — which runs ``register(_:current:_:)`` under the owner's lock —
    /// finds the count reached, at once or when ``take(reaching:)`` hands the continuation back.
    static func wait(_ register: (CheckedContinuation<Void, Never>) -> Bool) async {
        await withCheckedContinuation { continuation in
            if register(continuation) { continuation.resume() }
        }
    }

    /// Takes out the watchers that `current` satisfies.
    mutating func take(reaching current: Int) -> [CheckedContinuation<Void, Never>] {
        guard entries.contains(where: { $0.count <= current }) else { return [] }
        let ready = entries.filter { $0.count <= current }.map(\.continuation)
        entries.removeAll { $0.count <= current }
        return ready
    }
}
