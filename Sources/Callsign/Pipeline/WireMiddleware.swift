public import Foundation
public import HTTPTypes

/// The request on the wire: the HTTP head exactly as it will be sent, the body, and how the
/// transport is to send it and hand back the answer.
///
/// The ``MiddlewareStage/encoding`` stage makes it from a ``Request``; ``WireMiddleware``s see it and
/// may change it; the ``WireStage/transport`` stage says how it goes (how the answer is read, the
/// per-attempt limit, progress, proxy, TLS) and hands it to the ``Transport`` — one type from the
/// encoding stage to the network (``TransportRequest`` is its name in the transport's API).
public struct WireRequest: Sendable {
    /// How the caller reads the response body.
    public enum BodyReading: Sendable, Equatable {
        /// Chunk by chunk, as it arrives (streams and downloads to a file). The transport returns
        /// as soon as the head has arrived.
        case stream
        /// Whole, in memory, up to `limit` bytes. A transport may read it before returning (in
        /// one step, as ``AsyncHTTPClientTransport`` does) and hand back a body already in memory;
        /// past `limit` it throws ``APIError/Code/responseTooLarge``. A transport that ignores
        /// this and streams is still correct: the caller collects.
        case collect(limit: Int)
    }

    /// Method, scheme, authority, path and query, and header fields, exactly as sent.
    public var head: HTTPRequest {
        didSet { headChanged = true }
    }
    /// The body, if any: in memory, a file, or a stream (``TransportBody``).
    public var body: TransportBody?
    /// How the caller reads the response body. Default ``BodyReading/stream``.
    public var bodyReading: BodyReading = .stream
    /// When this attempt must be over — the per-attempt limit (``APIClient/Configuration/Timeouts/attempt``,
    /// or the request's ``CallOptions/timeout``), not the call's deadline
    /// (``MiddlewareContext/Fields/deadline``, which the stages above enforce): the head, and a
    /// collected body. `nil` for none. Only a transport whose ``Transport/enforcesAttemptDeadlines`` is
    /// `true` needs to look at it.
    public var attemptDeadline: ContinuousClock.Instant? = nil
    /// Told the body bytes received so far and the expected total (`Content-Length`), by a
    /// transport that collects the body itself; `nil` when nobody watches. A streamed body is
    /// counted by its reader instead.
    public var receiveProgress: (@Sendable (_ received: Int64, _ expected: Int64?) -> Void)? = nil
    /// Told the body bytes written to the connection so far, by the transport, as it writes them;
    /// `nil` when nobody watches the upload. A transport that cannot tell leaves it uncalled:
    /// the upload is then reported only at its start and end.
    public var sendProgress: (@Sendable (_ sent: Int64) -> Void)? = nil
    /// The HTTP proxy to go through (``APIClient/Configuration/proxy`` chose it for this URL),
    /// or `nil` to connect directly. A transport that cannot use a proxy throws
    /// ``APIError/Code/invalidRequest`` rather than connecting around it.
    public var proxy: Proxy? = nil
    /// How to trust the server and identify the client over TLS
    /// (``APIClient/Configuration/tls``). A transport that cannot apply settings other than the
    /// defaults throws ``APIError/Code/invalidRequest`` rather than connecting with weaker ones.
    public var tls = TLSSettings()
    /// Whether the client's own HTTP cache (``APIClient/Configuration/cache``) handles this
    /// request: a transport with a cache of its own (URLSession's `URLCache`) must then not cache
    /// it a second time.
    public var clientCaches = false
    /// The WebSocket this request's handshake opens (``APIClient/webSocket(_:options:)``), or
    /// `nil` for a plain request. A transport that sees it sends the `Upgrade` handshake, and on
    /// `101 Switching Protocols` hands back the open connection in ``TransportResponse/webSocket``;
    /// any other answer comes back as it is. A transport that cannot open WebSockets throws
    /// ``APIError/Code/invalidRequest``.
    public var webSocket: WebSocketUpgrade? = nil
    /// Whether a wire middleware changed ``head`` since the request was encoded: the
    /// ``Response``'s request then reports the header fields that were really sent.
    var headChanged = false

    /// Creates a request on the wire; what is left out is said by the transport stage (or, for
    /// a transport called directly, its defaults: the answer streamed, no limit, no proxy, the
    /// system's TLS).
    public init(
        head: HTTPRequest, body: TransportBody? = nil, bodyReading: BodyReading = .stream,
        attemptDeadline: ContinuousClock.Instant? = nil,
        receiveProgress: (@Sendable (_ received: Int64, _ expected: Int64?) -> Void)? = nil,
        proxy: Proxy? = nil, tls: TLSSettings = TLSSettings(), clientCaches: Bool = false
    ) {
        self.head = head
        self.body = body
        self.bodyReading = bodyReading
        self.attemptDeadline = attemptDeadline
        self.receiveProgress = receiveProgress
        self.proxy = proxy
        self.tls = tls
        self.clientCaches = clientCaches
    }

    /// The absolute URL of the head (scheme, authority, path and query), when it makes one.
    public var url: URL? {
        guard let scheme = head.scheme, let authority = head.authority else { return nil }
        return URL(string: "\(scheme)://\(authority)\(head.path ?? "/")")
    }
}

/// A step of the wire seam, between "request encoded" and "bytes sent": it sees the HTTP head
/// and body exactly as they are sent, and the response head and body stream exactly as they
/// arrive — to sign a request over its bytes, observe the wire, or answer in place of the
/// network. The built-in ``WireStage/signing``, ``WireStage/mocks`` and ``WireStage/transport``
/// stages are wire middlewares too.
///
/// ```swift
/// struct ContentDigest: WireMiddleware {
///     func intercept(_ request: WireRequest, context: MiddlewareContext, next: WireNext) async throws -> TransportResponse {
///         var request = request
///         if let body = request.body?.inMemoryData {
///             let digest = Data(SHA256.hash(data: body)).base64EncodedString()
///             request.head.headerFields[HTTPField.Name("Content-Digest")!] = "sha-256=:\(digest):"
///         }
///         return try await next(request)
///     }
/// }
/// let client = APIClient(configuration: .init { $0.wireMiddlewares = [ContentDigest()] })
/// ```
///
/// The response's body has not been read yet when `next` returns: wrap
/// ``TransportResponse/body`` to watch it arrive. Throw an ``APIError`` to reject a request.
public protocol WireMiddleware: Sendable {
    /// Handles one request in wire form: call `next` to pass it on (zero, one or several times).
    func intercept(_ request: WireRequest, context: MiddlewareContext, next: WireNext) async throws -> TransportResponse
}

/// The rest of the wire seam's chain, as a function a ``WireMiddleware`` calls: the one chain
/// (``ChainNext``) on the wire seam.
public typealias WireNext = ChainNext<WireSeam>

/// The wire seam: ``WireMiddleware``s on ``WireRequest`` and ``TransportResponse`` values.
public enum WireSeam: PipelineSeam {
    /// Runs one wire middleware.
    public static func run(
        _ stage: any WireMiddleware, _ request: WireRequest, context: MiddlewareContext, next: WireNext
    ) async throws -> TransportResponse {
        try await stage.intercept(request, context: context, next: next)
    }

    /// The wire form names no request: the encoding stage names it in the error.
    public static func request(of request: WireRequest) -> Request? { nil }
}

/// A wire middleware from a closure: the one closure stage (``AnyStage``) on the wire seam.
///
/// ```swift
/// let observe = AnyWireMiddleware { request, context, next in
///     print(request.head.method, request.head.path ?? "", request.body?.count ?? 0)
///     return try await next(request)
/// }
/// ```
public typealias AnyWireMiddleware = AnyStage<WireSeam>

extension AnyStage: WireMiddleware where Seam == WireSeam {
    public func intercept(_ request: WireRequest, context: MiddlewareContext, next: WireNext) async throws -> TransportResponse {
        try await body(request, context, next)
    }
}

extension WireMiddleware where Self == AnyWireMiddleware {
    /// A wire middleware that changes the HTTP head just before it is sent (Malibu's
    /// `preProcessRequest`). It runs for every request and redirect hop, whatever the origin:
    /// credentials belong in an ``AuthenticationScheme``, which runs only after the origin check.
    ///
    /// ```swift
    /// configuration.wireMiddlewares = [.changingHead { head in
    ///     var head = head
    ///     head.headerFields[HTTPField.Name("X-Signature")!] = sign(head.path ?? "")
    ///     return head
    /// }]
    /// ```
    public static func changingHead(_ change: @escaping @Sendable (HTTPRequest) async throws -> HTTPRequest) -> AnyWireMiddleware {
        AnyWireMiddleware { request, context, next in
            var request = request
            do {
                request.head = try await change(request.head)
            } catch {
                throw APIError.wrap(error, request: nil, defaultCode: .invalidRequest, context: "changing the request head failed")
            }
            return try await next(request, context: context)
        }
    }
}
