/// A built-in stage of the request seam (``Middleware``), for placing your own middlewares
/// before or after it with ``APIClient/Configuration/insert(_:before:)-(Middleware,_)``.
///
/// Every call runs these stages, outermost first (``order``, read from the pipeline's one
/// table); a stage with nothing to do for a client is not in its chain at all:
///
/// | stage | what it does |
/// |---|---|
/// | ``observability`` | the call's span, metrics and `debug` line (outermost: sees everything) |
/// | *your middlewares* | ``APIClient/Configuration/middlewares``, then the call's ``Request/Fields/middlewares`` |
/// | ``commonParameters`` | common parameters and headers by tag (xAPI) |
/// | ``clientInfo`` | `X-Client-*` headers (APE) |
/// | ``offline`` | queues ``StorePolicy/offline`` requests that cannot reach the server; a replay starts below it |
/// | ``deadline`` | one time limit over everything below |
/// | ``retry`` | back-off, `Retry-After`, idempotency rules; counts ``MiddlewareContext/Fields/attempt`` |
/// | ``hedging`` | a second attempt when an idempotent call's answer is slow; the first answer wins (``HedgePolicy``) |
/// | ``redirects`` | Callsign's redirect policy, the same on every transport |
/// | ``authentication`` | the origin check, then the ``AuthenticationScheme``; refresh on 401 |
/// | ``cookies`` | the cookie jar: `Cookie` out, `Set-Cookie` in, on every hop |
/// | ``cache`` | the RFC 9111 HTTP cache |
/// | ``circuitBreaker`` | fails at once while the origin's circuit is open; counts each outcome against it |
/// | ``rateLimit`` | waits at the origin's (or tag's) gate: the server's `Retry-After` and `RateLimit` fields, your ``RateLimit``s |
/// | ``recording`` | each attempt's span, log lines and HAR entry |
/// | ``timeout`` | the per-attempt and idle time limits |
/// | ``body`` | how the body is read: in memory (capped), streamed, or into a file (with resume) |
/// | ``decompression`` | `gzip` and `deflate` bodies decoded, within bounds |
/// | ``encoding`` | the request becomes its wire form and goes down the wire seam (``WireStage``) |
///
/// Below ``body`` a response's body is still arriving: its ``Response/Fields/body`` is empty.
///
/// ```swift
/// configuration.insert(LogAttempts(), after: .retry)
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
    /// Hedged requests: another attempt when no answer head came within the ``HedgePolicy``'s delay.
    public static let hedging = MiddlewareStage("hedging")
    /// Redirect following.
    public static let redirects = MiddlewareStage("redirects")
    /// Authentication: the origin check and the scheme.
    public static let authentication = MiddlewareStage("authentication")
    /// The cookie jar: `Cookie` out, `Set-Cookie` in, on every redirect hop.
    public static let cookies = MiddlewareStage("cookies")
    /// The HTTP cache.
    public static let cache = MiddlewareStage("cache")
    /// The circuit breaker: fails at once while the origin's ``CircuitBreaker`` circuit is open.
    public static let circuitBreaker = MiddlewareStage("circuitBreaker")
    /// Rate limits: every request waits at its origin's (or tag's) gate in ``RateLimits``.
    public static let rateLimit = MiddlewareStage("rateLimit")
    /// Each attempt's span, log lines and HAR entry.
    public static let recording = MiddlewareStage("recording")
    /// The per-attempt and idle time limits.
    public static let timeout = MiddlewareStage("timeout")
    /// How the response body is read: in memory, as a stream, or into a file.
    public static let body = MiddlewareStage("body")
    /// Content decoding of compressed bodies.
    public static let decompression = MiddlewareStage("decompression")
    /// The request's wire form: the last stage of the request seam, which hands the request to
    /// the wire seam. Only `before:` places a middleware here; `after:` means the same.
    public static let encoding = MiddlewareStage("encoding")

    /// The request seam's built-in stages in chain order, as the pipeline's table lists them.
    public static var order: [MiddlewareStage] { Pipeline.table.compactMap(\.requestStage) }

    public var description: String { name }
}

/// A built-in stage of the wire seam (``WireMiddleware``), below ``MiddlewareStage/encoding``,
/// for placing your own wire middlewares with ``APIClient/Configuration/insert(_:before:)-(WireMiddleware,_)``.
///
/// | stage | what it does |
/// |---|---|
/// | ``signing`` | the authorizing scheme signs the exact bytes (``AuthenticationScheme/sign(_:context:)``) |
/// | *your wire middlewares* | ``APIClient/Configuration/wireMiddlewares`` |
/// | ``mocks`` | answers from ``APIClient/Configuration/mocks`` or a HAR file instead of the network |
/// | ``transport`` | the transport sends the request |
public struct WireStage: Hashable, Sendable, CustomStringConvertible {
    private let name: String
    private init(_ name: String) { self.name = name }

    /// Signatures over the exact bytes sent, by the scheme that authorized the call.
    public static let signing = WireStage("signing")
    /// Mocks and HAR replay.
    public static let mocks = WireStage("mocks")
    /// The transport at the end of the chain. Only `before:` places a middleware here; `after:`
    /// means the same.
    public static let transport = WireStage("transport")

    /// The wire seam's built-in stages in chain order, as the pipeline's table lists them.
    public static var order: [WireStage] { Pipeline.table.compactMap(\.wireStage) }

    public var description: String { name }
}

extension APIClient.Configuration {
    /// Inserts a middleware just before a built-in stage (after earlier insertions there).
    ///
    /// ```swift
    /// configuration.insert(LogAttempts(), before: .authentication)   // every attempt and hop, before credentials
    /// ```
    public mutating func insert(_ middleware: some Middleware, before stage: MiddlewareStage) {
        insertions.append(Insertion(stage: .request(stage), placement: .before, middleware: .request(middleware)))
    }

    /// Inserts a middleware just after a built-in stage (after earlier insertions there).
    public mutating func insert(_ middleware: some Middleware, after stage: MiddlewareStage) {
        insertions.append(Insertion(stage: .request(stage), placement: .after, middleware: .request(middleware)))
    }

    /// Inserts a wire middleware just before a built-in wire stage (after earlier insertions there).
    ///
    /// ```swift
    /// configuration.insert(ExactBytesLog(), before: .transport)   // below the mocks: only what goes to the network
    /// ```
    public mutating func insert(_ middleware: some WireMiddleware, before stage: WireStage) {
        insertions.append(Insertion(stage: .wire(stage), placement: .before, middleware: .wire(middleware)))
    }

    /// Inserts a wire middleware just after a built-in wire stage (after earlier insertions there).
    public mutating func insert(_ middleware: some WireMiddleware, after stage: WireStage) {
        insertions.append(Insertion(stage: .wire(stage), placement: .after, middleware: .wire(middleware)))
    }

    /// A middleware placed relative to a built-in stage.
    struct Insertion: Sendable {
        enum Stage: Hashable, Sendable {
            case request(MiddlewareStage)
            case wire(WireStage)
        }

        enum Placement: Sendable {
            case before, after
        }

        enum Kind: Sendable {
            case request(any Middleware)
            case wire(any WireMiddleware)
        }

        var stage: Stage
        var placement: Placement
        var middleware: Kind
    }
}
