import Foundation

/// The fixed parts of a client's middleware chain, in the documented order, built once per client.
struct Pipeline: Sendable {
    /// `beforeEach` and the configuration's middlewares: they run first.
    let leading: [any Middleware]
    /// The built-in stages with the middlewares inserted around them.
    let builtIns: [any Middleware]
    /// The stages a replayed offline request runs: everything below the offline stage.
    let belowOffline: [any Middleware]
    /// ``builtIns`` without the offline stage, for requests that are never queued (most): one
    /// closure fewer per call.
    let withoutOffline: [any Middleware]

    init(configuration: APIClient.Configuration, definitions: APIDefinitions, offlineQueue: any OfflineQueueStorage) {
        var leading: [any Middleware] = []
        if let beforeEach = configuration.beforeEach { leading.append(BeforeEachMiddleware(change: beforeEach)) }
        leading += configuration.middlewares
        self.leading = leading

        var stages: [MiddlewareStage: any Middleware] = [:]
        if configuration.commonParameters != nil || configuration.commonHeaders != nil {
            stages[.commonParameters] = CommonParametersMiddleware(
                parameters: configuration.commonParameters, headers: configuration.commonHeaders,
                placement: configuration.commonParameterPlacement)
        }
        if let clientInfo = configuration.clientInfo {
            stages[.clientInfo] = ClientInfoMiddleware(headers: clientInfo.headers)
        }
        stages[.offline] = OfflineStoreMiddleware(queue: offlineQueue)
        stages[.deadline] = DeadlineMiddleware(clock: configuration.clock, defaultDeadline: configuration.deadline)
        stages[.retry] = RetryMiddleware(clock: configuration.clock, defaultPolicy: configuration.retry)
        stages[.redirects] = RedirectMiddleware(policy: configuration.redirects)
        if let authentication = configuration.authentication {
            stages[.authentication] = AuthenticationMiddleware(
                authentication: authentication,
                trustedOrigins: Self.trustedOrigins(configuration: configuration, definitions: definitions))
        }

        if let cache = configuration.cache {
            stages[.cache] = CacheMiddleware(cache: cache)
        }

        var builtIns: [any Middleware] = []
        var withoutOffline: [any Middleware] = []
        var replayStart = 0
        for stage in MiddlewareStage.order {
            let before = configuration.insertions.filter { $0.stage == stage && $0.placement == .before }.map(\.middleware)
            let after = configuration.insertions.filter { $0.stage == stage && $0.placement == .after }.map(\.middleware)
            builtIns += before
            withoutOffline += before
            if let middleware = stages[stage] {
                builtIns.append(middleware)
                if stage != .offline { withoutOffline.append(middleware) }
            }
            builtIns += after
            withoutOffline += after
            if stage == .offline { replayStart = builtIns.count }
        }
        self.builtIns = builtIns
        self.withoutOffline = withoutOffline
        self.belowOffline = Array(builtIns[replayStart...])
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
