public import Foundation

extension APIClient {
    /// Everything an ``APIClient`` needs to know that is not an API definition, in groups like
    /// AsyncHTTPClient's: ``timeouts``, ``retry``, ``redirects``, ``cache``, ``offline``,
    /// ``responses``, ``common``, ``tasks``, ``callbacks``, ``observability`` and ``limits``. Each
    /// built-in stage of the pipeline is made from its own group when the client is created;
    /// middlewares never receive the configuration whole.
    ///
    /// One grouping rule: settings with several parts that belong together are a group (a struct
    /// of its own: ``Timeouts``, ``Offline``, ``Responses``, ``CommonValues``, ``Tasks``,
    /// ``Callbacks``, ``Observability``, each in its own file); a setting that is one value — a
    /// policy (``retry``, ``redirects``, ``hedging``), a component (``cache``, ``rateLimits``,
    /// ``circuitBreaker``) or a bound (``limits``) — is a property of its own, its type documented
    /// where it is declared. What a single call may say differently is in ``CallOptions``.
    ///
    /// A plain value with a documented default for every property; adjust a copy with a closure:
    ///
    /// ```swift
    /// let client = APIClient(configuration: .init {
    ///     $0.baseURL = URL(string: "https://api.example.com/")
    ///     $0.timeouts.attempt = .seconds(15)
    ///     $0.responses.decoder.keyDecodingStrategy = .convertFromSnakeCase
    /// })
    /// ```
    public struct Configuration: Sendable {
        // MARK: Requests

        /// The base URL when neither the request nor its definition has one. Its origin is the one
        /// a call no definition built sends ``authentication`` to without being asked. Default
        /// `nil`.
        public var baseURL: URL? = nil
        /// Headers sent with every request; a definition's or call's header of the same name
        /// wins. Default: a `User-Agent` naming Callsign.
        public var headers: Headers = ["User-Agent": "Callsign/\(APIClient.version)"]
        /// The encoder for `Encodable` bodies built by the client. Default: a plain `JSONEncoder`.
        public var encoder: JSONEncoder = JSONEncoder()
        /// Parameter encoders by content type, and the query string rules. Default: the built-ins.
        public var encoders: ParameterEncoders = ParameterEncoders()
        /// Parameters and headers added to every request by tag (xAPI). Default: none.
        public var common: CommonValues = CommonValues()
        /// The `Accept-Language` sent unless a request sets its own. Default
        /// ``AcceptLanguage/preferred``: the user's preferred languages; ``AcceptLanguage/none``
        /// sends none.
        public var acceptLanguage: AcceptLanguage = .preferred
        /// The language of ``APIError/Fields/message`` for this client's errors: English or
        /// Simplified Chinese (any Chinese locale in simplified script). Default `nil`: the
        /// process's language — the user's preferred languages on Apple platforms,
        /// `LANGUAGE`/`LC_ALL`/`LC_MESSAGES`/`LANG` elsewhere. Error codes never change.
        ///
        /// ```swift
        /// configuration.locale = Locale(identifier: "zh-Hans")
        /// ```
        public var locale: Locale? = nil {
            didSet { messageLanguage = locale.map(MessageLanguage.init) ?? .process }
        }
        /// Your own texts for Callsign's built-in messages, which win over its English and
        /// Simplified Chinese ones in ``APIError/Fields/message``, ``APIClient/warnings`` and log
        /// lines — as RFAPI read them from the main bundle. Default `nil`: Callsign's texts.
        ///
        /// ```swift
        /// configuration.messageOverrides = try MessageOverrides(bundle: .main, table: "Localizable")
        /// ```
        public var messageOverrides: MessageOverrides? = nil
        /// Client-info headers (`X-Client-OS`, …), opt-in. Default `nil`.
        public var clientInfo: ClientInfo? = nil
        /// Credentials for requests that need authorization: calls to the origin of ``baseURL``
        /// unless they opt out (`.authorized(false)`), calls by name whose definition says
        /// `needsAuthorization: true`, and calls to another trusted origin that set
        /// ``CallOptions/needsAuthorization`` to `true`. Default `nil`.
        public var authentication: Authentication? = nil
        /// The HTTP proxy each request goes through, with the hosts reached directly. Default
        /// `nil`: every request connects directly. ``environment(_:)`` reads the proxy
        /// variables as curl does.
        ///
        /// ```swift
        /// configuration.proxy = ProxySettings(all: Proxy(host: "proxy.internal", port: 3128), bypass: ["localhost"])
        /// ```
        public var proxy: ProxySettings? = nil
        /// Trust roots, a client certificate, the lowest TLS version, certificate pins and
        /// HTTP/2 for HTTPS connections. Default: the system's roots, TLS 1.2+, no pins.
        ///
        /// ```swift
        /// configuration.tls.trustRoots = .only(try TLSCertificate.load(pemFile: privateCA))
        /// configuration.tls.clientIdentity = try TLSClientIdentity(certificatePEM: cert, privateKeyPEM: key)
        /// ```
        public var tls: TLSSettings = TLSSettings()
        /// The cookie jar: `Set-Cookie` answers are stored and `Cookie` sent back as RFC 6265
        /// says, on every transport. Default `nil`: no cookies are kept (URLSession's own cookie
        /// handling is always off, so there is never a second jar).
        ///
        /// ```swift
        /// configuration.cookies = CookieJar()
        /// ```
        public var cookies: CookieJar? = nil

        // MARK: Reliability

        /// Per-attempt, whole-call and idle time limits. Default: 60 seconds per attempt, no
        /// deadline, 60 seconds without a byte.
        public var timeouts: Timeouts = Timeouts()
        /// How failed attempts are retried. Default ``RetryPolicy/default``: 3 attempts for
        /// idempotent requests, exponential back-off with jitter, `Retry-After` honoured.
        public var retry: RetryPolicy = .default
        /// How redirects are followed. Default ``RedirectPolicy/default`` (5 hops, no downgrade).
        public var redirects: RedirectPolicy = .default
        /// The HTTP cache (RFC 9111). Default `nil`: no cache.
        ///
        /// ```swift
        /// configuration.cache = .memory(byteBudget: 16 << 20)
        /// configuration.cache = HTTPCache(storage: SQLiteCacheStorage(directory: cacheDirectory))   // CallsignSQLite
        /// ```
        public var cache: HTTPCache? = nil
        /// Where ``StorePolicy/offline`` requests wait. Default: each client's own memory queue.
        public var offline: Offline = Offline()
        /// Rate limits shared by every call to an origin (or of a tag): a server's `Retry-After`
        /// on 429/503 and its `RateLimit` fields hold every call to it, and your ``RateLimit``s
        /// keep to a published quota (the ``MiddlewareStage/rateLimit`` stage). Default `nil`:
        /// off, only the call that got a `Retry-After` waits (in ``retry``).
        ///
        /// ```swift
        /// configuration.rateLimits = RateLimits(perOrigin: .per(10, .seconds(10)))
        /// ```
        public var rateLimits: RateLimits? = nil
        /// A circuit breaker per origin: after repeated failures, calls fail at once with
        /// ``APIError/Code/circuitOpen`` (or are queued offline) until a probe succeeds (the
        /// ``MiddlewareStage/circuitBreaker`` stage). Default `nil`: off.
        ///
        /// ```swift
        /// configuration.circuitBreaker = CircuitBreaker(consecutiveFailures: 5, coolDown: .seconds(30))
        /// ```
        public var circuitBreaker: CircuitBreaker? = nil
        /// Hedged requests: when an idempotent call has no answer head after a delay, a second
        /// attempt goes and the first answer wins, the other cancelled (the
        /// ``MiddlewareStage/hedging`` stage). A definition's or call's own ``HedgePolicy`` wins.
        /// Default `nil`: off.
        ///
        /// ```swift
        /// configuration.hedging = .after(.milliseconds(200))
        /// ```
        public var hedging: HedgePolicy? = nil
        /// Bounds on what a server can make the client hold or parse. Default ``Limits/default``.
        public var limits: Limits = .default
        /// The clock for retry waits and deadlines. Default ``SystemClock``.
        public var clock: any CallClock = SystemClock()

        // MARK: Responses

        /// How responses are validated, unwrapped, decompressed and decoded.
        public var responses: Responses = Responses()

        // MARK: Pipeline

        /// Request-seam middlewares that run first, outermost first, just inside the
        /// ``MiddlewareStage/observability`` stage; a call's own ``Request/Fields/middlewares``
        /// run after them. Place one at another stage with ``insert(_:before:)-(Middleware,_)``.
        /// Default none.
        ///
        /// ```swift
        /// configuration.middlewares = [Timing(), .changingRequest { $0.adding(parameters: ["userId": "12345"]) }]
        /// ```
        public var middlewares: [any Middleware] = []
        /// Wire-seam middlewares: they see each request's HTTP head and body exactly as sent, after
        /// the ``WireStage/signing`` stage and before ``WireStage/mocks`` and the transport.
        /// Default none.
        ///
        /// ```swift
        /// configuration.wireMiddlewares = [.changingHead { head in … }]
        /// ```
        public var wireMiddlewares: [any WireMiddleware] = []
        /// Answers from mocks or a recorded HAR file instead of the network: the
        /// ``WireStage/mocks`` stage, just in front of the transport. Default `nil`.
        ///
        /// ```swift
        /// configuration.mocks = Mocks { request in request.apiName == "UserProfile" ? .json(["id": 1]) : nil }
        /// ```
        public var mocks: Mocks? = nil
        /// Middlewares placed relative to built-in stages.
        var insertions: [Insertion] = []

        // MARK: Tasks and callbacks

        /// Concurrency limits, de-duplication, identifiers and executors. Default: unlimited.
        public var tasks: Tasks = Tasks()
        /// Where callbacks run and who sees failures first. Default: the main actor, no handler.
        public var callbacks: Callbacks = Callbacks()

        // MARK: Observability

        /// Logging, metrics, tracing, redaction, HAR recording and observers. Default: silent.
        public var observability: Observability = Observability()

        /// The defaults.
        public static let `default` = Configuration()

        /// The language of this client's error messages, worked out once from ``locale``
        /// (parsing a locale is not free, and every failed attempt asks).
        private(set) var messageLanguage: MessageLanguage = .process

        /// The redaction widened by everything the authentication sends: its names are secret
        /// wherever they appear, and its known values are masked wherever they show up.
        var credentialRedaction: Redaction {
            var widened = observability.redaction
            if let authentication {
                let names = authentication.secretNames
                widened.secretHeaders.formUnion(names)
                widened.secretQueryNames.formUnion(names)
                widened.secretBodyFields.formUnion(names)
                widened.secretValues += (authentication.scheme?.secretValues ?? []) + authentication.headers.fields.map(\.value)
                    + authentication.parameters.values.compactMap(\.scalarText)
            }
            return widened
        }

        /// Creates the default configuration.
        public init() {}

        /// Creates the default configuration adjusted by `configure`.
        public init<Failure: Error>(_ configure: (inout Configuration) throws(Failure) -> Void) throws(Failure) {
            self.init()
            try configure(&self)
        }

        /// A copy adjusted by `configure`.
        public func with(_ configure: (inout Configuration) -> Void) -> Configuration {
            var copy = self
            configure(&copy)
            return copy
        }

        /// The default configuration with what the environment says, as command-line tools
        /// read it: the proxy from `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` (and
        /// their lowercase forms; see ``ProxySettings/init(environment:)``).
        ///
        /// ```swift
        /// let client = APIClient(definitions: definitions, configuration: try .environment())
        /// ```
        /// - Throws: ``APIError/Code/invalidRequest`` when a proxy variable holds a URL that
        ///   is not a usable proxy: traffic must not silently go around a proxy that was meant.
        public static func environment(
            _ environment: [String: String] = ProcessInfo.processInfo.environment
        ) throws(APIError) -> Configuration {
            var configuration = Configuration()
            configuration.proxy = try ProxySettings(environment: environment)
            return configuration
        }
    }
}

extension APIClient {
    /// The library's version.
    public static let version = "0.1.0"
}
