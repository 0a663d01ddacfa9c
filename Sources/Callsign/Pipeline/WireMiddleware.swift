public import Foundation
public import HTTPTypes

/// A request in wire form: the HTTP head exactly as it will be sent, and the body bytes.
///
/// The ``MiddlewareStage/encoding`` stage makes it from a ``Request``; ``WireMiddleware``s see it and
/// may change it; the transport sends it.
public struct WireRequest: Sendable {
    /// Method, scheme, authority, path and query, and header fields, exactly as sent.
    public var head: HTTPRequest {
        didSet { headChanged = true }
    }
    /// The body, if any: in memory, a file, or a stream (``TransportBody``).
    public var body: TransportBody?
    /// Whether a wire middleware changed ``head`` since the request was encoded: the
    /// ``Response``'s request then reports the header fields that were really sent.
    var headChanged = false

    /// Creates a wire request.
    public init(head: HTTPRequest, body: TransportBody? = nil) {
        self.head = head
        self.body = body
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
