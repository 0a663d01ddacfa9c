public import Foundation
public import HTTPTypes
public import Logging
public import Metrics
public import Tracing

extension APIClient {
    /// Everything an ``APIClient`` needs to know that is not an API definition.
    ///
    /// A value with a documented default for every property; adjust a copy with a closure:
    ///
    /// ```swift
    /// let client = APIClient(configuration: .init {
    ///     $0.baseURL = URL(string: "https://api.example.com/")
    ///     $0.timeout = .seconds(15)
    ///     $0.decoder.keyDecodingStrategy = .convertFromSnakeCase
    /// })
    /// ```
    public struct Configuration: Sendable {
        /// The base URL when neither the request nor its definition has one. Default `nil`.
        public var baseURL: URL?
        /// Headers sent with every request; a definition's or call's header of the same name
        /// wins. Default: a `User-Agent` naming Callsign.
        public var headers: Headers
        /// The time limit for one attempt: sending, waiting and reading the whole body.
        /// Default 60 seconds.
        public var timeout: Duration
        /// The decoder ``Response/decode(_:decoder:)`` uses. Default: a plain `JSONDecoder`.
        public var decoder: JSONDecoder
        /// The encoder for `Encodable` bodies built by the client. Default: a plain `JSONEncoder`.
        public var encoder: JSONEncoder
        /// The largest response body read into memory; a larger one fails with
        /// ``APIError/Code/responseTooLarge`` without reading further. Default 64 MiB.
        public var maxResponseBodySize: Int
        /// Whether compressed answers are asked for and decoded, with the limits that stop a
        /// decompression bomb. Default ``DecompressionPolicy/default``.
        public var decompression: DecompressionPolicy
        /// Where Callsign logs. Default `nil`: silent.
        public var logger: Logger?
        /// The adaptive envelope for every response, unless a definition or request turns it
        /// off. Default `nil` (off).
        public var envelope: EnvelopePolicy?
        /// Parameter encoders by content type, and the query string rules. Default: the built-ins.
        public var encoders: ParameterEncoders
        /// Statuses ``Response/validate()`` accepts when the request does not say. Default 200–299.
        public var acceptedStatusCodes: StatusCodes
        /// Extra checks ``Response/validate()`` runs on every response. Default none.
        public var validators: [any ResponseValidator]

        // MARK: Pipeline

        /// Middlewares that run first, outermost first (after ``beforeEach``). Default none.
        public var middlewares: [any Middleware]
        /// Middlewares for calls of one API name, run after ``middlewares``. Default none.
        public var definitionMiddlewares: [String: [any Middleware]]
        /// Changes every ``Request`` before anything else runs (Malibu's `beforeEach`).
        /// Default `nil`.
        ///
        /// ```swift
        /// configuration.beforeEach = { $0.adding(parameters: ["userId": "12345"]) }
        /// ```
        public var beforeEach: (@Sendable (Request) async throws -> Request)?
        /// Changes the final `HTTPRequest` just before the transport sends it (Malibu's
        /// `preProcessRequest`). Default `nil`.
        public var preProcess: (@Sendable (HTTPRequest) async throws -> HTTPRequest)?
        /// Parameters added to every request, computed per request from its tag (xAPI's common
        /// parameters). A call's own parameter of the same name wins. Default `nil`.
        ///
        /// ```swift
        /// configuration.commonParameters = { tag in tag == "system1" ? ["app": "demo", "ts": .int(now())] : [:] }
        /// ```
        public var commonParameters: (@Sendable (_ tag: String?) async throws -> Parameters)?
        /// Headers added to every request, computed per request from its tag (xAPI's common
        /// headers). A call's own header of the same name wins. Default `nil`.
        public var commonHeaders: (@Sendable (_ tag: String?) async throws -> Headers)?
        /// Where common parameters go when the request does not say. Default ``CommonParameterPlacement/parameters``.
        public var commonParameterPlacement: CommonParameterPlacement
        /// Client-info headers (`X-Client-OS`, …), opt-in. Default `nil`.
        public var clientInfo: ClientInfo?
        /// How redirects are followed. Default ``RedirectPolicy/default`` (5 hops, no downgrade).
        public var redirects: RedirectPolicy
        /// Credentials for requests that need authorization. Default `nil`.
        public var authentication: Authentication?
        /// The HTTP cache (RFC 9111). Default `nil`: no cache.
        ///
        /// ```swift
        /// configuration.cache = .memory(byteBudget: 16 << 20)
        /// configuration.cache = HTTPCache(storage: SQLiteCacheStorage(directory: cacheDirectory))   // CallsignSQLite
        /// ```
        public var cache: HTTPCache?
        /// Where requests with ``StorePolicy/offline`` wait while the server cannot be reached.
        /// Default `nil`: each client keeps its own ``MemoryOfflineQueue`` (lost when the process
        /// ends); `SQLiteOfflineQueue` from `CallsignSQLite` keeps them on disk.
        public var offlineQueue: (any OfflineQueueStorage)?
        /// Middlewares inserted relative to built-in stages.
        var insertions: [Insertion]

        // MARK: Reliability and task control

        /// How failed attempts are retried. Default ``RetryPolicy/default``: 3 attempts for
        /// idempotent requests, exponential back-off with jitter, `Retry-After` honoured.
        public var retry: RetryPolicy
        /// One time limit for each whole call (APE's abort-after). Default `nil`: none.
        public var deadline: Duration?
        /// The clock for retry waits and deadlines. Default ``SystemClock``.
        public var clock: any CallClock
        /// How many calls run at once, client-wide. Default ``ConcurrencyLimit/unlimited``.
        public var concurrency: ConcurrencyLimit
        /// How many calls of one tag run at once. Default none.
        public var tagConcurrency: [String: ConcurrencyLimit]
        /// What happens when a call starts with the identifier of a running one. Default
        /// ``IdentifierConflict/cancelPrevious``.
        public var identifierConflict: IdentifierConflict
        /// Whether identical in-flight GET/HEAD requests share one transport request. Default `false`.
        public var deduplicatesRequests: Bool
        /// Where callbacks of ``APIClient/request(_:configure:)`` run. Default ``CallbackDelivery/mainActor``.
        public var callbackDelivery: CallbackDelivery
        /// Sees every failure of a callback call first; return `true` to consume it, so the
        /// call's own `failure` is not called (RFAPI's central error handler). Default `nil`.
        public var errorHandler: (@Sendable (APIError) async -> Bool)?
        /// Told when calls start, progress and end, and how many are active. Default `nil`.
        public var activityObserver: (any ActivityObserver)?
        /// Told about every retried attempt (used by `callsign call --verbose`). Default `nil`.
        public var attemptObserver: (@Sendable (AttemptReport) -> Void)?

        // MARK: Observability

        /// What is hidden in logs, cURL lines, error descriptions and HAR files. Default ``Redaction/default``.
        public var redaction: Redaction
        /// Where metrics go. Default `nil`: the factory bootstrapped in `MetricsSystem` (none: no-op).
        public var metricsFactory: (any MetricsFactory)?
        /// Who traces calls. Default `nil`: the tracer bootstrapped in `InstrumentationSystem`
        /// (none: no spans, no `traceparent`).
        public var tracer: (any Tracer)?
        /// The longest body shown by `trace`-level logs. Default 4 KiB.
        public var maximumLoggedBodySize: Int

        /// The defaults.
        public static let `default` = Configuration()

        /// Creates the default configuration.
        public init() {
            baseURL = nil
            headers = ["User-Agent": "Callsign/\(APIClient.version)"]
            timeout = .seconds(60)
            decoder = JSONDecoder()
            encoder = JSONEncoder()
            maxResponseBodySize = 64 * 1024 * 1024
            decompression = .default
            logger = nil
            envelope = nil
            encoders = ParameterEncoders()
            acceptedStatusCodes = .successful
            validators = []
            middlewares = []
            definitionMiddlewares = [:]
            beforeEach = nil
            preProcess = nil
            commonParameters = nil
            commonHeaders = nil
            commonParameterPlacement = .parameters
            clientInfo = nil
            redirects = .default
            authentication = nil
            insertions = []
            cache = nil
            offlineQueue = nil
            retry = .default
            deadline = nil
            clock = SystemClock()
            concurrency = .unlimited
            tagConcurrency = [:]
            identifierConflict = .cancelPrevious
            deduplicatesRequests = false
            callbackDelivery = .mainActor
            errorHandler = nil
            activityObserver = nil
            attemptObserver = nil
            redaction = .default
            metricsFactory = nil
            tracer = nil
            maximumLoggedBodySize = 4096
        }

        /// Creates the default configuration adjusted by `configure`.
        public init(_ configure: (inout Configuration) -> Void) {
            self.init()
            configure(&self)
        }

        /// A copy adjusted by `configure`.
        public func with(_ configure: (inout Configuration) -> Void) -> Configuration {
            var copy = self
            configure(&copy)
            return copy
        }
    }
}

extension APIClient {
    /// The library's version.
    public static let version = "0.1.0"
}
