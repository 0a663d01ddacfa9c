/// A step of the request seam, between "request built" and "request encoded": it works on whole
/// ``Request`` and ``Response`` values, and may change the request, answer it itself, send it
/// more than once, or reject it.
///
/// Every built-in feature above the wire — retries, redirects, authentication, the cache — is a
/// middleware written against this protocol and ``MiddlewareContext``, and yours run in the same
/// chain (``APIClient/Configuration/middlewares``, ``APIClient/Configuration/insert(_:before:)-(Middleware,_)``,
/// ``Request/Fields/middlewares``):
///
/// ```swift
/// struct Timing: Middleware {
///     func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
///         let started = ContinuousClock.now
///         defer { context.logger?.info("took \(ContinuousClock.now - started)") }
///         return try await next(request)
///     }
/// }
/// let client = APIClient(configuration: .init { $0.middlewares = [Timing()] })
/// ```
///
/// To see or change the exact bytes sent, write a ``WireMiddleware`` instead. Throw an
/// ``APIError`` to reject a request; any other error is reported as
/// ``APIError/Code/invalidRequest`` naming it.
public protocol Middleware: Sendable {
    /// Handles one request: call `next` to pass it on (zero, one or several times).
    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response
}

/// The rest of the request seam's chain, as a function a ``Middleware`` calls.
public struct MiddlewareNext: Sendable {
    /// The chain's stages and a position in them: a call walks the client's array of stages
    /// instead of allocating a closure per stage.
    private let stages: [any Middleware]
    private let index: Int
    /// What the next stage is told about the call, unless the caller passes a changed copy.
    private let context: MiddlewareContext

    init(_ stages: [any Middleware], at index: Int = 0, context: MiddlewareContext) {
        self.stages = stages
        self.index = index
        self.context = context
    }

    /// Sends `request` through the rest of the chain, with the context this stage was given.
    public func callAsFunction(_ request: Request) async throws -> Response {
        try await callAsFunction(request, context: context)
    }

    /// Sends `request` through the rest of the chain with changed facts: the stages below see
    /// `context`, the stages above keep theirs. A ``MiddlewareContext/deadline`` moved earlier
    /// is enforced from here on: the call ends with ``APIError/Code/timedOut`` once it passes.
    ///
    /// ```swift
    /// var context = context
    /// context.tightenDeadline(within: .seconds(5))   // at most 5 s more; never later than the call's deadline
    /// return try await next(request, context: context)
    /// ```
    public func callAsFunction(_ request: Request, context: MiddlewareContext) async throws -> Response {
        guard index < stages.count else {
            // The encoding stage ends every request chain and never calls on: only a broken chain gets here.
            throw APIError(.invalidRequest, localized: "the middleware chain ended without a transport", request: request)
        }
        let stage = stages[index]
        let next = MiddlewareNext(stages, at: index + 1, context: context)
        guard context.tightensDeadline(of: self.context) else { return try await stage.intercept(request, context: context, next: next) }
        return try await context.enforcingDeadline(request: request) { try await stage.intercept(request, context: context, next: next) }
    }
}

/// A middleware from a closure.
///
/// ```swift
/// let fetchToken = AnyMiddleware { request, context, next in
///     var request = request
///     request.headers["X-Session"] = try await sessionStore.current()
///     return try await next(request)
/// }
/// ```
public struct AnyMiddleware: Middleware {
    private let body: @Sendable (Request, MiddlewareContext, MiddlewareNext) async throws -> Response

    /// Wraps a closure.
    public init(_ body: @escaping @Sendable (Request, MiddlewareContext, MiddlewareNext) async throws -> Response) {
        self.body = body
    }

    public func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        try await body(request, context, next)
    }
}

extension Middleware where Self == AnyMiddleware {
    /// A middleware that changes every request before it goes on (Malibu's `beforeEach`).
    ///
    /// ```swift
    /// configuration.middlewares = [.changingRequest { $0.adding(parameters: ["userId": "12345"]) }]
    /// ```
    public static func changingRequest(_ change: @escaping @Sendable (Request) async throws -> Request) -> AnyMiddleware {
        AnyMiddleware { request, context, next in try await next(try await change(request), context: context) }
    }
}
