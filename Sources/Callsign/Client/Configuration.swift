public import Foundation
public import Logging
public import Metrics
public import Tracing

extension APIClient {
    /// Everything an ``APIClient`` needs to know that is not an API definition, in groups like
    /// AsyncHTTPClient's: ``timeouts``, ``retry``, ``redirects``, ``cache``, ``offline``,
    /// ``responses``, ``common``, ``tasks``, ``callbacks``, ``observability`` and ``limits``. Each
    /// built-in stage of the pipeline is made from its own group when the client is created;
    /// middlewares never receive the configuration whole.
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

extension APIClient.Configuration {
    /// Time limits (``APIClient/Configuration/timeouts``).
    ///
    /// ```swift
    /// configuration.timeouts = .init(attempt: .seconds(10), deadline: .seconds(30))
    /// ```
    public struct Timeouts: Sendable, Hashable {
        /// The time limit for one attempt: sending, waiting, and reading a body into memory.
        /// A request's own ``CallOptions/timeout`` wins. Streams are limited up to their head only;
        /// downloads to a file only by a request's own timeout. Default 60 seconds.
        public var attempt: Duration = .seconds(60)
        /// One time limit for each whole call — attempts, retry waits, redirects and body —
        /// (APE's abort-after). A request's own ``CallOptions/deadline`` wins. Default `nil`: none.
        public var deadline: Duration? = nil
        /// How long any call — a body read into memory, a stream, a download to a file — may go
        /// without a byte from the server: waiting for the head, and between two chunks of the
        /// body (AsyncHTTPClient's read timeout). Past it the call ends with
        /// ``APIError/Code/timedOut``. It holds where the other limits do not reach: a stream's
        /// body, and a download without a timeout or deadline of its own. A stream's body is
        /// idle only while its reader waits for the next chunk. Default 60 seconds; `nil` for none.
        ///
        /// ```swift
        /// configuration.timeouts.idle = .seconds(15)   // a silent server is given up after 15 s
        /// ```
        public var idle: Duration? = .seconds(60)

        /// Creates time limits; the defaults are 60 seconds per attempt, no deadline, and an idle
        /// limit of 60 seconds.
        public init(attempt: Duration = .seconds(60), deadline: Duration? = nil, idle: Duration? = .seconds(60)) {
            self.attempt = attempt
            self.deadline = deadline
            self.idle = idle
        }
    }

    /// Where offline requests wait (``APIClient/Configuration/offline``).
    public struct Offline: Sendable {
        /// Where requests with ``StorePolicy/offline`` wait while the server cannot be reached.
        /// Default `nil`: each client keeps its own ``MemoryOfflineQueue`` (lost when the process
        /// ends); `SQLiteOfflineQueue` from `CallsignSQLite` keeps them on disk.
        ///
        /// ```swift
        /// configuration.offline.queue = try SQLiteOfflineQueue(url: queueFile)   // CallsignSQLite
        /// ```
        public var queue: (any OfflineQueueStorage)? = nil

        /// Creates the default: a memory queue per client.
        public init(queue: (any OfflineQueueStorage)? = nil) { self.queue = queue }
    }

    /// How responses are judged and read (``APIClient/Configuration/responses``).
    public struct Responses: Sendable {
        /// The decoder ``Response/decode(_:decoder:)`` uses. Default: a plain `JSONDecoder`.
        public var decoder: JSONDecoder = JSONDecoder()
        /// The adaptive envelope for every response, unless a definition or request turns it
        /// off. Default `nil` (off).
        public var envelope: EnvelopePolicy? = nil
        /// Statuses ``Response/validate()`` accepts when the request does not say. Default 200–299.
        public var acceptedStatusCodes: StatusCodes = .successful
        /// Extra checks ``Response/validate()`` runs on every response. Default none.
        public var validators: [any ResponseValidator] = []
        /// Whether compressed answers are asked for and decoded, with the limits that stop a
        /// decompression bomb. Default ``DecompressionPolicy/default``.
        public var decompression: DecompressionPolicy = .default
        /// Types by the names definitions give in `Response Class` (RFAPI), for
        /// ``Response/decodeResponseClass()`` and callbacks' `decoded`. Default: empty.
        ///
        /// ```swift
        /// configuration.responses.classes.register(Profile.self)
        /// ```
        public var classes: ResponseClasses = ResponseClasses()

        /// Creates the defaults.
        public init() {}
    }

    /// Parameters and headers added to every request (``APIClient/Configuration/common``), as
    /// xAPI's common parameters: computed per request from its tag.
    ///
    /// ```swift
    /// configuration.common.parameters = { tag in tag == "system1" ? ["app": "demo"] : [:] }
    /// configuration.common.headers = { _ in ["X-Trace": .string(UUID().uuidString)] }
    /// ```
    public struct CommonValues: Sendable {
        /// Parameters added to every request; a call's own parameter of the same name wins.
        /// Default `nil`.
        public var parameters: (@Sendable (_ tag: String?) async throws -> Parameters)? = nil
        /// Headers added to every request; a call's own header of the same name wins. Default `nil`.
        public var headers: (@Sendable (_ tag: String?) async throws -> Headers)? = nil
        /// Where common parameters go when the request does not say. Default
        /// ``CommonParameterPlacement/query``, xAPI's `xAPICommonParamsUsagePath`: in the query
        /// string whatever the method, so a POST's JSON body stays exactly the call's.
        ///
        /// ```swift
        /// configuration.common.placement = .parameters   // xAPICommonParamsUsageParams: with the call's parameters
        /// ```
        public var placement: CommonParameterPlacement = .query

        /// Creates the defaults: no common values.
        public init() {}
    }

    /// How calls run side by side (``APIClient/Configuration/tasks``).
    public struct Tasks: Sendable {
        /// How many calls run at once, client-wide. Default ``ConcurrencyLimit/unlimited``.
        public var concurrency: ConcurrencyLimit = .unlimited
        /// How many calls of one tag run at once. Default none.
        public var tagConcurrency: [String: ConcurrencyLimit] = [:]
        /// What happens when a call starts with the identifier of a running one. Default
        /// ``IdentifierConflict/cancelPrevious``.
        public var identifierConflict: IdentifierConflict = .cancelPrevious
        /// Whether identical in-flight GET/HEAD requests share one transport request. Default `false`.
        public var deduplicatesRequests: Bool = false
        /// Whether the tasks the client starts itself — ``APIClient/start(_:)``,
        /// ``APIClient/request(_:configure:)-(String,_)`` and calls shared by identifier, group or
        /// de-duplication — run on the transport's ``Transport/preferredTaskExecutor``.
        /// Default `false`: your code (middlewares, decoders, callbacks) never runs on an event
        /// loop unless you opt in.
        ///
        /// What it buys: with AsyncHTTPClient, a response resumes the waiting task on the event
        /// loop where it arrived, with no hop to another thread (a few percent more requests
        /// per second in the benchmarks). What it risks: while your code runs there, that loop
        /// serves no other connection of the client — a middleware that reads a file, a keychain
        /// lookup or a slow decode stalls every call sharing the loop. Opt in only when the code
        /// in your calls never blocks.
        public var usesTransportExecutor: Bool = false

        /// Creates the defaults.
        public init() {}
    }

    /// Callback calls (``APIClient/Configuration/callbacks``), as RFAPI had them.
    public struct Callbacks: Sendable {
        /// Where callbacks of ``APIClient/request(_:configure:)-(String,_)`` run. Default ``CallbackDelivery/mainActor``.
        public var delivery: CallbackDelivery = .mainActor
        /// Sees every failure of a callback call first (never a cancellation); return `true`
        /// to consume it, so the call's own `failure` is not called (RFAPI's central error
        /// handler). ``CallbackFailure/callHandlesFailure`` tells whether the call has a
        /// `failure` of its own; when it has none, this is where its error is reported.
        /// Default `nil`.
        ///
        /// ```swift
        /// configuration.callbacks.errorHandler = { failure in
        ///     if !failure.callHandlesFailure { await banner.show(failure.error) }
        ///     return false
        /// }
        /// ```
        public var errorHandler: (@Sendable (CallbackFailure) async -> Bool)? = nil

        /// Creates the defaults.
        public init() {}
    }

    /// Logs, metrics, traces, recordings and observers (``APIClient/Configuration/observability``).
    ///
    /// ```swift
    /// configuration.observability.logger = Logger(label: "api")
    /// configuration.observability.recorder = HARRecorder(fileURL: URL(fileURLWithPath: "session.har"))
    /// ```
    public struct Observability: Sendable {
        /// Where Callsign logs: `debug` and `trace` only, one line per call and two per attempt,
        /// secrets masked. Errors are thrown, never logged at `error`. A request's own
        /// ``Request/Fields/logger`` wins. Default `nil`: silent.
        public var logger: Logger? = nil
        /// What is hidden in logs, cURL lines, error descriptions and HAR files. Default ``Redaction/default``.
        public var redaction: Redaction = .default
        /// Where metrics go. Default `nil`: the factory bootstrapped in `MetricsSystem` (none: no-op).
        /// Bootstrap `MetricsSystem` before creating clients, as swift-metrics asks: a client that
        /// found no metrics backend, no tracer and no logger when it was created leaves its
        /// observability stages out of the chain, at no cost per call.
        public var metricsFactory: (any MetricsFactory)? = nil
        /// Who traces calls. Default `nil`: the tracer bootstrapped in `InstrumentationSystem`
        /// (none: no spans, no `traceparent`), read when the client is created.
        public var tracer: (any Tracer)? = nil
        /// The longest body shown by `trace`-level logs. Default 4 KiB.
        public var maximumLoggedBodySize: Int = 4096
        /// Records every attempt into an HTTP Archive, at the ``MiddlewareStage/recording``
        /// stage. Default `nil`.
        public var recorder: HARRecorder? = nil
        /// Told when calls start, move bytes, are retried and end, and how many are running
        /// (a network activity indicator, a loading HUD, `callsign call --verbose`). Default none.
        ///
        /// ```swift
        /// configuration.observability.observers = [Spinner()]
        /// ```
        public var observers: [any CallObserver] = []

        /// Creates the defaults: silent.
        public init() {}
    }
}

extension APIClient {
    /// The library's version.
    public static let version = "0.1.0"
}
