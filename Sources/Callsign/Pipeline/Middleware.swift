import Foundation
public import Logging

/// A step between "request built" and "bytes sent": it may change the request, answer it
/// itself, send it more than once, or reject it.
///
/// Every built-in feature — common parameters, client info, redirects, authentication — is a
/// middleware, and yours run in the same chain:
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
/// Throw an ``APIError`` to reject a request; any other error is reported as
/// ``APIError/Code/invalidRequest`` naming it.
public protocol Middleware: Sendable {
    /// Handles one request: call `next` to pass it on (zero, one or several times).
    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response
}

/// The rest of the chain, as a function a middleware calls.
public struct MiddlewareNext: Sendable {
    /// The chain's stages and a position in them: a call walks the client's array of stages
    /// instead of allocating a closure per stage.
    private let chain: MiddlewareChain
    private let index: Int

    init(_ chain: MiddlewareChain, at index: Int = 0) {
        self.chain = chain
        self.index = index
    }

    /// Sends `request` through the rest of the chain and returns its response.
    public func callAsFunction(_ request: Request) async throws -> Response {
        guard index < chain.stages.count else { return try await chain.client.sendToTransport(request) }
        return try await chain.stages[index].intercept(request, context: chain.context, next: MiddlewareNext(chain, at: index + 1))
    }
}

/// One call's middleware chain: the stages, outermost first, then the client's transport.
struct MiddlewareChain: Sendable {
    let stages: [any Middleware]
    let context: MiddlewareContext
    let client: APIClient
}

/// What a middleware knows about the call it is part of.
public struct MiddlewareContext: Sendable {
    /// The client's configuration.
    public let configuration: APIClient.Configuration
    /// The API name, when the call came from a definition.
    public let apiName: String?
    /// The client's logger, if any.
    public var logger: Logger? { configuration.logger }
    /// Told about every retried attempt.
    var attemptObserver: (@Sendable (AttemptReport) -> Void)? { configuration.attemptObserver }
}

/// A middleware from a closure: Malibu's async `middleware` hook and anything small.
///
/// ```swift
/// let fetchToken = AnyMiddleware { request, context, next in
///     var request = request
///     request.headers["Authorization"] = "Bearer \(try await tokenStore.current())"
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

/// A built-in middleware's place in the chain, for inserting your own before or after it.
///
/// The default order, outermost first:
/// 1. `beforeEach`, then ``APIClient/Configuration/middlewares``, then per-definition and
///    per-call middlewares;
/// 2. ``commonParameters`` — common parameters and headers by tag (xAPI);
/// 3. ``clientInfo`` — `X-Client-*` headers (APE);
/// 4. ``offline`` — queues ``StorePolicy/offline`` requests that cannot reach the server;
/// 5. ``deadline`` — one time limit over everything below;
/// 6. ``retry`` — back-off, `Retry-After`, idempotency rules;
/// 7. ``redirects`` — Callsign's redirect policy, the same on every transport;
/// 8. ``authentication`` — credentials, token refresh on 401;
/// 9. ``cache`` — the RFC 9111 HTTP cache, when ``APIClient/Configuration/cache`` is set;
/// 10. ``transport`` — `preProcess`, then the transport.
///
/// A replayed offline request starts below ``offline``: what ran above it ran when it was queued.
///
/// ```swift
/// configuration.insert(SigningMiddleware(), after: .authentication)
/// ```
public struct MiddlewareStage: Hashable, Sendable, CustomStringConvertible {
    private let name: String
    private init(_ name: String) { self.name = name }

    /// Common parameters and headers by tag.
    public static let commonParameters = MiddlewareStage("commonParameters")
    /// Client-info headers.
    public static let clientInfo = MiddlewareStage("clientInfo")
    /// The offline store.
    public static let offline = MiddlewareStage("offline")
    /// The overall deadline.
    public static let deadline = MiddlewareStage("deadline")
    /// Retries.
    public static let retry = MiddlewareStage("retry")
    /// Redirect following.
    public static let redirects = MiddlewareStage("redirects")
    /// Authentication.
    public static let authentication = MiddlewareStage("authentication")
    /// The HTTP cache.
    public static let cache = MiddlewareStage("cache")
    /// The transport at the end of the chain; only `before:` makes sense here.
    public static let transport = MiddlewareStage("transport")

    /// The built-in stages in chain order.
    public static let order: [MiddlewareStage] = [
        .commonParameters, .clientInfo, .offline, .deadline, .retry, .redirects, .authentication, .cache, .transport,
    ]

    public var description: String { name }
}

extension APIClient.Configuration {
    /// Where an inserted middleware goes relative to a built-in stage.
    enum Placement: Sendable {
        case before, after
    }

    /// Inserts a middleware just before a built-in stage (after earlier insertions there).
    public mutating func insert(_ middleware: some Middleware, before stage: MiddlewareStage) {
        insertions.append(Insertion(stage: stage, placement: .before, middleware: middleware))
    }

    /// Inserts a middleware just after a built-in stage (after earlier insertions there).
    public mutating func insert(_ middleware: some Middleware, after stage: MiddlewareStage) {
        insertions.append(Insertion(stage: stage, placement: .after, middleware: middleware))
    }

    struct Insertion: Sendable {
        var stage: MiddlewareStage
        var placement: Placement
        var middleware: any Middleware
    }
}
