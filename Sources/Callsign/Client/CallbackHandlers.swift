// The callbacks of a callback call, each with the isolation it was written for: `@MainActor`
// (what `c.success { … }` takes, for UI code) or nonisolated (`c.nonisolated.success { … }`, run
// where the client's delivery says).

/// One callback, with where it may run.
enum CallbackHandler<Argument: Sendable>: Sendable {
    /// Written for the main actor: runs there whatever the delivery.
    case mainActor(@MainActor @Sendable (Argument) -> Void)
    /// Nonisolated: runs where ``CallbackDelivery`` says.
    case anywhere(@Sendable (Argument) -> Void)

    /// The callback bound to its argument, ready to run.
    func step(_ argument: Argument) -> CallbackStep {
        switch self {
        case .mainActor(let handler): .mainActor { handler(argument) }
        case .anywhere(let handler): .anywhere { handler(argument) }
        }
    }
}

/// A callback bound to its argument.
enum CallbackStep: Sendable {
    case mainActor(@MainActor @Sendable () -> Void)
    case anywhere(@Sendable () -> Void)

    var isMainActor: Bool {
        if case .mainActor = self { true } else { false }
    }

    /// Runs it on the main actor, where either kind may run.
    @MainActor func runOnMainActor() {
        switch self {
        case .mainActor(let work): work()
        case .anywhere(let work): work()
        }
    }

    /// Runs a nonisolated one here; a `@MainActor` one never comes here (``CallbackDelivery``
    /// groups them apart).
    func runAnywhere() {
        if case .anywhere(let work) = self { work() }
    }
}

/// The callbacks a ``CallContext`` holds, in the order they run: `success` or `failure`, then
/// `completion`, then `finished`.
struct CallbackHandlers: Sendable {
    /// Decodes what `success` asked for and binds it; a body that does not decode fails the call.
    var success: (@Sendable (Response) throws(APIError) -> CallbackStep)?
    var failure: CallbackHandler<APIError>?
    var completion: CallbackHandler<Result<Response, APIError>>?
    var finished: CallbackHandler<CallOutcome>?

    mutating func success(_ handler: CallbackHandler<Response>) {
        success = { response in handler.step(response) }
    }

    mutating func success<T: Decodable & Sendable>(decoding type: T.Type, _ handler: CallbackHandler<T>) {
        success = { response throws(APIError) in handler.step(try response.decode(T.self)) }
    }

    mutating func success<T: Decodable & Sendable>(decodingWithResponse type: T.Type, _ handler: CallbackHandler<DecodedResponse<T>>) {
        success = { response throws(APIError) in handler.step(try response.decoded(T.self)) }
    }

    mutating func decodedResponseClass(_ handler: CallbackHandler<any Sendable>) {
        success = { response throws(APIError) in handler.step(try response.decodeResponseClass()) }
    }
}

/// The callbacks of a call as nonisolated closures (``CallContext/nonisolated``), run where
/// ``APIClient/Configuration/Callbacks/delivery`` says: wherever the call finished
/// (``CallbackDelivery/immediate``), on a queue, or on the main actor (the default). They replace
/// the `@MainActor` callback of the same kind, and the other way round.
///
/// ```swift
/// client.request("Ping") { c in
///     c.nonisolated.success { (pong: Pong) in log.info("pong \(pong.id)") }
///     c.nonisolated.failure { error in log.error("\(error)") }
/// }
/// ```
public struct NonisolatedCallbacks: Sendable {
    var handlers: CallbackHandlers

    /// Runs with the decoded value when the call succeeds; a body that does not decode as `T` is
    /// a failure instead.
    public mutating func success<T: Decodable & Sendable>(_ handler: @escaping @Sendable (T) -> Void) {
        handlers.success(decoding: T.self, .anywhere(handler))
    }

    /// Runs with the answer decoded as the definition's registered `Response Class` (see
    /// ``ResponseClasses``) when the call succeeds.
    public mutating func decoded(_ handler: @escaping @Sendable (any Sendable) -> Void) {
        handlers.decodedResponseClass(.anywhere(handler))
    }

    /// Runs with the validated response when the call succeeds.
    public mutating func success(_ handler: @escaping @Sendable (Response) -> Void) {
        handlers.success(.anywhere(handler))
    }

    /// Runs when the call fails — never for cancellation, and not when the client's error
    /// handler consumed the error.
    public mutating func failure(_ handler: @escaping @Sendable (APIError) -> Void) {
        handlers.failure = .anywhere(handler)
    }

    /// Runs with the outcome, after `success` or `failure`, also for cancellation.
    public mutating func completion(_ handler: @escaping @Sendable (Result<Response, APIError>) -> Void) {
        handlers.completion = .anywhere(handler)
    }

    /// Runs last, exactly once, however the call ended.
    public mutating func finished(_ handler: @escaping @Sendable () -> Void) {
        handlers.finished = .anywhere { _ in handler() }
    }

    /// Runs last, exactly once, with how the call ended: success, failure or cancellation.
    public mutating func finished(_ handler: @escaping @Sendable (CallOutcome) -> Void) {
        handlers.finished = .anywhere(handler)
    }
}
