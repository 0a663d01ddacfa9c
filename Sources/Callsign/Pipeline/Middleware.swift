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

/// The rest of the request seam's chain, as a function a ``Middleware`` calls: the one chain
/// (``ChainNext``) on the request seam.
public typealias MiddlewareNext = ChainNext<RequestSeam>

/// The request seam: ``Middleware``s on ``Request`` and ``Response`` values.
public enum RequestSeam: PipelineSeam {
    /// Runs one middleware.
    public static func run(
        _ stage: any Middleware, _ request: Request, context: MiddlewareContext, next: MiddlewareNext
    ) async throws -> Response {
        try await stage.intercept(request, context: context, next: next)
    }

    /// The request itself, which an error names.
    public static func request(of request: Request) -> Request? { request }
}

/// A middleware from a closure: the one closure stage (``AnyStage``) on the request seam.
///
/// ```swift
/// let fetchToken = AnyMiddleware { request, context, next in
///     var request = request
///     request.headers["X-Session"] = try await sessionStore.current()
///     return try await next(request)
/// }
/// ```
public typealias AnyMiddleware = AnyStage<RequestSeam>

extension AnyStage: Middleware where Seam == RequestSeam {
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
