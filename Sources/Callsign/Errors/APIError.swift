public import Foundation

/// The one error type Callsign throws.
///
/// Every failure — a malformed definitions file, a header with CR/LF, a refused connection,
/// a 404, an envelope with a non-zero code, a body that does not decode — arrives as an
/// `APIError` whose ``code`` says what kind of failure it was and whose ``message`` says,
/// in words a person can act on, what happened. The request, the response (when one
/// arrived) and the underlying error are kept for inspection.
///
/// ```swift
/// do {
///     let user = try await client.call("UserProfile", parameters: ["user_id": 7], as: User.self)
/// } catch where error.code == .unacceptableStatus {
///     print("server said", error.response?.status.code ?? 0)
/// } catch {
///     print(error)   // one line, never contains a secret
/// }
/// ```
///
/// Cancellation is reported as ``Code/cancelled`` and a time limit as ``Code/timedOut``.
public struct APIError: Error, Sendable {
    /// What kind of failure an ``APIError`` is.
    ///
    /// A struct around a private enum, so new codes can be added without breaking a
    /// `switch` in user code. Compare with `==` or match with `~=`:
    ///
    /// ```swift
    /// if error.code == .timedOut { … }
    /// ```
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case transport, timedOut, cancelled, unacceptableStatus, unacceptableContentType
            case envelope, decoding, encoding, invalidRequest, invalidDefinition, unknownAPI
            case responseTooLarge, invalidResponse, queuedOffline, redirect, authentication, cacheMiss, storage
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The connection could not be made or broke (refused, reset, DNS, TLS).
        public static let transport = Code(.transport)
        /// A time limit passed (the per-attempt timeout, or the overall deadline).
        public static let timedOut = Code(.timedOut)
        /// The call was cancelled. Never delivered to a failure callback.
        public static let cancelled = Code(.cancelled)
        /// The response's status is not in the accepted set.
        public static let unacceptableStatus = Code(.unacceptableStatus)
        /// The response's `Content-Type` does not match what was asked for.
        public static let unacceptableContentType = Code(.unacceptableContentType)
        /// An adaptive envelope (`{"code": …, "msg": …}`) reported a failure code.
        public static let envelope = Code(.envelope)
        /// The body could not be decoded into the requested type.
        public static let decoding = Code(.decoding)
        /// The parameters or body could not be encoded.
        public static let encoding = Code(.encoding)
        /// The request is malformed: bad header, bad path parameter, bad URL, bad method.
        public static let invalidRequest = Code(.invalidRequest)
        /// A definitions file or value is malformed.
        public static let invalidDefinition = Code(.invalidDefinition)
        /// No API with the given name is defined.
        public static let unknownAPI = Code(.unknownAPI)
        /// The response body is larger than the configured cap.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// The server's answer is not a well-formed HTTP response.
        public static let invalidResponse = Code(.invalidResponse)
        /// The server could not be reached and the request was stored in the offline queue;
        /// ``APIError/queuedRequestID`` says under which id. It is sent by ``APIClient/replay(lease:)``.
        public static let queuedOffline = Code(.queuedOffline)
        /// The cache policy forbade the network (``CachePolicy/cacheOnly``, `only-if-cached`) and
        /// no usable response was stored.
        public static let cacheMiss = Code(.cacheMiss)
        /// A local store failed: the offline queue or cache database is read-only, full or corrupt.
        /// For an offline call it means the request was **not** queued.
        public static let storage = Code(.storage)
        /// A redirect could not be followed: a loop, too many hops, a downgrade to http, or a
        /// body that cannot be sent again.
        public static let redirect = Code(.redirect)
        /// Credentials could not be obtained or refreshed (the session expired).
        public static let authentication = Code(.authentication)

        /// A short, stable, secret-free name, safe to use as a metric label (`"timedOut"`).
        public var shortDescription: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A sentence a person can act on. Never contains a credential.
    public var message: String
    /// The request that failed, when one had been built.
    public var request: Request? {
        get { requestBox?.value }
        set { requestBox = newValue.map(Box.init) }
    }
    /// The response, when one arrived (for example with ``Code/unacceptableStatus``).
    public var response: Response? {
        get { responseBox?.value }
        set { responseBox = newValue.map(Box.init) }
    }
    // Requests and responses are large values; boxed, an error stays a few words wide, which
    // keeps every `throws(APIError)` async frame small (and with it each waiting call's memory).
    private var requestBox: Box<Request>?
    private var responseBox: Box<Response>?
    /// The error that caused this one, if any (a transport error, a `DecodingError`, …).
    public var underlyingError: (any Error)?
    /// For ``Code/envelope``: the code the envelope carried.
    public var envelopeCode: Int?
    /// For ``Code/envelope``: the message the envelope carried, if any.
    public var envelopeMessage: String?
    /// For definition and request errors: the API name involved.
    public var apiName: String?
    /// For definition errors: the key in the definitions file.
    public var key: String?
    /// For definition errors: the line in the definitions file, where the parser knows it.
    public var line: Int?
    /// For ``Code/queuedOffline``: the id of the request in the offline queue.
    public var queuedRequestID: Int64?
    /// Whether the failure happened after the response had started to arrive (so a retry could
    /// repeat a request the server already acted on).
    public internal(set) var responseStarted: Bool = false
    /// The client's redaction, for ``description``.
    var redaction: Redaction?

    /// Creates an error. Most users only ever read errors; this is for middlewares,
    /// transports and validators that report their own failures.
    ///
    /// ```swift
    /// throw APIError(.invalidRequest, "the user id must be positive")
    /// ```
    public init(
        _ code: Code, _ message: String, request: Request? = nil, response: Response? = nil,
        underlyingError: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.request = request ?? response?.request
        self.response = response
        self.underlyingError = underlyingError
        self.apiName = request?.apiName ?? response?.request.apiName
    }

    /// The HTTP status of the response, if one arrived.
    public var statusCode: Int? { response?.status.code }

    /// Whether this error is a cancellation. Cancellation is never a failure.
    public var isCancellation: Bool { code == .cancelled }

    /// Whether the server could not be reached at all: a connect failure, DNS, no route, or a
    /// time limit before any response byte. What the offline queue stores and what lets the
    /// cache serve a stale copy.
    var isUnreachable: Bool {
        (code == .transport || code == .timedOut) && !responseStarted && response == nil
    }
}

extension APIError: CustomStringConvertible, LocalizedError {
    /// One line: the code, the API or request, and the message. Secrets are redacted.
    public var description: String {
        var parts = ["APIError.\(code)"]
        if let apiName { parts.append("[\(apiName)]") }
        if let request, let url = request.resolvedURLForDescription {
            parts.append("\(request.method.rawValue) \((redaction ?? .default).redact(url: url))")
        }
        return parts.joined(separator: " ") + ": " + message
    }

    public var errorDescription: String? { description }
}

extension APIError {
    /// Maps any error thrown while performing a call into an ``APIError``.
    ///
    /// `CancellationError` becomes ``Code/cancelled``; an ``APIError`` passes through with the
    /// request filled in if it was missing.
    static func wrap(_ error: any Error, request: Request?) -> APIError {
        if var apiError = error as? APIError {
            if apiError.request == nil { apiError.request = request }
            if apiError.apiName == nil { apiError.apiName = request?.apiName }
            return apiError
        }
        if error is CancellationError {
            return APIError(.cancelled, "the call was cancelled", request: request, underlyingError: error)
        }
        if let urlError = error as? URLError {
            switch urlError.code {
            case .cancelled:
                return APIError(.cancelled, "the call was cancelled", request: request, underlyingError: error)
            case .timedOut:
                return APIError(.timedOut, "the server did not answer in time", request: request, underlyingError: error)
            default:
                return APIError(
                    .transport, "the connection failed (\(urlError.code.rawValue))", request: request,
                    underlyingError: error)
            }
        }
        return APIError(.transport, "the connection failed: \(error)", request: request, underlyingError: error)
    }

    /// Maps an error from user code (a hook, a middleware) into an ``APIError``.
    static func wrap(_ error: any Error, request: Request?, defaultCode: Code, context: String) -> APIError {
        if let apiError = error as? APIError { return wrap(apiError, request: request) }
        if error is CancellationError { return wrap(error, request: request) }
        return APIError(defaultCode, "\(context): \(error)", request: request, underlyingError: error)
    }
}

/// An immutable reference holder for a large value.
final class Box<Value: Sendable>: Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
