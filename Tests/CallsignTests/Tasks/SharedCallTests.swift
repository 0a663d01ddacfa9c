@testable import Callsign
import Synchronization
import Testing

/// One running call many callers await, on its own: results fan out, a waiter can leave, the
/// last one out cancels the work.
@Suite("SharedCall", .hangGuard)
struct SharedCallTests {
    /// Work that runs until the test opens its gate (or its task is cancelled).
    private final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiter: CheckedContinuation<Void, Never>?, cancelled: Bool, watchers: CountWatchers)>(
            (false, nil, false, CountWatchers()))

        func wait() async {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let resume = state.withLock { state in
                        if state.open || state.cancelled { return true }
                        state.waiter = continuation
                        return false
                    }
                    if resume { continuation.resume() }
                }
            } onCancel: {
                let (waiter, watchers) = state.withLock { state in
                    state.cancelled = true
                    defer { state.waiter = nil }
                    return (state.waiter, state.watchers.take(reaching: 1))
                }
                waiter?.resume()
                for watcher in watchers { watcher.resume() }
            }
        }

        func open() {
            let waiter = state.withLock { state in
                state.open = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        var wasCancelled: Bool { state.withLock { $0.cancelled } }

        /// Returns once the work has been cancelled.
        func waitUntilCancelled() async {
            await CountWatchers.wait { continuation in
                state.withLock { $0.watchers.register(1, current: $0.cancelled ? 1 : 0, continuation) }
            }
        }
    }

    private func start(_ call: SharedCall, gate: Gate) {
        call.start(on: nil, { () async throws(APIError) -> Response in
            await gate.wait()
            if gate.wasCancelled { throw APIError(.cancelled, "cancelled") }
            return Response(request: .get("x"), status: .ok)
        }, finished: {})
    }

    private func waitUntil(_ call: SharedCall, waiting: Int) async {
        await call.waitUntil(waiting: waiting)
    }

    @Test("every waiter gets the one result; a waiter that leaves does not stop the others")
    func fanOut() async throws {
        let call = SharedCall(identifier: "a", group: nil, apiName: nil)
        let gate = Gate()
        let first = Task { try await call.wait() }
        let leaving = Task { try await call.wait() }
        let third = Task { try await call.wait() }
        await waitUntil(call, waiting: 3)
        start(call, gate: gate)
        leaving.cancel()
        await #expect(throws: CancellationError.self) { try await leaving.value }
        gate.open()
        #expect(try await first.value.status == .ok)
        #expect(try await third.value.status == .ok)
        #expect(!gate.wasCancelled)
        // A late waiter gets the stored result at once.
        #expect(try await call.wait().status == .ok)
    }

    @Test("when the last waiter leaves, the work is cancelled")
    func lastOneOut() async throws {
        let call = SharedCall(identifier: nil, group: nil, apiName: nil)
        let gate = Gate()
        let only = Task { try await call.wait() }
        await waitUntil(call, waiting: 1)
        start(call, gate: gate)
        only.cancel()
        await #expect(throws: CancellationError.self) { try await only.value }
        await gate.waitUntilCancelled()
    }

    @Test("cancel() before the work exists cancels it as soon as it is adopted")
    func cancelledEarly() async throws {
        let call = SharedCall(identifier: nil, group: nil, apiName: nil)
        call.cancel()
        let cancelled = Mutex(false)
        call.adopt { cancelled.withLock { $0 = true } }
        #expect(cancelled.withLock { $0 })
    }
}
