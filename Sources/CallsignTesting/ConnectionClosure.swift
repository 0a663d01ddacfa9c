import NIOCore
import Synchronization

/// Tells whoever waits when a connection of the ``TestServer`` has closed: the client went away
/// (a cancelled call closes its connection) or the server closed it.
final class ConnectionClosure: Sendable {
    private struct State {
        var closed = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    init(_ closeFuture: EventLoopFuture<Void>) {
        closeFuture.whenComplete { [self] _ in
            let waiters = state.withLock { state in
                state.closed = true
                defer { state.waiters.removeAll() }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Whether the connection has closed.
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Returns once the connection has closed, or at once when the waiting task is cancelled.
    func wait() async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    guard !state.closed, !Task.isCancelled else { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
