import Foundation
import Synchronization

extension APIClient {
    // MARK: - Task control

    /// Cancels the running (or waiting) calls with this identifier. Their async callers get
    /// ``APIError/Code/cancelled``; callback calls get no `failure`, only `completion` and `finished`.
    ///
    /// ```swift
    /// client.cancel(identifier: "login")
    /// ```
    /// - Returns: how many calls were cancelled.
    @discardableResult
    public func cancel(identifier: String) -> Int {
        let calls = registry.calls { $0.identifier == identifier }
        calls.forEach { $0.cancel() }
        return calls.count
    }

    /// Cancels the running (or waiting) calls of this group.
    @discardableResult
    public func cancel(group: String) -> Int {
        let calls = registry.calls { $0.group == group }
        calls.forEach { $0.cancel() }
        return calls.count
    }

    /// Cancels every running or waiting call of this client that can be cancelled from outside:
    /// calls with an identifier or a group, calls started with ``start(_:)`` or
    /// ``request(_:configure:)-(String,_)``, and de-duplicated calls. A plain `try await client.send(…)`
    /// runs in its caller's task; cancel that task to cancel it.
    @discardableResult
    public func cancelAll() -> Int {
        let calls = registry.calls { _ in true }
        calls.forEach { $0.cancel() }
        return calls.count
    }

    /// The calls running or waiting for their turn that can be cancelled from outside (see ``cancelAll()``).
    public var runningCalls: [RunningCall] {
        registry.calls { _ in true }.map { RunningCall(identifier: $0.identifier, group: $0.group, apiName: $0.apiName) }
    }

    /// Whether a call with this identifier is running or waiting.
    public func isRunning(identifier: String) -> Bool { !registry.calls { $0.identifier == identifier }.isEmpty }

    /// The running or waiting calls of a group.
    public func runningCalls(group: String) -> [RunningCall] { runningCalls.filter { $0.group == group } }

    // MARK: - Handles

    /// Starts a call and returns a handle to follow its progress, cancel it, or await it.
    ///
    /// ```swift
    /// let task = client.start(.get("/files/big.bin"))
    /// Task { for await progress in task.progress { bar.value = progress.fraction ?? 0 } }
    /// let response = try await task.response
    /// ```
    public func start(_ request: Request) -> CallTask {
        start(Call(request))
    }

    /// Starts a call, its progress reported to the handle's stream.
    func start(_ call: Call) -> CallTask {
        let buffer = LatestProgress()
        var call = call
        let sink = ProgressReporter(buffer: buffer)
        call.context.fields.progress = sink
        // Nobody can join most calls: they run in this one task, registered so that
        // `cancel(identifier:)`, `cancel(group:)` and `cancelAll()` reach it. The others are shared.
        let unshared = registerUnshared(call)
        let started = call
        let task = makeTask(preferring: taskExecutor) { [self] () -> Result<Response, APIError> in
            defer { sink.finish() }
            do throws(APIError) {
                guard let unshared else { return .success(try await perform(started)) }
                return .success(try await runUnshared(started, registered: unshared))
            } catch {
                return .failure(error)
            }
        }
        unshared?.adopt { task.cancel() }
        return CallTask(identifier: call.request.identifier, progress: buffer.stream(), task: task)
    }

    /// Starts the call with this name and returns a handle (see ``start(_:)``).
    ///
    /// - Throws: ``APIError`` (``APIError/Code/unknownAPI``) when the name is not defined.
    public func start(_ name: String, parameters: Parameters = [:], headers: Headers = [:]) throws(APIError) -> CallTask {
        start(try definitions.definition(named: name).request(parameters: parameters, headers: headers))
    }
}

/// Counts running calls and numbers them, for the client's ``CallObserver``s.
final class ActivityCounter: Sendable {
    private let state = Mutex((next: UInt64(0), active: 0))

    func begin(_ request: Request) -> (call: ObservedCall, active: Int) {
        state.withLock { state in
            state.next += 1
            state.active += 1
            return (ObservedCall(id: state.next, apiName: request.apiName, loadMessage: request.loadMessage), state.active)
        }
    }

    func end() -> Int {
        state.withLock { state in
            state.active -= 1
            return state.active
        }
    }
}

/// A handle on a running call: its progress, its result, and a way to cancel it.
public final class CallTask: Sendable {
    /// The call's identifier, if any.
    public let identifier: String?
    /// Upload and download progress; finishes when the call ends. A slow reader gets the latest
    /// update of each direction, so an upload's last report is never lost behind the download's.
    public let progress: AsyncStream<TransferProgress>
    private let task: Task<Result<Response, APIError>, Never>

    init(identifier: String?, progress: AsyncStream<TransferProgress>, task: Task<Result<Response, APIError>, Never>) {
        self.identifier = identifier
        self.progress = progress
        self.task = task
    }

    static func failed(_ error: APIError, identifier: String?) -> CallTask {
        let (stream, continuation) = AsyncStream<TransferProgress>.makeStream()
        continuation.finish()
        return CallTask(identifier: identifier, progress: stream, task: Task { .failure(error) })
    }

    /// Cancels the call. Waiting callers get ``APIError/Code/cancelled``.
    public func cancel() { task.cancel() }

    /// The outcome, when the call ends.
    public var result: Result<Response, APIError> {
        get async { await task.value }
    }

    /// The response, when the call ends.
    public var response: Response {
        get async throws(APIError) { try await task.value.get() }
    }
}
