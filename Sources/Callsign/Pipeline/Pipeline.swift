import Foundation

/// A client's middleware chains, built once from the one table of stages.
///
/// ```
///  call ─► observability ─► your middlewares ─► commonParameters ─► clientInfo ─► offline ─► deadline
///       ─► retry ─► redirects ─► authentication ─► cookies ─► cache ─► recording ─► timeout ─► body
///       ─► decompression ─► encoding ══► signing ─► your wire middlewares ─► mocks ─► transport
///        (request seam: Request / Response values)     (wire seam: HTTP head + body stream)
/// ```
struct Pipeline: Sendable {
    /// One row of the table: a built-in stage, or the place where your middlewares go, with how
    /// a client makes it (`nil`: the stage has nothing to do for this client and is left out).
    struct Row: Sendable {
        enum Kind: Sendable {
            case request(MiddlewareStage, @Sendable (Ingredients) -> (any Middleware)?)
            case wire(WireStage, @Sendable (Ingredients) -> (any WireMiddleware)?)
            /// ``APIClient/Configuration/middlewares``, then each call's own.
            case yourMiddlewares
            /// ``APIClient/Configuration/wireMiddlewares``.
            case yourWireMiddlewares
        }

        let kind: Kind
        /// A replayed offline request starts with the stage below this one (after the
        /// outermost stage): what ran above it ran when the request was queued.
        var replayStartsBelow = false

        var requestStage: MiddlewareStage? {
            if case .request(let stage, _) = kind { return stage }
            return nil
        }

        var wireStage: WireStage? {
            if case .wire(let stage, _) = kind { return stage }
            return nil
        }
    }

    /// What the stages are made from: the client's configuration, definitions, queue,
    /// transport and request factory, and the wire chain the encoding stage hands requests to.
    struct Ingredients: Sendable {
        let configuration: APIClient.Configuration
        let definitions: APIDefinitions
        let offlineQueue: any OfflineQueueStorage
        let transport: any Transport
        let factory: RequestFactory
        let telemetry: Telemetry
        let observers: CallObservers
        var wireChain: [any WireMiddleware] = []
    }

    /// The pipeline: every built-in stage in order, and how each is made. ``MiddlewareStage/order``,
    /// ``WireStage/order``, the documentation and its test all read this table.
    static let table: [Row] = [
        Row(kind: .request(.observability) { ObservabilityStage(telemetry: $0.telemetry, log: CallLogSettings($0.configuration)) }),
        Row(kind: .yourMiddlewares),
        Row(kind: .request(.commonParameters) { CommonParametersStage(common: $0.configuration.common) }),
        Row(kind: .request(.clientInfo) { ingredients in ingredients.configuration.clientInfo.map { ClientInfoStage(headers: $0.headers) } }),
        Row(
            kind: .request(.offline) { OfflineStage(queue: $0.offlineQueue, factory: $0.factory, defaultRetry: $0.configuration.retry) },
            replayStartsBelow: true),
        Row(kind: .request(.deadline) { DeadlineStage(clock: $0.configuration.clock, defaultDeadline: $0.configuration.timeouts.deadline) }),
        Row(kind: .request(.retry) { RetryStage(clock: $0.configuration.clock, defaultPolicy: $0.configuration.retry, log: CallLogSettings($0.configuration), observers: $0.observers) }),
        Row(kind: .request(.redirects) { RedirectStage(policy: $0.configuration.redirects) }),
        Row(kind: .request(.authentication) { ingredients in
            ingredients.configuration.authentication.map {
                AuthenticationStage(authentication: $0, trustedOrigins: trustedOrigins(ingredients.configuration, ingredients.definitions))
            }
        }),
        Row(kind: .request(.cookies) { ingredients in ingredients.configuration.cookies.map(CookieStage.init(jar:)) }),
        Row(kind: .request(.cache) { ingredients in ingredients.configuration.cache.map { CacheStage(cache: $0, factory: ingredients.factory) } }),
        Row(kind: .request(.recording) { RecordingStage(telemetry: $0.telemetry, recorder: $0.configuration.observability.recorder, log: CallLogSettings($0.configuration)) }),
        Row(kind: .request(.timeout) { TimeoutStage($0.configuration.timeouts, transportEnforcesDeadlines: $0.transport.enforcesDeadlines) }),
        Row(kind: .request(.body) { BodyStage(limit: $0.configuration.limits.maximumResponseBodySize) }),
        Row(kind: .request(.decompression) { ingredients in
            guard !ingredients.transport.decodesContentEncoding, ingredients.configuration.responses.decompression.isEnabled else { return nil }
            return DecompressionStage(
                policy: ingredients.configuration.responses.decompression, bodyLimit: ingredients.configuration.limits.maximumResponseBodySize)
        }),
        Row(kind: .request(.encoding) { EncodingStage(factory: $0.factory, limits: $0.configuration.limits, wire: $0.wireChain) }),
        Row(kind: .wire(.signing) { $0.configuration.authentication?.scheme == nil ? nil : SigningStage() }),
        Row(kind: .yourWireMiddlewares),
        Row(kind: .wire(.mocks) { ingredients in ingredients.configuration.mocks.map(MocksStage.init(mocks:)) }),
        Row(kind: .wire(.transport) { TransportStage(transport: $0.transport, configuration: $0.configuration) }),
    ]

    /// The outermost stage with what is inserted around it: every call, replays too, starts here.
    private let outermost: [any Middleware]
    /// ``APIClient/Configuration/middlewares``.
    private let yours: [any Middleware]
    /// The stages below your middlewares, with and without the offline stage (most requests are
    /// never queued), and the stages a replayed request runs below the offline stage.
    private let below: [any Middleware]
    private let belowWithoutOffline: [any Middleware]
    /// The whole chain of a call that adds no middlewares of its own, with and without the
    /// offline stage, and a replay's.
    private let usual: [any Middleware]
    private let usualOffline: [any Middleware]
    private let replay: [any Middleware]

    init(
        configuration: APIClient.Configuration, definitions: APIDefinitions, offlineQueue: any OfflineQueueStorage,
        transport: any Transport, factory: RequestFactory, observers: CallObservers
    ) {
        var ingredients = Ingredients(
            configuration: configuration, definitions: definitions, offlineQueue: offlineQueue, transport: transport, factory: factory,
            telemetry: Telemetry(metricsFactory: configuration.observability.metricsFactory, tracer: configuration.observability.tracer),
            observers: observers)
        let insertions = configuration.insertions

        func wireInserted(_ stage: WireStage, _ placement: APIClient.Configuration.Insertion.Placement) -> [any WireMiddleware] {
            insertions.compactMap { insertion in
                guard insertion.stage == .wire(stage), insertion.placement == placement, case .wire(let middleware) = insertion.middleware
                else { return nil }
                return middleware
            }
        }
        func requestInserted(_ stage: MiddlewareStage, _ placement: APIClient.Configuration.Insertion.Placement) -> [any Middleware] {
            insertions.compactMap { insertion in
                guard insertion.stage == .request(stage), insertion.placement == placement, case .request(let middleware) = insertion.middleware
                else { return nil }
                return middleware
            }
        }

        // The wire seam first: the encoding stage hands requests to it.
        var wire: [any WireMiddleware] = []
        for row in Self.table {
            switch row.kind {
            case .wire(let stage, let make):
                let built = make(ingredients)
                // The transport ends the chain: what is placed after it goes just before it.
                if stage == .transport {
                    wire += wireInserted(stage, .before) + wireInserted(stage, .after) + (built.map { [$0] } ?? [])
                } else {
                    wire += wireInserted(stage, .before) + (built.map { [$0] } ?? []) + wireInserted(stage, .after)
                }
            case .yourWireMiddlewares:
                wire += configuration.wireMiddlewares
            case .request, .yourMiddlewares:
                continue
            }
        }
        ingredients.wireChain = wire

        var outermost: [any Middleware] = []
        var below: [any Middleware] = []
        var belowWithoutOffline: [any Middleware] = []
        var replayStart: Int?
        var reachedYours = false
        for row in Self.table {
            guard case .request(let stage, let make) = row.kind else {
                if case .yourMiddlewares = row.kind { reachedYours = true }
                continue
            }
            let built = make(ingredients).map { [$0] } ?? []
            // The encoding stage ends the request seam: what is placed after it goes just before it.
            let here = stage == .encoding
                ? requestInserted(stage, .before) + requestInserted(stage, .after) + built
                : requestInserted(stage, .before) + built + requestInserted(stage, .after)
            guard reachedYours else {
                outermost += here
                continue
            }
            below += here
            belowWithoutOffline += row.replayStartsBelow ? requestInserted(stage, .before) + requestInserted(stage, .after) : here
            if row.replayStartsBelow { replayStart = below.count }
        }
        self.outermost = outermost
        yours = configuration.middlewares
        self.below = below
        self.belowWithoutOffline = belowWithoutOffline
        usual = outermost + yours + belowWithoutOffline
        usualOffline = outermost + yours + below
        replay = outermost + below[(replayStart ?? 0)...]
    }

    /// The chain for one call: the client's stages around the call's own middlewares.
    func stages(for request: Request, context: MiddlewareContext) -> [any Middleware] {
        if context.isReplay { return replay }
        let offline = request.storePolicy == .offline
        guard request.middlewares.isEmpty else {
            return outermost + yours + request.middlewares + (offline ? below : belowWithoutOffline)
        }
        return offline ? usualOffline : usual  // the usual case: the client's array, not a copy
    }

    /// The trusted origins, the only ones that may receive credentials: the configuration's base
    /// URL, the base URLs and absolute paths of definitions that are trusted
    /// (``APIDefinitions/trustsItsOrigins``: code and local files, not fetched definitions),
    /// and the authentication's additional origins.
    static func trustedOrigins(_ configuration: APIClient.Configuration, _ definitions: APIDefinitions) -> Set<Origin> {
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
