import Synchronization

/// Starts an unstructured task, on `executor` when there is one. Without one it is a plain
/// `Task {}`: a task created with an explicit `nil` preference is marked as having one, and then
/// looks it up under a lock at every executor switch.
func makeTask<Success: Sendable>(
    preferring executor: (any TaskExecutor)?, _ operation: @escaping @Sendable () async -> Success
) -> Task<Success, Never> {
    if let executor { return Task(executorPreference: executor, operation: operation) }
    return Task(operation: operation)
}

/// One running call that one or more callers await: the caller that started it, callers that
/// joined by identifier, and callers of an identical de-duplicated request.
///
/// Each waiter can stop waiting (its task was cancelled) without disturbing the others; when the
/// last waiter leaves, the work is cancelled.
final class SharedCall: Sendable {
    private struct State {
        var result: Result<Response, APIError>?
        var waiters: [UInt64: CheckedContinuation<Response, any Error>] = [:]
        var activeWaiters = 0
        var nextID: UInt64 = 0
        var watchers = CountWatchers()
    }

    private let state = Mutex(State())
    /// How to cancel the work, whether it was cancelled before there was any, and why, when a
    /// reason is worth telling the caller (a newer call with the same identifier replaced it).
    private let work = Mutex<(cancel: (@Sendable () -> Void)?, cancelled: Bool, reason: LocalizedMessage?)>((nil, false, nil))
    let identifier: String?
    let group: String?
    let apiName: String?

    init(identifier: String?, group: String?, apiName: String?) {
        self.identifier = identifier
        self.group = group
        self.apiName = apiName
    }

    /// Starts the work, on `executor` when there is one; `finished` runs once after every
    /// waiter has been told.
    func start(
        on executor: (any TaskExecutor)?, _ body: @escaping @Sendable () async throws(APIError) -> Response,
        finished: @escaping @Sendable () -> Void
    ) {
        let task = makeTask(preferring: executor) { [self] in
            let result: Result<Response, APIError>
            do throws(APIError) {
                result = .success(try await body())
            } catch {
                result = .failure(explained(error))
            }
            complete(with: result)
            finished()
        }
        adopt { task.cancel() }
    }

    /// Makes `cancelWork` what cancels this call: for a call that runs in a task of its own
    /// making, which nobody joins (so it needs no waiters), but which `cancel(identifier:)`,
    /// `cancel(group:)` and `cancelAll()` must reach.
    func adopt(cancelling cancelWork: @escaping @Sendable () -> Void) {
        let cancelledEarly = work.withLock { work -> Bool in
            work.cancel = cancelWork
            return work.cancelled
        }
        if cancelledEarly { cancelWork() }
    }

    /// Cancels the work for everyone (also if it has not started yet); `reason`, when given,
    /// becomes the message of the ``APIError/Code/cancelled`` error its callers get.
    func cancel(because reason: LocalizedMessage? = nil) {
        let cancelWork = work.withLock { work -> (@Sendable () -> Void)? in
            work.cancelled = true
            if work.reason == nil { work.reason = reason }
            return work.cancel
        }
        cancelWork?()
    }

    /// `error` with the reason this call was cancelled, when it was cancelled for one.
    func explained(_ error: APIError) -> APIError {
        guard error.code == .cancelled, let reason = work.withLock({ $0.reason }) else { return error }
        var explained = error
        explained.text = reason
        return explained
    }

    /// Waits for the result; throws `CancellationError` if the waiting task is cancelled first.
    func wait() async throws -> Response {
        let id = state.withLock { state -> UInt64 in
            defer {
                state.nextID += 1
                state.activeWaiters += 1
            }
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Response, any Error>) in
                enum Outcome { case ready(Result<Response, APIError>), cancelled(lastOne: Bool), waiting([CheckedContinuation<Void, Never>]) }
                let outcome = state.withLock { state -> Outcome in
                    if let result = state.result { return .ready(result) }
                    // Cancelled before the continuation existed: the cancellation handler found
                    // nothing to resume, so leave here.
                    if Task.isCancelled {
                        state.activeWaiters -= 1
                        return .cancelled(lastOne: state.activeWaiters == 0)
                    }
                    state.waiters[id] = continuation
                    return .waiting(state.watchers.take(reaching: state.waiters.count))
                }
                switch outcome {
                case .ready(let result):
                    continuation.resume(with: result.mapError { $0 as any Error })
                case .cancelled(let lastOne):
                    continuation.resume(throwing: CancellationError())
                    if lastOne { cancel() }
                case .waiting(let watchers):
                    for watcher in watchers { watcher.resume() }
                }
            }
        } onCancel: {
            let (continuation, lastOne) = state.withLock { state -> (CheckedContinuation<Response, any Error>?, Bool) in
                guard let continuation = state.waiters.removeValue(forKey: id) else { return (nil, false) }
                state.activeWaiters -= 1
                return (continuation, state.activeWaiters == 0)
            }
            continuation?.resume(throwing: CancellationError())
            if lastOne { cancel() }
        }
    }

    /// Callers waiting now (for tests of the state machine).
    var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Returns once at least `count` callers wait, each one really suspended, without polling.
    func waitUntil(waiting count: Int) async {
        await CountWatchers.wait { continuation in
            state.withLock { $0.watchers.register(count, current: $0.waiters.count, continuation) }
        }
    }

    private func complete(with result: Result<Response, APIError>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Response, any Error>] in
            state.result = result
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(with: result.mapError { $0 as any Error }) }
    }
}

/// The running calls of a client, by identifier and group, and the de-duplication table.
final class CallRegistry: Sendable {
    private struct State {
        var calls: [ObjectIdentifier: SharedCall] = [:]
        var byIdentifier: [String: SharedCall] = [:]
        var byKey: [String: SharedCall] = [:]
    }

    private let state = Mutex(State())

    /// Registers a new call, or returns the call to join: one with the same de-duplication key,
    /// or (with `join`) one with the same identifier. With `cancelPrevious`, a running call with
    /// the same identifier is cancelled.
    func admit(_ call: SharedCall, key: String?, conflict: IdentifierConflict) -> (call: SharedCall, isNew: Bool) {
        let (chosen, isNew, superseded) = state.withLock { state -> (SharedCall, Bool, SharedCall?) in
            if let key, let existing = state.byKey[key] { return (existing, false, nil) }
            var superseded: SharedCall?
            if let identifier = call.identifier, let existing = state.byIdentifier[identifier] {
                if conflict == .join { return (existing, false, nil) }
                superseded = existing
            }
            state.calls[ObjectIdentifier(call)] = call
            if let identifier = call.identifier { state.byIdentifier[identifier] = call }
            if let key { state.byKey[key] = call }
            return (call, true, superseded)
        }
        if let superseded, let identifier = superseded.identifier {
            superseded.cancel(because: "a newer call with the identifier \"\(identifier)\" replaced this one (Configuration.tasks.identifierConflict is cancelPrevious)" as LocalizedMessage)
        }
        return (chosen, isNew)
    }

    func remove(_ call: SharedCall, key: String?) {
        state.withLock { state in
            state.calls.removeValue(forKey: ObjectIdentifier(call))
            if let identifier = call.identifier, state.byIdentifier[identifier] === call {
                state.byIdentifier.removeValue(forKey: identifier)
            }
            if let key, state.byKey[key] === call { state.byKey.removeValue(forKey: key) }
        }
    }

    func calls(where predicate: (SharedCall) -> Bool) -> [SharedCall] {
        state.withLock { Array($0.calls.values) }.filter(predicate)
    }
}

/// What happens when a call starts with the identifier of a call still running.
public enum IdentifierConflict: Sendable, Hashable {
    /// The running call is cancelled; the new one runs (latest wins, as for search-as-you-type).
    /// The cancelled caller gets ``APIError/Code/cancelled`` saying which newer call replaced it.
    case cancelPrevious
    /// The new caller waits for the running call and gets its result.
    case join
}

/// A running call, as ``APIClient/runningCalls`` lists it.
public struct RunningCall: Sendable, Hashable {
    /// The call's identifier, if any.
    public var identifier: String?
    /// The call's group, if any.
    public var group: String?
    /// The API name, when the call came from a definition.
    public var apiName: String?
}
