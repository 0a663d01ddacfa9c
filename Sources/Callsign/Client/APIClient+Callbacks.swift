public import Foundation

// Callback calls, as RFAPI had them: a call by name, request or endpoint value, with success,
// failure, completion and finished closures delivered where the configuration says.

extension APIClient {
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
}

/// Where callback closures run.
public struct CallbackDelivery: Sendable {
    private let body: @Sendable (@escaping @Sendable () -> Void) async -> Void

    /// On the main actor (the default): UI code may run in the callbacks
    /// (`MainActor.assumeIsolated { … }` states it to the compiler). The main actor runs on the
    /// main dispatch queue; in an app that queue is the main thread's, while a process that calls
    /// `dispatch_main()` (a test runner or server on Linux) hands it to a worker thread — still one
    /// callback at a time, in order.
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
///
/// Besides its own settings it holds the call's ``CallOptions`` — `c.deadline`, `c.retry`,
/// `c.cachePolicy`, every option a request has — which win over the definition's.
///
/// ```swift
/// client.request("Timeline") { c in
///     c.parameters = ["page": 2]
///     c.deadline = .seconds(5)
///     c.success { (timeline: Timeline) in show(timeline) }
/// }
/// ```
@dynamicMemberLookup
public struct CallContext: HoldsCallOptions, Sendable {
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
    /// The call's options (see ``CallOptions``), which win over the definition's; set each
    /// one on the context itself: `c.timeout = .seconds(10)`.
    public var options = CallOptions()

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

    /// The identifier, group, message, options and form of the context.
    func applyOptions(to request: inout Request) {
        if let identifier { request.identifier = identifier }
        if let group { request.group = group }
        if let loadMessage { request.loadMessage = loadMessage }
        request.options = options.merged(over: request.options)
        if let formData { request.body = .multipart(formData) }
    }
}
