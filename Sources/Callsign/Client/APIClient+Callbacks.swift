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
            var successStep: CallbackStep?
            if case .success(let response) = outcome, let decode = context.handlers.success {
                do throws(APIError) {
                    successStep = try decode(response)
                } catch {
                    outcome = .failure(error)
                }
            }
            var reportFailure = false
            if case .failure(let error) = outcome, !error.isCancellation {
                let failure = CallbackFailure(error: error, callHandlesFailure: context.handlers.failure != nil)
                let consumed = await errorHandler?(failure) ?? false
                reportFailure = !consumed
            }
            var steps: [CallbackStep] = []
            switch outcome {
            case .success:
                if let successStep { steps.append(successStep) }
            case .failure(let error):
                if reportFailure, let failure = context.handlers.failure { steps.append(failure.step(error)) }
            }
            if let completion = context.handlers.completion { steps.append(completion.step(outcome)) }
            if let finished = context.handlers.finished { steps.append(finished.step(CallOutcome(outcome))) }
            await delivery.run(steps)
        }
    }
}

/// Where callback closures run.
public struct CallbackDelivery: Sendable {
    private let body: @Sendable (@escaping @Sendable () -> Void) async -> Void
    private let isMainActor: Bool

    /// On the main actor (the default). The handlers a call sets with `c.success { … }` and the
    /// others are `@MainActor` closures whatever the delivery, so UI code in them compiles as
    /// written; this delivery also runs the ``CallContext/nonisolated`` ones there, all of a call's
    /// callbacks in one turn of the main actor. The main actor runs on the main dispatch queue: in
    /// an app that queue is the main thread's, while a process that calls `dispatch_main()` (a test
    /// runner or server on Linux) hands it to a worker thread — still one callback at a time, in
    /// order.
    public static let mainActor = CallbackDelivery(isMainActor: true) { work in await MainActor.run { work() } }

    /// The ``CallContext/nonisolated`` handlers on a dispatch queue (use a serial one to keep
    /// them in order); `@MainActor` handlers still run on the main actor.
    public static func queue(_ queue: DispatchQueue) -> CallbackDelivery {
        CallbackDelivery(isMainActor: false) { work in
            await withCheckedContinuation { continuation in
                queue.async {
                    work()
                    continuation.resume()
                }
            }
        }
    }

    /// The ``CallContext/nonisolated`` handlers wherever the call finished, with no hop (for
    /// servers and tests); `@MainActor` handlers still run on the main actor.
    public static let immediate = CallbackDelivery(isMainActor: false) { work in work() }

    private init(isMainActor: Bool, _ body: @escaping @Sendable (@escaping @Sendable () -> Void) async -> Void) {
        self.isMainActor = isMainActor
        self.body = body
    }

    /// Runs a call's callbacks in order: on the main actor in one turn when this delivery is the
    /// main actor's; otherwise each run of `@MainActor` handlers there and each run of
    /// nonisolated ones here, one after the other.
    func run(_ steps: [CallbackStep]) async {
        if isMainActor {
            await MainActor.run { for step in steps { step.runOnMainActor() } }
            return
        }
        var rest = steps[...]
        while let first = rest.first {
            let sameKind = rest.prefix { $0.isMainActor == first.isMainActor }
            rest = rest.dropFirst(sameKind.count)
            let group = Array(sameKind)
            if first.isMainActor {
                await MainActor.run { for step in group { step.runOnMainActor() } }
            } else {
                await body { for step in group { step.runAnywhere() } }
            }
        }
    }
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

    /// The callbacks, in the form they run.
    var handlers = CallbackHandlers()

    /// Runs with the decoded value when the call succeeds, on the main actor. A body that does
    /// not decode as `T` is a failure instead.
    ///
    /// ```swift
    /// @MainActor final class BoardScreen {
    ///     let title = UILabel()
    ///     func load(_ client: APIClient) {
    ///         client.request(.get("boards/7")) { c in
    ///             c.success { (board: Board) in self.title.text = board.name }   // no assumeIsolated
    ///         }
    ///     }
    /// }
    /// ```
    public mutating func success<T: Decodable & Sendable>(_ handler: @escaping @MainActor @Sendable (T) -> Void) {
        handlers.success(decoding: T.self, .mainActor(handler))
    }

    /// Runs with the answer decoded as the type registered for the definition's
    /// `Response Class` (see ``ResponseClasses``), when the call succeeds, on the main actor; an
    /// unregistered class or a body that does not decode is a failure instead.
    ///
    /// ```swift
    /// c.decoded { value in if let profile = value as? Profile { show(profile) } }
    /// ```
    public mutating func decoded(_ handler: @escaping @MainActor @Sendable (any Sendable) -> Void) {
        handlers.decodedResponseClass(.mainActor(handler))
    }

    /// Runs with the validated response when the call succeeds, on the main actor.
    public mutating func success(_ handler: @escaping @MainActor @Sendable (Response) -> Void) {
        handlers.success(.mainActor(handler))
    }

    /// Runs when the call fails, on the main actor — never for cancellation, and not when the
    /// client's error handler consumed the error. Without it, the error handler is the only report.
    public mutating func failure(_ handler: @escaping @MainActor @Sendable (APIError) -> Void) {
        handlers.failure = .mainActor(handler)
    }

    /// Runs with the outcome, after `success` or `failure`, also for cancellation, on the main actor.
    public mutating func completion(_ handler: @escaping @MainActor @Sendable (Result<Response, APIError>) -> Void) {
        handlers.completion = .mainActor(handler)
    }

    /// Runs last, exactly once, however the call ended, on the main actor.
    public mutating func finished(_ handler: @escaping @MainActor @Sendable () -> Void) {
        handlers.finished = .mainActor { _ in handler() }
    }

    /// Runs last, exactly once, with how the call ended — success, failure or cancellation — on
    /// the main actor.
    ///
    /// ```swift
    /// c.finished { outcome in
    ///     if case .cancelled = outcome { return }
    ///     spinner.stopAnimating()
    /// }
    /// ```
    public mutating func finished(_ handler: @escaping @MainActor @Sendable (CallOutcome) -> Void) {
        handlers.finished = .mainActor(handler)
    }

    /// The same callbacks as nonisolated closures, run where ``APIClient/Configuration/Callbacks/delivery``
    /// says — wherever the call finished (``CallbackDelivery/immediate``) or on a queue — for a
    /// server, a command-line tool or a test that does not want the main actor.
    ///
    /// ```swift
    /// configuration.callbacks.delivery = .immediate
    /// client.request("Ping") { c in
    ///     c.nonisolated.success { (pong: Pong) in log.info("pong \(pong.id)") }
    ///     c.nonisolated.finished { done.signal() }
    /// }
    /// ```
    public var nonisolated: NonisolatedCallbacks {
        get { NonisolatedCallbacks(handlers: handlers) }
        set { handlers = newValue.handlers }
    }

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
