public import Foundation

/// The one error type Callsign throws.
///
/// Every failure — a malformed definitions file, a header with CR/LF, a refused connection,
/// a 404, an envelope with a non-zero code, a body that does not decode — arrives as an
/// `APIError` whose ``Fields/code`` says what kind of failure it was and whose ``Fields/message`` says,
/// in words a person can act on, what happened. The request, the response (when one
/// arrived) and the underlying error are kept for inspection.
///
/// ```swift
/// do {
///     let user = try await client.call("UserProfile", parameters: ["user_id": 7], as: User.self)
/// } catch {
///     // `error` is an APIError: the calls throw nothing else.
///     if error.code == .unacceptableStatus { print("server said", error.response?.status.code ?? 0) }
///     print(error)   // one line, never contains a secret
/// }
/// ```
///
/// Cancellation is reported as ``Code/cancelled`` and a time limit as ``Code/timedOut``.
@dynamicMemberLookup
public struct APIError: BoxedFields, Error, Sendable {
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
            case tls, deliveryUnknown, circuitOpen, webSocketClosed
            case certificateUntrusted, certificateExpired, certificateHostMismatch, certificatePinMismatch
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The connection could not be made or broke (refused, reset, DNS).
        public static let transport = Code(.transport)
        /// TLS failed: the server's certificate was not trusted (expired, wrong host, unknown
        /// root), or the handshake broke. Final: never retried and never queued offline, since
        /// trying again cannot make an untrusted server trusted.
        public static let tls = Code(.tls)
        /// The server's certificate does not lead to a trusted root (a self-signed certificate,
        /// a private CA that ``TLSSettings/trustRoots`` does not name). Final, like ``tls``.
        public static let certificateUntrusted = Code(.certificateUntrusted)
        /// The server's certificate (or one in its chain) has expired or is not valid yet. Final.
        public static let certificateExpired = Code(.certificateExpired)
        /// The server's certificate is valid, but for another host name. Final.
        public static let certificateHostMismatch = Code(.certificateHostMismatch)
        /// The server's certificate is valid, but its public key is none of those pinned for the
        /// host (``TLSSettings/pins``). Final: nothing was sent on that connection.
        public static let certificatePinMismatch = Code(.certificatePinMismatch)
        /// A request stored for offline delivery was sent, and no answer came (a timeout or a
        /// broken connection after it was written): the server may have acted on it. Without an
        /// `Idempotency-Key` the server honours, queuing it could do the same thing twice, so it
        /// is not queued; decide yourself whether to send it again.
        public static let deliveryUnknown = Code(.deliveryUnknown)
        /// The origin's circuit breaker is open (``CircuitBreaker``): recent calls to it failed, so
        /// this one was not sent. Not retried; a request whose ``StorePolicy`` is
        /// ``StorePolicy/offline`` is queued instead, as when the server cannot be reached.
        public static let circuitOpen = Code(.circuitOpen)
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
        /// ``APIError/Fields/queuedRequestID`` says under which id. It is sent by ``APIClient/replay(lease:)``.
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
        /// A WebSocket ended other than as planned, and is not reconnected: the server closed it
        /// with a code other than 1000, the connection broke and the reconnections were spent,
        /// or the server broke the protocol (a text message that is not UTF-8, a fragmented
        /// message never finished) and Callsign closed it. ``APIError/Fields/webSocketClose``
        /// holds the code and reason. ``WebSocket/send(_:)`` throws it too when the socket is
        /// closed, or while it reconnects with a full outgoing buffer: that message was not sent.
        public static let webSocketClosed = Code(.webSocketClosed)

        /// A short, stable, secret-free name, safe to use as a metric label (`"timedOut"`).
        public var shortDescription: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    /// What an error holds. Read them on the error itself — `error.code`, `error.response?.status`
    /// — through key-path member lookup: the fields live in one copy-on-write box, so an error is
    /// one pointer wide in every async frame that reserves room for it, though it can carry a
    /// whole request and response.
    public struct Fields: Sendable {
        /// What kind of failure this is.
        public var code: Code
        /// A sentence a person can act on, in the client's language (``APIClient/Configuration/locale``,
        /// else the process's): English or Simplified Chinese. Never contains a credential.
        /// Your own texts win (``APIClient/Configuration/messageOverrides``).
        /// Setting it replaces the sentence with your words, shown as written.
        public var message: String {
            get { text.resolved(in: language ?? .process, overrides: overrides) }
            set { text = LocalizedMessage(sentence: newValue) }
        }
        /// The sentence before translation.
        package var text: LocalizedMessage
        /// The language ``message`` is shown in; `nil` for the process's.
        var language: MessageLanguage? = nil
        /// The client's own texts for Callsign's sentences.
        var overrides: MessageOverrides? = nil

        /// The request that failed, when one had been built.
        public var request: Request? = nil
        /// The response, when one arrived (for example with ``Code/unacceptableStatus``).
        public var response: Response? = nil
        /// The error that caused this one, if any (a transport error, a `DecodingError`, …).
        public var underlyingError: (any Error)? = nil
        /// For ``Code/envelope``: the code the envelope carried.
        public var envelopeCode: Int? = nil
        /// For ``Code/envelope``: the message the envelope carried, if any.
        public var envelopeMessage: String? = nil
        /// For definition and request errors: the API name involved.
        public var apiName: String? = nil
        /// For definition errors: the key in the definitions file.
        public var key: String? = nil
        /// For definition errors: the line in the definitions file, where the parser knows it.
        public var line: Int? = nil
        /// For ``Code/queuedOffline``: the id of the request in the offline queue.
        public var queuedRequestID: Int64? = nil
        /// How a WebSocket closed (``Code/webSocketClosed``): the server's close code and reason,
        /// the close Callsign sent, or ``WebSocketClose/Code/abnormalClosure`` for a connection
        /// that broke without one.
        public var webSocketClose: WebSocketClose? = nil
        /// Whether the failure happened after the response had started to arrive (so a retry could
        /// repeat a request the server already acted on).
        public internal(set) var responseStarted: Bool = false
        /// Whether bytes of the request may have reached the server. `false` only when the
        /// transport knows they did not: the connection was refused, the host was not found or
        /// unreachable, or the connection or TLS handshake never completed. Timeouts and failures
        /// after the connection was made count as sent, so nothing is ever sent twice by mistake.
        public internal(set) var requestSent: Bool = true
        /// The client's redaction, for ``description``.
        var redaction: Redaction? = nil
    }

    /// The fields' box (see ``BoxedFields``).
    private var storage: CopyOnWrite<Fields>

    /// All the fields at once; read and change them one by one on the value itself.
    public var fields: Fields {
        _read { yield storage.value }
        _modify { yield &storage.value }
    }

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
        self.init(code, localized: LocalizedMessage(sentence: message), request: request, response: response, underlyingError: underlyingError)
    }

    /// Creates an error in Callsign's own words, translated when it is read.
    package init(
        _ code: Code, localized message: LocalizedMessage, request: Request? = nil, response: Response? = nil,
        underlyingError: (any Error)? = nil
    ) {
        storage = CopyOnWrite(
            Fields(
                code: code, text: message, request: request ?? response?.request, response: response,
                underlyingError: underlyingError, apiName: request?.apiName ?? response?.request.apiName))
    }

    /// The message in the language of `locale` (English or Simplified Chinese; English for any
    /// other), whatever the client's language: for a server that answers each user in theirs.
    /// The client's ``APIClient/Configuration/messageOverrides`` win here too.
    ///
    /// ```swift
    /// error.localizedMessage(in: Locale(identifier: "zh-Hans"))   // "服务器拒绝了连接 (127.0.0.1:8080)"
    /// ```
    public func localizedMessage(in locale: Locale) -> String {
        self.text.resolved(in: MessageLanguage(locale), overrides: self.overrides)
    }

    /// The HTTP status of the response, if one arrived.
    public var statusCode: Int? { self.response?.status.code }

    /// Whether this error is a cancellation. Cancellation is never a failure.
    public var isCancellation: Bool { self.code == .cancelled }

    /// Whether the server could not be reached at all: a connect failure, DNS, no route, a
    /// time limit before any response byte, or an open circuit. What the offline queue stores and what lets the
    /// cache serve a stale copy.
    var isUnreachable: Bool {
        (self.code == .transport || self.code == .timedOut || self.code == .circuitOpen) && !self.responseStarted && self.response == nil
    }

    /// Whether the server got no byte of the request: what the offline queue may store without
    /// risk of a second delivery.
    var neverReachedServer: Bool {
        isUnreachable && !self.requestSent
    }

    /// A failure before the request could be written: connect refused, no host, no route.
    static func notSent(_ code: Code, _ message: LocalizedMessage, request: Request? = nil, underlyingError: (any Error)? = nil) -> APIError {
        var error = APIError(code, localized: message, request: request, underlyingError: underlyingError)
        error.requestSent = false
        return error
    }
}

extension APIError: CustomStringConvertible, LocalizedError {
    /// One line: the code, the API or request, and the message. Secrets are redacted.
    public var description: String {
        let mask = SecretMask(redaction: self.redaction ?? .default, request: self.request)
        var parts = ["APIError.\(self.code)"]
        if let apiName = self.apiName { parts.append("[\(apiName)]") }
        if let request = self.request, let url = request.resolvedURLForDescription {
            parts.append("\(request.method.rawValue) \(mask.url(url))")
        }
        // The message may quote a server (an envelope message, a Location) that echoed a secret,
        // or a URL with one: both are masked.
        return parts.joined(separator: " ") + ": " + mask.text(Self.redactingURLs(in: self.message, with: mask))
    }

    /// Every http(s) URL inside `text`, redacted.
    static func redactingURLs(in text: String, with mask: SecretMask) -> String {
        guard text.contains("://") else { return text }
        return text.split(separator: " ", omittingEmptySubsequences: false).map { word in
            let trimmed = word.trimmingCharacters(in: CharacterSet(charactersIn: "\"'()<>,;"))
            guard trimmed.hasPrefix("http://") || trimmed.hasPrefix("https://") else { return String(word) }
            return word.replacingOccurrences(of: trimmed, with: mask.url(trimmed))
        }.joined(separator: " ")
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
            return APIError(.cancelled, localized: "the call was cancelled", request: request, underlyingError: error)
        }
        if let urlError = error as? URLError {
            switch urlError.code {
            case .cancelled:
                return APIError(.cancelled, localized: "the call was cancelled", request: request, underlyingError: error)
            case .timedOut:
                return APIError(.timedOut, localized: "the server did not answer in time", request: request, underlyingError: error)
            case .serverCertificateUntrusted, .serverCertificateHasUnknownRoot:
                return .notSent(.certificateUntrusted, "the server's certificate does not lead to a trusted root (\(urlError.code.rawValue))", request: request, underlyingError: error)
            case .serverCertificateHasBadDate, .serverCertificateNotYetValid:
                return .notSent(.certificateExpired, "the server's certificate has expired or is not valid yet (\(urlError.code.rawValue))", request: request, underlyingError: error)
            case .clientCertificateRejected, .clientCertificateRequired, .secureConnectionFailed:
                return .notSent(.tls, "TLS failed (\(urlError.code.rawValue)): the server's certificate or handshake was refused", request: request, underlyingError: error)
            case .unknown where Self.describesTLS(urlError):
                // FoundationNetworking on Linux reports libcurl's TLS failures as "unknown",
                // with OpenSSL's words in the description.
                return .notSent(Self.tlsCode(describedBy: Self.describe(urlError)), "TLS failed: \(Self.describe(urlError))", request: request, underlyingError: error)
            case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet, .dataNotAllowed, .internationalRoamingOff,
                .callIsActive:
                // The request never left the device: no network, cellular data off for the app,
                // roaming off, a call holding the only link — an offline POST is queued.
                var unreachable = APIError(.transport, localized: "the server could not be reached (\(urlError.code.rawValue))", request: request, underlyingError: error)
                unreachable.requestSent = false
                return unreachable
            case .appTransportSecurityRequiresSecureConnection:
                // Never sent, and never will be: the app's own policy refuses it, so it is not queued.
                return .notSent(
                    .invalidRequest,
                    "App Transport Security refuses plain http to this host: use https, or add an exception for it to the app's Info.plist (NSAppTransportSecurity)",
                    request: request, underlyingError: error)
            default:
                return APIError(
                    .transport, localized: "the connection failed (\(urlError.code.rawValue))", request: request,
                    underlyingError: error)
            }
        }
        return APIError(.transport, localized: "the connection failed: \(error)", request: request, underlyingError: error)
    }

    private static func describesTLS(_ error: URLError) -> Bool {
        let text = describe(error)
        return text.contains("SSL") || text.contains("OpenSSL") || text.contains("TLS") || text.contains("certificate")
    }

    /// What FoundationNetworking says of a failure: its own description, else its underlying error's.
    private static func describe(_ error: URLError) -> String {
        let underlying = (error.userInfo[NSUnderlyingErrorKey] as? NSError)?.userInfo[NSLocalizedDescriptionKey] as? String
        return (error.userInfo[NSLocalizedDescriptionKey] as? String) ?? underlying ?? error.localizedDescription
    }

    /// The certificate error OpenSSL's words name (libcurl on Linux), else ``Code/tls``.
    private static func tlsCode(describedBy text: String) -> Code {
        let text = text.lowercased()
        if text.contains("has expired") || text.contains("not yet valid") { return .certificateExpired }
        if text.contains("self-signed") || text.contains("self signed") || text.contains("local issuer") || text.contains("unknown ca") {
            return .certificateUntrusted
        }
        if text.contains("subject name") || text.contains("does not match target host") { return .certificateHostMismatch }
        return .tls
    }

    /// Maps an error from user code (a hook, a middleware) into an ``APIError``.
    static func wrap(_ error: any Error, request: Request?, defaultCode: Code, context: LocalizedMessage) -> APIError {
        if let apiError = error as? APIError { return wrap(apiError, request: request) }
        if error is CancellationError { return wrap(error, request: request) }
        return APIError(defaultCode, localized: "\(context): \(error)", request: request, underlyingError: error)
    }
}
