import Foundation

/// A client's middleware chains, in the documented order (see ``MiddlewareStage``), built once.
struct Pipeline: Sendable {
    /// The ``MiddlewareStage/observability`` stage with what is inserted around it: outermost.
    private let outermost: [any Middleware]
    /// `beforeEach` and the configuration's middlewares: they run next.
    private let leading: [any Middleware]
    /// The built-in stages below the user's middlewares, with the middlewares inserted around them.
    private let builtIns: [any Middleware]
    /// ``builtIns`` without the offline stage, for requests that are never queued (most).
    private let withoutOffline: [any Middleware]
    /// The whole chain of a call that adds no middlewares of its own, with and without the offline stage.
    private let usual: [any Middleware]
    private let usualOffline: [any Middleware]
    /// The stages a replayed offline request runs: everything below the offline stage.
    private let belowOffline: [any Middleware]
    /// Middlewares for calls of one API name.
    private let perDefinition: [String: [any Middleware]]

    init(
        configuration: APIClient.Configuration, definitions: APIDefinitions, offlineQueue: any OfflineQueueStorage,
        transport: any Transport, factory: RequestFactory
    ) {
        var leading: [any Middleware] = []
        if let beforeEach = configuration.beforeEach { leading.append(BeforeEachMiddleware(change: beforeEach)) }
        leading += configuration.middlewares
        self.leading = leading
        perDefinition = configuration.definitionMiddlewares

        let stages = Self.builtInStages(
            configuration: configuration, definitions: definitions, offlineQueue: offlineQueue, transport: transport, factory: factory)
        var outermost: [any Middleware] = []
        var builtIns: [any Middleware] = []
        var withoutOffline: [any Middleware] = []
        var replayStart = 0
        for stage in MiddlewareStage.order {
            let before = configuration.insertions.filter { $0.stage == stage && $0.placement == .before }.map(\.middleware)
            let after = configuration.insertions.filter { $0.stage == stage && $0.placement == .after }.map(\.middleware)
            let here = before + (stages[stage].map { [$0] } ?? []) + after
            if stage == .observability {
                outermost = here
                continue
            }
            builtIns += here
            withoutOffline += stage == .offline ? before + after : here
            if stage == .offline { replayStart = builtIns.count }
        }
        self.outermost = outermost
        self.builtIns = builtIns
        self.withoutOffline = withoutOffline
        self.usual = outermost + leading + withoutOffline
        self.usualOffline = outermost + leading + builtIns
        self.belowOffline = outermost + builtIns[replayStart...]
    }

    /// The chain for one call: the client's stages around the definition's and the call's own middlewares.
    func stages(for request: Request, facts: CallFacts) -> [any Middleware] {
        if facts.origin.isReplay { return belowOffline }
        let offline = request.storePolicy == .offline
        let ownDefinition = request.apiName.flatMap { perDefinition[$0] } ?? []
        if ownDefinition.isEmpty, request.middlewares.isEmpty {
            return offline ? usualOffline : usual  // the usual case: the client's array, not a copy
        }
        return outermost + leading + ownDefinition + request.middlewares + (offline ? builtIns : withoutOffline)
    }

    /// The built-in stages a configuration calls for; a stage with nothing to do is left out.
    private static func builtInStages(
        configuration: APIClient.Configuration, definitions: APIDefinitions, offlineQueue: any OfflineQueueStorage,
        transport: any Transport, factory: RequestFactory
    ) -> [MiddlewareStage: any Middleware] {
        var stages: [MiddlewareStage: any Middleware] = [:]
        let observability = configuration.observability
        let telemetry = Telemetry(metricsFactory: observability.metricsFactory, tracer: observability.tracer)
        stages[.observability] = ObservabilityStage(telemetry: telemetry)
        if configuration.common.parameters != nil || configuration.common.headers != nil {
            stages[.commonParameters] = CommonParametersMiddleware(
                parameters: configuration.common.parameters, headers: configuration.common.headers,
                placement: configuration.common.placement)
        }
        if let clientInfo = configuration.clientInfo {
            stages[.clientInfo] = ClientInfoMiddleware(headers: clientInfo.headers)
        }
        stages[.offline] = OfflineStoreMiddleware(queue: offlineQueue, factory: factory)
        stages[.deadline] = DeadlineMiddleware(clock: configuration.clock, defaultDeadline: configuration.timeouts.deadline)
        stages[.retry] = RetryMiddleware(clock: configuration.clock, defaultPolicy: configuration.retry)
        stages[.redirects] = RedirectMiddleware(policy: configuration.redirects)
        if let authentication = configuration.authentication {
            stages[.authentication] = AuthenticationMiddleware(
                authentication: authentication,
                trustedOrigins: Self.trustedOrigins(configuration: configuration, definitions: definitions))
        }
        if let cache = configuration.cache {
            stages[.cache] = CacheMiddleware(cache: cache, factory: factory)
        }
        if let cookies = configuration.cookies {
            stages[.cookies] = CookieStage(jar: cookies)
        }
        stages[.recording] = RecordingStage(telemetry: telemetry, recorder: observability.recorder)
        stages[.timeout] = TimeoutStage(
            attempt: configuration.timeouts.attempt, idle: configuration.timeouts.idle, deadline: configuration.timeouts.deadline,
            transportEnforcesDeadlines: transport.enforcesDeadlines)
        stages[.body] = BodyStage(limit: configuration.limits.maximumResponseBodySize)
        if !transport.decodesContentEncoding, configuration.responses.decompression.isEnabled {
            stages[.decompression] = DecompressionStage(
                policy: configuration.responses.decompression, bodyLimit: configuration.limits.maximumResponseBodySize)
        }
        stages[.encoding] = EncodingStage(factory: factory)
        if let preProcess = configuration.preProcess {
            stages[.preProcess] = PreProcessStage(change: preProcess)
        }
        if let mocks = configuration.mocks {
            stages[.mocks] = MocksStage(mocks: mocks)
        }
        stages[.transport] = TransportStage(transport: transport, limits: configuration.limits, proxy: configuration.proxy, tls: configuration.tls,
            clientCaches: configuration.cache != nil)
        return stages
    }

    /// The trusted origins, the only ones that may receive credentials: the configuration's base
    /// URL, the base URLs and absolute paths of definitions that are trusted
    /// (``APIDefinitions/trustsItsOrigins``: code and local files, not fetched definitions),
    /// and the authentication's additional origins.
    static func trustedOrigins(configuration: APIClient.Configuration, definitions: APIDefinitions) -> Set<Origin> {
        var urls: [URL] = []
        if let base = configuration.baseURL { urls.append(base) }
        if definitions.trustsItsOrigins {
            if let base = definitions.defaultDefinition.baseURL { urls.append(base) }
            urls += definitions.definitions.values.compactMap(\.baseURL)
            urls += definitions.definitions.values.compactMap { definition in
                definition.path.flatMap { APIDefinition.hasScheme($0) ? URL(string: $0) : nil }
            }
        }
        urls += configuration.authentication?.additionalOrigins ?? []
        return Set(urls.compactMap(Origin.init))
    }
}
