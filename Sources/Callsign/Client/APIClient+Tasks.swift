public import Foundation
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
        let (stream, continuation) = AsyncStream<TransferProgress>.makeStream(bufferingPolicy: .bufferingNewest(1))
        var call = call
        let sink = ProgressSink(continuation: continuation)
        call.origin.progress = sink
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
        return CallTask(identifier: call.request.identifier, progress: stream, task: task)
    }

    /// Starts the call with this name and returns a handle (see ``start(_:)``).
    ///
    /// - Throws: ``APIError`` (``APIError/Code/unknownAPI``) when the name is not defined.
    public func start(_ name: String, parameters: Parameters = [:], headers: Headers = [:]) throws(APIError) -> CallTask {
        start(try definitions.definition(named: name).request(parameters: parameters, headers: headers))
    }

    // MARK: - Callbacks (RFAPI's context)

    /// Calls an API by name with callbacks, as RFAPI's `request(name:)` did.
    ///
    /// ```swift
    /// client.request("UserLogin") { c in
    ///     c.parameters = ["name": .string(name), "password": .string(password)]
    ///     c.identifier = "login"
    ///     c.group = "account"
    ///     c.loadMessage = "Signing in…"
    ///     c.success { (session: LoginResponse) in … }
    ///     c.failure { error in … }       // never for cancellation
    ///     c.finished { outcome in … }    // always, exactly once, last
    /// }
    /// ```
    ///
    /// Order: `success` or `failure`, then `completion`, then `finished`. Callbacks run on
    /// ``Configuration/Callbacks/delivery`` (the main actor by default). The client's
    /// ``Configuration/Callbacks/errorHandler`` sees every failure first and can consume it; a
    /// call that sets no `failure` has its errors reported there only (RFAPI's default
    /// reporting).
    @discardableResult
    public func request(_ name: String, configure: (inout CallContext) -> Void) -> CallTask {
        var context = CallContext()
        configure(&context)
        do throws(APIError) {
            var request = try definitions.definition(named: name).request(parameters: context.parameters, headers: context.headers)
            context.applyOptions(to: &request)
            return startWithCallbacks(Call(request), context: context)
        } catch {
            let failed = CallTask.failed(error, identifier: context.identifier)
            deliver(context: context, result: .failure(error))
            return failed
        }
    }

    /// Sends a request with callbacks (see ``request(_:configure:)-(String,_)``); the context's
    /// parameters and headers are added to the request's, winning per name.
    ///
    /// ```swift
    /// client.request(.get("boards/7")) { c in
    ///     c.success { (board: Board) in show(board) }
    /// }
    /// ```
    @discardableResult
    public func request(_ request: Request, configure: (inout CallContext) -> Void) -> CallTask {
        var context = CallContext()
        configure(&context)
        var request = request
        context.apply(to: &request)
        return startWithCallbacks(Call(request), context: context)
    }

    /// Sends an endpoint value with callbacks (see ``request(_:configure:)-(String,_)``).
    ///
    /// ```swift
    /// client.request(Boards.show(id: 7)) { c in
    ///     c.success { (board: Board) in show(board) }
    ///     c.failure { error in alert(error) }
    /// }
    /// ```
    @discardableResult
    public func request<E: Endpoint>(_ endpoint: E, configure: (inout CallContext) -> Void) -> CallTask {
        var context = CallContext()
        configure(&context)
        var call = Call(endpoint)
        context.apply(to: &call.request)
        return startWithCallbacks(call, context: context)
    }

    private func startWithCallbacks(_ call: Call, context: CallContext) -> CallTask {
        let handle = start(call)
        Task { [self] in deliver(context: context, result: await handle.result) }
        return handle
    }

    private func deliver(context: CallContext, result: Result<Response, APIError>) {
        let delivery = configuration.callbacks.delivery
        let errorHandler = configuration.callbacks.errorHandler
        Task {
            var outcome = result.flatMap { response -> Result<Response, APIError> in
                do throws(APIError) {
                    return .success(try response.validate())
                } catch {
                    return .failure(error)
                }
            }
            var successThunk: (@Sendable () -> Void)?
            if case .success(let response) = outcome, let decode = context.successHandler {
                do throws(APIError) {
                    successThunk = try decode(response)
                } catch {
                    outcome = .failure(error)
                }
            }
            var reportFailure = false
            if case .failure(let error) = outcome, !error.isCancellation {
                let failure = CallbackFailure(error: error, callHandlesFailure: context.failureHandler != nil)
                let consumed = await errorHandler?(failure) ?? false
                reportFailure = !consumed
            }
            let finalOutcome = outcome
            let showFailure = reportFailure
            let onSuccess = successThunk
            await delivery.run {
                switch finalOutcome {
                case .success:
                    onSuccess?()
                case .failure(let error):
                    if showFailure { context.failureHandler?(error) }
                }
                context.completionHandler?(finalOutcome)
                context.finishedHandler?(CallOutcome(finalOutcome))
            }
        }
    }

    // MARK: - Activity

    func activityStarted(_ request: Request) -> ActivityCall? {
        let (id, count) = activity.begin()
        configuration.observability.activityObserver?.activeCallCountDidChange(count)
        guard let message = request.loadMessage else { return nil }
        let call = ActivityCall(id: id, message: message, apiName: request.apiName)
        configuration.observability.activityObserver?.callDidStart(call)
        return call
    }

    func activityEnded(_ call: ActivityCall?) {
        if let call { configuration.observability.activityObserver?.callDidEnd(call) }
        configuration.observability.activityObserver?.activeCallCountDidChange(activity.end())
    }
}

/// Counts active calls and numbers them.
final class ActivityCounter: Sendable {
    private let state = Mutex((next: UInt64(0), active: 0))

    func begin() -> (id: UInt64, active: Int) {
        state.withLock { state in
            state.next += 1
            state.active += 1
            return (state.next, state.active)
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
    /// Upload and download progress (the latest update is kept for a slow reader); finishes when
    /// the call ends.
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

/// Where callback closures run.
public struct CallbackDelivery: Sendable {
    private let body: @Sendable (@escaping @Sendable () -> Void) async -> Void

    /// On the main actor (the default): UI code may run in the callbacks
    /// (`MainActor.assumeIsolated { … }` states it to the compiler).
    public static let mainActor = CallbackDelivery { work in await MainActor.run { work() } }

    /// On a dispatch queue (use a serial one to keep callbacks in order).
    public static func queue(_ queue: DispatchQueue) -> CallbackDelivery {
        CallbackDelivery { work in
            await withCheckedContinuation { continuation in
                queue.async {
                    work()
                    continuation.resume()
                }
            }
        }
    }

    /// Wherever the call finished, with no hop (for servers and tests).
    public static let immediate = CallbackDelivery { work in work() }

    func run(_ work: @escaping @Sendable () -> Void) async { await body(work) }
}

/// A callback call's failure as ``APIClient/Configuration/Callbacks/errorHandler`` sees it.
///
/// ```swift
/// configuration.callbacks.errorHandler = { failure in
///     if failure.error.statusCode == 401 { await session.signOut(); return true }   // consumed
///     if !failure.callHandlesFailure { await banner.show(failure.error) }           // default reporting
///     return false
/// }
/// ```
public struct CallbackFailure: Sendable {
    /// The error.
    public let error: APIError
    /// Whether the call set its own `failure` handler, which runs next unless the error handler
    /// consumes the error. `false` means nobody else reports it: RFAPI's default reporting.
    public let callHandlesFailure: Bool
}

/// How a callback call ended, as `finished` receives it.
public enum CallOutcome: Sendable {
    /// The call succeeded (and its body decoded, when `success` asked for a type).
    case success(Response)
    /// The call failed.
    case failure(APIError)
    /// The call was cancelled.
    case cancelled

    init(_ result: Result<Response, APIError>) {
        switch result {
        case .success(let response): self = .success(response)
        case .failure(let error): self = error.isCancellation ? .cancelled : .failure(error)
        }
    }
}

/// The settings and callbacks of one callback call (RFAPI's request context).
public struct CallContext: Sendable {
    /// Parameters for the call.
    public var parameters: Parameters = [:]
    /// Headers for the call.
    public var headers: Headers = [:]
    /// A multipart form to send as the body (RFAPI's `formData`), instead of the parameters.
    ///
    /// ```swift
    /// var form = MultipartFormData()
    /// form.append(fileAt: photoURL, name: "photo")
    /// c.formData = form
    /// ```
    public var formData: MultipartFormData?
    /// An identifier, for ``APIClient/cancel(identifier:)``.
    public var identifier: String?
    /// A group, for ``APIClient/cancel(group:)``.
    public var group: String?
    /// A message for activity observers while the call runs.
    public var loadMessage: String?
    /// The time limit for one attempt.
    public var timeout: Duration?
    /// One time limit for the whole call.
    public var deadline: Duration?

    var successHandler: (@Sendable (Response) throws(APIError) -> @Sendable () -> Void)?
    var failureHandler: (@Sendable (APIError) -> Void)?
    var completionHandler: (@Sendable (Result<Response, APIError>) -> Void)?
    var finishedHandler: (@Sendable (CallOutcome) -> Void)?

    /// Runs with the decoded value when the call succeeds. A body that does not decode as `T`
    /// is a failure instead.
    public mutating func success<T: Decodable & Sendable>(_ handler: @escaping @Sendable (T) -> Void) {
        successHandler = { response throws(APIError) in
            let value = try response.decode(T.self)
            return { handler(value) }
        }
    }

    /// Runs with the answer decoded as the type registered for the definition's
    /// `Response Class` (see ``ResponseClasses``), when the call succeeds; an unregistered class
    /// or a body that does not decode is a failure instead.
    ///
    /// ```swift
    /// c.decoded { value in if let profile = value as? Profile { show(profile) } }
    /// ```
    public mutating func decoded(_ handler: @escaping @Sendable (any Sendable) -> Void) {
        successHandler = { response throws(APIError) in
            let value = try response.decodeResponseClass()
            return { handler(value) }
        }
    }

    /// Runs with the validated response when the call succeeds.
    public mutating func success(_ handler: @escaping @Sendable (Response) -> Void) {
        successHandler = { response in { handler(response) } }
    }

    /// Runs when the call fails — never for cancellation, and not when the client's error
    /// handler consumed the error. Without it, the error handler is the only report.
    public mutating func failure(_ handler: @escaping @Sendable (APIError) -> Void) { failureHandler = handler }

    /// Runs with the outcome, after `success` or `failure`, also for cancellation.
    public mutating func completion(_ handler: @escaping @Sendable (Result<Response, APIError>) -> Void) {
        completionHandler = handler
    }

    /// Runs last, exactly once, however the call ended.
    public mutating func finished(_ handler: @escaping @Sendable () -> Void) { finishedHandler = { _ in handler() } }

    /// Runs last, exactly once, with how the call ended: success, failure or cancellation.
    ///
    /// ```swift
    /// c.finished { outcome in
    ///     if case .cancelled = outcome { return }
    ///     spinner.stop()
    /// }
    /// ```
    public mutating func finished(_ handler: @escaping @Sendable (CallOutcome) -> Void) { finishedHandler = handler }

    /// Adds the context's parameters and headers to a request (the context's win), then its options.
    func apply(to request: inout Request) {
        request.parameters.merge(parameters) { _, context in context }
        request.headers = request.headers.merging(headers)
        applyOptions(to: &request)
    }

    /// The identifier, group, message, time limits and form of the context.
    func applyOptions(to request: inout Request) {
        if let identifier { request.identifier = identifier }
        if let group { request.group = group }
        if let loadMessage { request.loadMessage = loadMessage }
        if let timeout { request.timeout = timeout }
        if let deadline { request.deadline = deadline }
        if let formData { request.body = .multipart(formData) }
    }
}
