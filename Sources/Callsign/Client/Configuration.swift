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
        // Every field lives in one copy-on-write box (see `CopyOnWrite`): a configuration is one
        // pointer wide, so every middleware context and hop down the chain copies a pointer.
        struct Fields: Sendable {
            var baseURL: URL? = nil
            var headers: Headers = ["User-Agent": "Callsign/\(APIClient.version)"]
            var timeout: Duration = .seconds(60)
            var decoder: JSONDecoder = JSONDecoder()
            var encoder: JSONEncoder = JSONEncoder()
            var maxResponseBodySize: Int = 64 * 1024 * 1024
            var decompression: DecompressionPolicy = .default
            var logger: Logger? = nil
            var envelope: EnvelopePolicy? = nil
            var encoders: ParameterEncoders = ParameterEncoders()
            var acceptedStatusCodes: StatusCodes = .successful
            var validators: [any ResponseValidator] = []
            var middlewares: [any Middleware] = []
            var definitionMiddlewares: [String: [any Middleware]] = [:]
            var beforeEach: (@Sendable (Request) async throws -> Request)? = nil
            var preProcess: (@Sendable (HTTPRequest) async throws -> HTTPRequest)? = nil
            var commonParameters: (@Sendable (_ tag: String?) async throws -> Parameters)? = nil
            var commonHeaders: (@Sendable (_ tag: String?) async throws -> Headers)? = nil
            var commonParameterPlacement: CommonParameterPlacement = .parameters
            var clientInfo: ClientInfo? = nil
            var redirects: RedirectPolicy = .default
            var authentication: Authentication? = nil
            var cache: HTTPCache? = nil
            var offlineQueue: (any OfflineQueueStorage)? = nil
            var insertions: [Insertion] = []
            var retry: RetryPolicy = .default
            var deadline: Duration? = nil
            var clock: any CallClock = SystemClock()
            var concurrency: ConcurrencyLimit = .unlimited
            var tagConcurrency: [String: ConcurrencyLimit] = [:]
            var identifierConflict: IdentifierConflict = .cancelPrevious
            var deduplicatesRequests: Bool = false
            var callbackDelivery: CallbackDelivery = .mainActor
            var usesTransportExecutor: Bool = false
            var errorHandler: (@Sendable (APIError) async -> Bool)? = nil
            var activityObserver: (any ActivityObserver)? = nil
            var attemptObserver: (@Sendable (AttemptReport) -> Void)? = nil
            var redaction: Redaction = .default
            var metricsFactory: (any MetricsFactory)? = nil
            var tracer: (any Tracer)? = nil
            var maximumLoggedBodySize: Int = 4096
            var limits: Limits = .default
        }

        private var storage: CopyOnWrite<Fields>

        /// The base URL when neither the request nor its definition has one. Default `nil`.
        public var baseURL: URL? {
            get { storage.value.baseURL }
            _modify { yield &storage.value.baseURL }
        }
        /// Headers sent with every request; a definition's or call's header of the same name
        /// wins. Default: a `User-Agent` naming Callsign.
        public var headers: Headers {
            get { storage.value.headers }
            _modify { yield &storage.value.headers }
        }
        /// The time limit for one attempt: sending, waiting and reading the whole body.
        /// Default 60 seconds.
        public var timeout: Duration {
            get { storage.value.timeout }
            _modify { yield &storage.value.timeout }
        }
        /// The decoder ``Response/decode(_:decoder:)`` uses. Default: a plain `JSONDecoder`.
        public var decoder: JSONDecoder {
            get { storage.value.decoder }
            _modify { yield &storage.value.decoder }
        }
        /// The encoder for `Encodable` bodies built by the client. Default: a plain `JSONEncoder`.
        public var encoder: JSONEncoder {
            get { storage.value.encoder }
            _modify { yield &storage.value.encoder }
        }
        /// The largest response body read into memory; a larger one fails with
        /// ``APIError/Code/responseTooLarge`` without reading further. Default 64 MiB.
        public var maxResponseBodySize: Int {
            get { storage.value.maxResponseBodySize }
            _modify { yield &storage.value.maxResponseBodySize }
        }
        /// Bounds on response heads and JSON bodies, so a hostile server gets a clear error.
        /// Default ``Limits/default``.
        public var limits: Limits {
            get { storage.value.limits }
            _modify { yield &storage.value.limits }
        }
        /// Whether compressed answers are asked for and decoded, with the limits that stop a
        /// decompression bomb. Default ``DecompressionPolicy/default``.
        public var decompression: DecompressionPolicy {
            get { storage.value.decompression }
            _modify { yield &storage.value.decompression }
        }
        /// Where Callsign logs. Default `nil`: silent.
        public var logger: Logger? {
            get { storage.value.logger }
            _modify { yield &storage.value.logger }
        }
        /// The adaptive envelope for every response, unless a definition or request turns it
        /// off. Default `nil` (off).
        public var envelope: EnvelopePolicy? {
            get { storage.value.envelope }
            _modify { yield &storage.value.envelope }
        }
        /// Parameter encoders by content type, and the query string rules. Default: the built-ins.
        public var encoders: ParameterEncoders {
            get { storage.value.encoders }
            _modify { yield &storage.value.encoders }
        }
        /// Statuses ``Response/validate()`` accepts when the request does not say. Default 200–299.
        public var acceptedStatusCodes: StatusCodes {
            get { storage.value.acceptedStatusCodes }
            _modify { yield &storage.value.acceptedStatusCodes }
        }
        /// Extra checks ``Response/validate()`` runs on every response. Default none.
        public var validators: [any ResponseValidator] {
            get { storage.value.validators }
            _modify { yield &storage.value.validators }
        }

        // MARK: Pipeline
        /// Middlewares that run first, outermost first (after ``beforeEach``). Default none.
        public var middlewares: [any Middleware] {
            get { storage.value.middlewares }
            _modify { yield &storage.value.middlewares }
        }
        /// Middlewares for calls of one API name, run after ``middlewares``. Default none.
        public var definitionMiddlewares: [String: [any Middleware]] {
            get { storage.value.definitionMiddlewares }
            _modify { yield &storage.value.definitionMiddlewares }
        }
        /// Changes every ``Request`` before anything else runs (Malibu's `beforeEach`).
        /// Default `nil`.
        ///
        /// ```swift
        /// configuration.beforeEach = { $0.adding(parameters: ["userId": "12345"]) }
        /// ```
        public var beforeEach: (@Sendable (Request) async throws -> Request)? {
            get { storage.value.beforeEach }
            _modify { yield &storage.value.beforeEach }
        }
        /// Changes the final `HTTPRequest` just before the transport sends it (Malibu's
        /// `preProcessRequest`). Default `nil`.
        public var preProcess: (@Sendable (HTTPRequest) async throws -> HTTPRequest)? {
            get { storage.value.preProcess }
            _modify { yield &storage.value.preProcess }
        }
        /// Parameters added to every request, computed per request from its tag (xAPI's common
        /// parameters). A call's own parameter of the same name wins. Default `nil`.
        ///
        /// ```swift
        /// configuration.commonParameters = { tag in tag == "system1" ? ["app": "demo", "ts": .int(now())] : [:] }
        /// ```
        public var commonParameters: (@Sendable (_ tag: String?) async throws -> Parameters)? {
            get { storage.value.commonParameters }
            _modify { yield &storage.value.commonParameters }
        }
        /// Headers added to every request, computed per request from its tag (xAPI's common
        /// headers). A call's own header of the same name wins. Default `nil`.
        public var commonHeaders: (@Sendable (_ tag: String?) async throws -> Headers)? {
            get { storage.value.commonHeaders }
            _modify { yield &storage.value.commonHeaders }
        }
        /// Where common parameters go when the request does not say. Default ``CommonParameterPlacement/parameters``.
        public var commonParameterPlacement: CommonParameterPlacement {
            get { storage.value.commonParameterPlacement }
            _modify { yield &storage.value.commonParameterPlacement }
        }
        /// Client-info headers (`X-Client-OS`, …), opt-in. Default `nil`.
        public var clientInfo: ClientInfo? {
            get { storage.value.clientInfo }
            _modify { yield &storage.value.clientInfo }
        }
        /// How redirects are followed. Default ``RedirectPolicy/default`` (5 hops, no downgrade).
        public var redirects: RedirectPolicy {
            get { storage.value.redirects }
            _modify { yield &storage.value.redirects }
        }
        /// Credentials for requests that need authorization. Default `nil`.
        public var authentication: Authentication? {
            get { storage.value.authentication }
            _modify { yield &storage.value.authentication }
        }
        /// The HTTP cache (RFC 9111). Default `nil`: no cache.
        ///
        /// ```swift
        /// configuration.cache = .memory(byteBudget: 16 << 20)
        /// configuration.cache = HTTPCache(storage: SQLiteCacheStorage(directory: cacheDirectory))   // CallsignSQLite
        /// ```
        public var cache: HTTPCache? {
            get { storage.value.cache }
            _modify { yield &storage.value.cache }
        }
        /// Where requests with ``StorePolicy/offline`` wait while the server cannot be reached.
        /// Default `nil`: each client keeps its own ``MemoryOfflineQueue`` (lost when the process
        /// ends); `SQLiteOfflineQueue` from `CallsignSQLite` keeps them on disk.
        public var offlineQueue: (any OfflineQueueStorage)? {
            get { storage.value.offlineQueue }
            _modify { yield &storage.value.offlineQueue }
        }
        /// Middlewares inserted relative to built-in stages.
        var insertions: [Insertion] {
            get { storage.value.insertions }
            _modify { yield &storage.value.insertions }
        }

        // MARK: Reliability and task control
        /// How failed attempts are retried. Default ``RetryPolicy/default``: 3 attempts for
        /// idempotent requests, exponential back-off with jitter, `Retry-After` honoured.
        public var retry: RetryPolicy {
            get { storage.value.retry }
            _modify { yield &storage.value.retry }
        }
        /// One time limit for each whole call (APE's abort-after). Default `nil`: none.
        public var deadline: Duration? {
            get { storage.value.deadline }
            _modify { yield &storage.value.deadline }
        }
        /// The clock for retry waits and deadlines. Default ``SystemClock``.
        public var clock: any CallClock {
            get { storage.value.clock }
            _modify { yield &storage.value.clock }
        }
        /// How many calls run at once, client-wide. Default ``ConcurrencyLimit/unlimited``.
        public var concurrency: ConcurrencyLimit {
            get { storage.value.concurrency }
            _modify { yield &storage.value.concurrency }
        }
        /// How many calls of one tag run at once. Default none.
        public var tagConcurrency: [String: ConcurrencyLimit] {
            get { storage.value.tagConcurrency }
            _modify { yield &storage.value.tagConcurrency }
        }
        /// What happens when a call starts with the identifier of a running one. Default
        /// ``IdentifierConflict/cancelPrevious``.
        public var identifierConflict: IdentifierConflict {
            get { storage.value.identifierConflict }
            _modify { yield &storage.value.identifierConflict }
        }
        /// Whether identical in-flight GET/HEAD requests share one transport request. Default `false`.
        public var deduplicatesRequests: Bool {
            get { storage.value.deduplicatesRequests }
            _modify { yield &storage.value.deduplicatesRequests }
        }
        /// Whether the tasks the client starts itself — ``APIClient/start(_:)``,
        /// ``APIClient/request(_:configure:)`` and calls shared by identifier, group or
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
        public var usesTransportExecutor: Bool {
            get { storage.value.usesTransportExecutor }
            _modify { yield &storage.value.usesTransportExecutor }
        }
        /// Where callbacks of ``APIClient/request(_:configure:)`` run. Default ``CallbackDelivery/mainActor``.
        public var callbackDelivery: CallbackDelivery {
            get { storage.value.callbackDelivery }
            _modify { yield &storage.value.callbackDelivery }
        }
        /// Sees every failure of a callback call first; return `true` to consume it, so the
        /// call's own `failure` is not called (RFAPI's central error handler). Default `nil`.
        public var errorHandler: (@Sendable (APIError) async -> Bool)? {
            get { storage.value.errorHandler }
            _modify { yield &storage.value.errorHandler }
        }
        /// Told when calls start, progress and end, and how many are active. Default `nil`.
        public var activityObserver: (any ActivityObserver)? {
            get { storage.value.activityObserver }
            _modify { yield &storage.value.activityObserver }
        }
        /// Told about every retried attempt (used by `callsign call --verbose`). Default `nil`.
        public var attemptObserver: (@Sendable (AttemptReport) -> Void)? {
            get { storage.value.attemptObserver }
            _modify { yield &storage.value.attemptObserver }
        }

        // MARK: Observability
        /// What is hidden in logs, cURL lines, error descriptions and HAR files. Default ``Redaction/default``.
        public var redaction: Redaction {
            get { storage.value.redaction }
            _modify { yield &storage.value.redaction }
        }
        /// Where metrics go. Default `nil`: the factory bootstrapped in `MetricsSystem` (none: no-op).
        public var metricsFactory: (any MetricsFactory)? {
            get { storage.value.metricsFactory }
            _modify { yield &storage.value.metricsFactory }
        }
        /// Who traces calls. Default `nil`: the tracer bootstrapped in `InstrumentationSystem`
        /// (none: no spans, no `traceparent`).
        public var tracer: (any Tracer)? {
            get { storage.value.tracer }
            _modify { yield &storage.value.tracer }
        }
        /// The longest body shown by `trace`-level logs. Default 4 KiB.
        public var maximumLoggedBodySize: Int {
            get { storage.value.maximumLoggedBodySize }
            _modify { yield &storage.value.maximumLoggedBodySize }
        }

        /// The defaults.
        public static let `default` = Configuration()

        /// ``redaction`` widened by everything the authentication sends: its header names and
        /// parameter names are secret wherever they appear.
        var credentialRedaction: Redaction {
            var widened = redaction
            if let authentication {
                widened.secretHeaders.insert("authorization")
                widened.secretHeaders.formUnion(authentication.headers.fields.map { $0.name.lowercased() })
                widened.secretQueryNames.formUnion(authentication.parameters.keys.map { $0.lowercased() })
                widened.secretBodyFields.formUnion(authentication.parameters.keys.map { $0.lowercased() })
            }
            return widened
        }

        /// Creates the default configuration.
        public init() {
            storage = CopyOnWrite(Fields())
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
