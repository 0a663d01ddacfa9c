import Foundation
import HTTPTypes
import Logging
import Tracing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The entry point: calls APIs by name, by endpoint value or through a fluent builder.
///
/// ```swift
/// let client = APIClient(definitions: try APIDefinitions(contentsOf: apiFile))
///
/// // 1. by name, with a definition's rules
/// let topics = try await client.call("TopicListRecommended", parameters: ["page": 1], as: [Topic].self)
/// // 2. by endpoint value
/// let board = try await client.send(Boards.show(id: 7)).validate().decode(Board.self)
/// // 3. by builder
/// let users = try await client.get("/v1/\(roomID)/users").tag("system1").send().decode([User].self)
/// ```
///
/// A client is an immutable, `Sendable` value holder: share one across your app. Every call
/// throws only ``APIError``.
public final class APIClient: Sendable {
    /// The API definitions calls by name use.
    public let definitions: APIDefinitions
    /// The client's settings.
    public let configuration: Configuration
    /// The transport that sends requests.
    public let transport: any Transport
    /// Where ``StorePolicy/offline`` requests wait: the configuration's, or this client's own
    /// in-memory queue.
    public let offlineQueue: any OfflineQueueStorage
    /// Which origins can be reached, as this client learns it (or the one it shares,
    /// ``Configuration/Offline/reachability``).
    ///
    /// ```swift
    /// for await change in client.reachability.changes { print(change.origin ?? "network", change.status) }
    /// ```
    public let reachability: Reachability
    /// The automatic drain of ``offlineQueue`` (``Configuration/Offline/drain``).
    let drain: OfflineDrain
    /// Where the tasks the client starts itself run: the transport's preferred executor, when
    /// the configuration opts in.
    let taskExecutor: (any TaskExecutor)?
    /// The client's middleware chains, built once.
    let pipeline: Pipeline
    /// What is secret in this client's calls: the configuration's redaction widened by its
    /// authentication, worked out once.
    let credentialRedaction: Redaction
    /// Whether ``credentialRedaction`` differs from the default, so calls must carry it.
    let redactsMoreThanDefault: Bool
    /// The client's ``CallObserver``s.
    let observers: CallObservers
    /// How responses are judged, from the configuration.
    let responseSettings: ResponseSettings
    /// Builds requests' URLs and wire forms.
    let factory: RequestFactory
    /// Running calls by identifier, group and de-duplication key.
    let registry = CallRegistry()
    let limiter: AsyncLimiter?
    let tagLimiters: [String: AsyncLimiter]
    let activity = ActivityCounter()
    /// What loading the definitions warned about, and definitions whose Response Class is not
    /// registered (``ResponseClasses``); each is also logged at creation.
    public let warnings: [String]

    /// A client with no definitions, the default configuration and the platform's default
    /// transport; handy for one-off requests with full URLs.
    public static let shared = APIClient()

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - definitions: the APIs to call by name. Default: none.
    ///   - configuration: settings. Default ``Configuration/default``.
    ///   - transport: how bytes are sent. Default ``defaultTransport``: AsyncHTTPClient on
    ///     Linux, URLSession on Apple platforms.
    public init(
        definitions: APIDefinitions = APIDefinitions(), configuration: Configuration = .default,
        transport: (any Transport)? = nil
    ) {
        self.definitions = definitions
        self.configuration = configuration
        let transport = transport ?? Self.defaultTransport
        self.transport = transport
        self.taskExecutor = configuration.tasks.usesTransportExecutor ? transport.preferredTaskExecutor : nil
        let offlineQueue = configuration.offline.queue ?? MemoryOfflineQueue()
        self.offlineQueue = offlineQueue
        let factory = RequestFactory(configuration: configuration)
        self.factory = factory
        credentialRedaction = configuration.credentialRedaction
        redactsMoreThanDefault = credentialRedaction != .default
        let observers = CallObservers(observers: configuration.observability.observers)
        self.observers = observers
        let reachability = configuration.offline.reachability ?? Reachability()
        self.reachability = reachability
        let drain = OfflineDrain(configuration: configuration, queue: offlineQueue, reachability: reachability)
        self.drain = drain
        self.pipeline = Pipeline(
            configuration: configuration, definitions: definitions, offlineQueue: offlineQueue, transport: transport, factory: factory,
            observers: observers, reachability: reachability, drain: drain)
        self.limiter = configuration.tasks.concurrency.maximum.map(AsyncLimiter.init(limit:))
        self.tagLimiters = configuration.tasks.tagConcurrency.compactMapValues { $0.maximum.map(AsyncLimiter.init(limit:)) }
        self.responseSettings = ResponseSettings(
            acceptedStatusCodes: configuration.responses.acceptedStatusCodes, envelope: configuration.responses.envelope,
            decoder: configuration.responses.decoder, validators: configuration.responses.validators,
            maximumJSONDepth: configuration.limits.maximumJSONDepth, classes: configuration.responses.classes,
            language: configuration.messageLanguage, overrides: configuration.messageOverrides)
        self.warnings = (definitions.warningMessages + configuration.responses.classes.warnings(for: definitions))
            .map { $0.resolved(in: configuration.messageLanguage, overrides: configuration.messageOverrides) }
        if let logger = configuration.observability.logger {
            for warning in warnings { logger.warning("definitions warning", metadata: ["callsign.warning": "\(warning)"]) }
        }
        drain.attach(self)
    }

    deinit {
        drain.stop()
    }

    /// The transport a client uses when given none: a process-wide AsyncHTTPClient transport on
    /// Linux (with the package's `AsyncHTTPClient` trait, on by default), a process-wide URLSession
    /// transport on Apple platforms and wherever that trait is off.
    public static var defaultTransport: any Transport {
        #if AsyncHTTPClient && (os(Linux) || os(Android) || os(Windows))
        AsyncHTTPClientTransport.shared
        #else
        sharedURLSessionTransport
        #endif
    }

    #if !(AsyncHTTPClient && (os(Linux) || os(Android) || os(Windows)))
    private static let sharedURLSessionTransport = URLSessionTransport()
    #endif

    // MARK: - By name

    /// Calls the API with this name and decodes its answer.
    ///
    /// The definition's rules build the request (path template, method, headers, content type);
    /// the response is validated (status, envelope) and decoded as `T`.
    ///
    /// ```swift
    /// let profile = try await client.call("UserProfile", parameters: ["user_id": 42], as: Profile.self)
    /// ```
    /// - Throws: ``APIError``: ``APIError/Code/unknownAPI`` (with near matches),
    ///   ``APIError/Code/invalidRequest``, a transport error, ``APIError/Code/unacceptableStatus``,
    ///   ``APIError/Code/envelope`` or ``APIError/Code/decoding``.
    public func call<T: Decodable>(
        _ name: String, parameters: Parameters = [:], headers: Headers = [:], as type: T.Type
    ) async throws(APIError) -> T {
        let request = try request(named: name, parameters: parameters, headers: headers)
        // Decoding checks the body as JSON, so validation does not scan it first.
        let response = try Self.validated(await perform(Call(request)), decodingNext: true)
        if response.request.responseType == .void, let empty = EmptyResponse() as? T { return empty }
        return try response.decode(T.self)
    }

    /// Calls the API with this name and returns its validated response.
    ///
    /// ```swift
    /// let response = try await client.call("UserLogout")
    /// ```
    @discardableResult
    public func call(_ name: String, parameters: Parameters = [:], headers: Headers = [:]) async throws(APIError) -> Response {
        // Building and validating happen in synchronous helpers: this function's async frame,
        // held by every call waiting for a concurrency slot, keeps none of their temporaries.
        let request = try request(named: name, parameters: parameters, headers: headers)
        return try Self.validated(await perform(Call(request)))
    }

    @inline(never)
    private func request(named name: String, parameters: Parameters, headers: Headers) throws(APIError) -> Request {
        try definitions.definition(named: name).request(parameters: parameters, headers: headers)
    }

    @inline(never)
    private static func validated(_ response: Response, decodingNext: Bool = false) throws(APIError) -> Response {
        try response.validate(checkingDeclaredJSON: !decodingNext)
    }

    // MARK: - By value

    /// Sends the request an endpoint value describes. The response is not validated: call
    /// ``Response/validate()`` or ``Response/decode(_:decoder:)``.
    ///
    /// ```swift
    /// let board = try await client.send(Boards.show(id: 7)).validate().decode(Board.self)
    /// ```
    public func send<E: Endpoint>(_ endpoint: E) async throws(APIError) -> Response {
        try await perform(Call(endpoint))
    }

    /// Sends a request. The response is not validated: call ``Response/validate()`` or
    /// ``Response/decode(_:decoder:)``.
    ///
    /// ```swift
    /// let response = try await client.send(.get("https://example.com/health"))
    /// ```
    public func send(_ request: Request) async throws(APIError) -> Response {
        try await perform(Call(request))
    }
}
