import Synchronization

/// Values told to every reader that asked for them: each ``stream()`` is a stream of its own from
/// now on, ended when its task is cancelled or its reader goes; a reader that falls `buffer`
/// values behind loses the oldest. What ``CircuitBreaker/transitions``,
/// ``Reachability/changes`` and ``APIClient/drainEvents`` hand out.
final class Broadcast<Element: Sendable>: Sendable {
    private struct Readers {
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        var next = 0
    }

    private let readers = Mutex(Readers())
    private let buffer: Int

    init(buffer: Int = 100) {
        self.buffer = max(1, buffer)
    }

    /// A new reader's stream.
    func stream() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(buffer))
        let id = readers.withLock { readers in
            defer { readers.next += 1 }
            readers.continuations[readers.next] = continuation
            return readers.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.readers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Tells every reader. Call it outside any lock a termination handler might take.
    func send(_ value: Element) {
        for reader in readers.withLock({ Array($0.continuations.values) }) { reader.yield(value) }
    }

    /// Ends every reader's stream.
    func finish() {
        for reader in readers.withLock({ Array($0.continuations.values) }) { reader.finish() }
    }
}
