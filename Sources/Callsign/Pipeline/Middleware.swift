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
    private let stages: [any Middleware]
    private let index: Int
    /// What the next stage is told about the call.
    private let context: MiddlewareContext

    init(_ stages: [any Middleware], at index: Int = 0, context: MiddlewareContext) {
        self.stages = stages
        self.index = index
        self.context = context
    }

    /// Sends `request` through the rest of the chain and returns its response.
    public func callAsFunction(_ request: Request) async throws -> Response {
        try await callAsFunction(request, context: context)
    }

    /// Sends `request` on with facts a built-in stage changed (a deadline, a body consumer).
    func callAsFunction(_ request: Request, context: MiddlewareContext) async throws -> Response {
        guard index < stages.count else {
            // The transport stage ends every chain and never calls on: only a broken chain gets here.
            throw APIError(.invalidRequest, localized: "the middleware chain ended without a transport", request: request)
        }
        return try await stages[index].intercept(request, context: context, next: MiddlewareNext(stages, at: index + 1, context: context))
    }
}

/// What a middleware knows about the call it is part of: the client's configuration and the
/// call's own facts.
public struct MiddlewareContext: Sendable {
    /// The call's facts and the client's configuration in one box: passing the context down the
    /// chain copies one pointer.
    private var facts: CopyOnWrite<CallFacts>

    init(call: CallFacts) {
        self.facts = CopyOnWrite(call)
    }

    /// The client's configuration, shared by every call.
    var shared: SharedConfiguration { facts.value.shared }

    /// What the built-in stages know about this call, passed down the chain.
    var call: CallFacts {
        _read { yield facts.value }
        _modify { yield &facts.value }
    }

    /// The client's configuration.
    public var configuration: APIClient.Configuration {
        _read { yield shared.value }
    }
    /// The API name, when the call came from a definition.
    public var apiName: String? { call.apiName }
    /// The call's logger: the request's own, else the client's; `nil` when neither is set.
    public var logger: Logger? { call.logger ?? shared.value.observability.logger }
}

/// A client's configuration in one shared box: a context holds a pointer, not a copy.
final class SharedConfiguration: Sendable {
    let value: APIClient.Configuration
    init(_ value: APIClient.Configuration) { self.value = value }

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

/// A built-in stage's place in the chain, for inserting your own middlewares before or after it.
///
/// Every call runs these stages, outermost first; a stage that has nothing to do for a call
/// passes it on untouched:
/// 1. ``observability`` — the call's span, metrics and its `debug` log line;
/// 2. `beforeEach`, then ``APIClient/Configuration/middlewares``, then per-definition and
///    per-call middlewares;
/// 3. ``commonParameters`` — common parameters and headers by tag (xAPI);
/// 4. ``clientInfo`` — `X-Client-*` headers (APE);
/// 5. ``offline`` — queues ``StorePolicy/offline`` requests that cannot reach the server;
/// 6. ``deadline`` — one time limit over everything below;
/// 7. ``retry`` — back-off, `Retry-After`, idempotency rules;
/// 8. ``redirects`` — Callsign's redirect policy, the same on every transport;
/// 9. ``authentication`` — credentials, token refresh on 401;
/// 10. ``cache`` — the RFC 9111 HTTP cache, when ``APIClient/Configuration/cache`` is set;
/// 11. ``recording`` — each attempt's span, log lines and HAR entry;
/// 12. ``timeout`` — the per-attempt time limit;
/// 13. ``body`` — how the body is read: collected in memory (with its cap), streamed to the
///     caller, or written to a file (with resume);
/// 14. ``decompression`` — `gzip` and `deflate` bodies decoded, within bounds;
/// 15. ``encoding`` — the request turned into its wire form (URL, header fields, body bytes);
/// 16. ``preProcess`` — ``APIClient/Configuration/preProcess`` on the wire head;
/// 17. ``mocks`` — answers from ``APIClient/Configuration/mocks`` instead of the network;
/// 18. ``transport`` — the transport sends the request.
///
/// Below ``body`` a response's body is still arriving: its ``Response/Fields/body`` is empty. Below
/// ``encoding`` the request is already in wire form, and a middleware's changes to it are not
/// sent. A replayed offline request starts below ``offline``: what ran above it ran when it
/// was queued.
///
/// ```swift
/// configuration.insert(SigningMiddleware(), after: .authentication)
/// ```
public struct MiddlewareStage: Hashable, Sendable, CustomStringConvertible {
    private let name: String
    private init(_ name: String) { self.name = name }

    /// The call's span, metrics and final log line: outermost, so it sees everything.
    public static let observability = MiddlewareStage("observability")
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
    /// The cookie jar: `Cookie` out, `Set-Cookie` in, on every redirect hop.
    public static let cookies = MiddlewareStage("cookies")
    /// The HTTP cache.
    public static let cache = MiddlewareStage("cache")
    /// Each attempt's span, log lines and HAR entry.
    public static let recording = MiddlewareStage("recording")
    /// The per-attempt time limit.
    public static let timeout = MiddlewareStage("timeout")
    /// How the response body is read: in memory, as a stream, or into a file.
    public static let body = MiddlewareStage("body")
    /// Content decoding of compressed bodies.
    public static let decompression = MiddlewareStage("decompression")
    /// The request's wire form.
    public static let encoding = MiddlewareStage("encoding")
    /// ``APIClient/Configuration/preProcess``.
    public static let preProcess = MiddlewareStage("preProcess")
    /// Mocks and HAR replay.
    public static let mocks = MiddlewareStage("mocks")
    /// The transport at the end of the chain; only `before:` makes sense here.
    public static let transport = MiddlewareStage("transport")

    /// The built-in stages in chain order.
    public static let order: [MiddlewareStage] = [
        .observability, .commonParameters, .clientInfo, .offline, .deadline, .retry, .redirects, .authentication, .cookies,
        .cache, .recording, .timeout, .body, .decompression, .encoding, .preProcess, .mocks, .transport,
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
