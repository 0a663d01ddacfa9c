import Foundation
import Tracing

/// A client's middleware chains, built once from the one table of stages.
///
/// ```
///  call ─► observability ─► your middlewares ─► commonParameters ─► clientInfo ─► offline ─► deadline ─► retry
///       ─► hedging ─► redirects ─► authentication ─► cookies ─► cache ─► circuitBreaker ─► rateLimit ─► recording ─► timeout ─► body
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
        /// What the transport stage learns of each origin.
        let reachability: Reachability
        /// The automatic drain, woken when the offline stage queues a request.
        let drain: OfflineDrain
        var wireChain: [any WireMiddleware] = []
        /// The stages a call may or may not need that this chain has.
        var extras: Extras = []
        /// Whether the call is logged (a logger of the client's or the request's own), traced or
        /// measured: without any of these, the observability and recording stages are left out.
        var isObserved: Bool { extras.contains(.observed) }
        /// The latencies the hedging stage observes, one store for every chain of the client.
        let hedgeLatencies = HedgeLatencies()
    }

    /// The pipeline: every built-in stage in order, and how each is made. ``MiddlewareStage/order``,
    /// ``WireStage/order``, the documentation and its test all read this table.
    static let table: [Row] = [
        Row(kind: .request(.observability) { $0.isObserved ? ObservabilityStage(telemetry: $0.telemetry, log: CallLogSettings($0.configuration)) : nil }),
        Row(kind: .yourMiddlewares),
        Row(kind: .request(.commonParameters) { CommonParametersStage(common: $0.configuration.common) }),
        Row(kind: .request(.clientInfo) { ingredients in ingredients.configuration.clientInfo.map { ClientInfoStage(headers: $0.headers) } }),
        Row(
            kind: .request(.offline) { OfflineStage(queue: $0.offlineQueue, factory: $0.factory, defaultRetry: $0.configuration.retry, drain: $0.drain) },
            replayStartsBelow: true),
        Row(kind: .request(.deadline) { ingredients in
            guard ingredients.extras.contains(.deadline) else { return nil }
            return DeadlineStage(timeouts: ingredients.configuration.timeouts)
        }),
        Row(kind: .request(.retry) { RetryStage(clock: $0.configuration.clock, defaultPolicy: $0.configuration.retry, log: CallLogSettings($0.configuration), observers: $0.observers) }),
        Row(kind: .request(.hedging) { ingredients in
            guard ingredients.extras.contains(.hedging) else { return nil }
            return HedgeStage(
                defaultPolicy: ingredients.configuration.hedging, clock: ingredients.configuration.clock, telemetry: ingredients.telemetry,
                latencies: ingredients.hedgeLatencies)
        }),
        Row(kind: .request(.redirects) { RedirectStage(policy: $0.configuration.redirects) }),
        Row(kind: .request(.authentication) { ingredients in
            ingredients.configuration.authentication.map {
                AuthenticationStage(authentication: $0, gate: CredentialRule.Gate(ingredients.configuration, ingredients.definitions))
            }
        }),
        Row(kind: .request(.cookies) { ingredients in ingredients.configuration.cookies.map(CookieStage.init(jar:)) }),
        Row(kind: .request(.cache) { ingredients in ingredients.configuration.cache.map { CacheStage(cache: $0, factory: ingredients.factory) } }),
        Row(kind: .request(.circuitBreaker) { ingredients in
            ingredients.configuration.circuitBreaker.map {
                CircuitBreakerStage(breaker: $0, clock: ingredients.configuration.clock, telemetry: ingredients.telemetry)
            }
        }),
        Row(kind: .request(.rateLimit) { ingredients in
            ingredients.configuration.rateLimits.map { RateLimitStage(limits: $0, clock: ingredients.configuration.clock, telemetry: ingredients.telemetry) }
        }),
        Row(kind: .request(.recording) { ingredients in
            guard ingredients.isObserved || ingredients.configuration.observability.recorder != nil || !ingredients.observers.isEmpty
            else { return nil }
            return RecordingStage(
                telemetry: ingredients.telemetry, recorder: ingredients.configuration.observability.recorder,
                log: CallLogSettings(ingredients.configuration), observers: ingredients.observers)
        }),
        Row(kind: .request(.timeout) { TimeoutStage($0.configuration.timeouts, transportEnforcesAttemptDeadlines: $0.transport.enforcesAttemptDeadlines) }),
        Row(kind: .request(.body) { BodyStage(limit: $0.configuration.limits.maximumResponseBodySize) }),
        Row(kind: .request(.decompression) { ingredients in
            guard !ingredients.transport.decodesContentEncoding, ingredients.configuration.responses.decompression.isEnabled else { return nil }
            return DecompressionStage(
                policy: ingredients.configuration.responses.decompression, bodyLimit: ingredients.configuration.limits.maximumResponseBodySize)
        }),
        Row(kind: .request(.encoding) { EncodingStage(factory: $0.factory, limits: $0.configuration.limits, wire: $0.wireChain) }),
        Row(kind: .wire(.signing) { $0.configuration.authentication?.scheme == nil ? nil : SigningStage() }),
        Row(kind: .yourWireMiddlewares),
        Row(kind: .wire(.mocks) { ingredients in ingredients.configuration.mocks.map { MocksStage(mocks: $0, bodyLimit: ingredients.configuration.limits.maximumResponseBodySize) } }),
        Row(kind: .wire(.transport) { TransportStage(transport: $0.transport, configuration: $0.configuration, reachability: $0.reachability) }),
    ]

    /// Stages that only some calls need. A client that does not need one for every call leaves
    /// it out of its usual chain, and a call that asks for it gets a chain with it: a feature
    /// that is off costs nothing.
    struct Extras: OptionSet, Sendable {
        let rawValue: Int
        /// The observability and recording stages: the call is logged (a logger of the client's
        /// or the request's own), traced or measured.
        static let observed = Extras(rawValue: 1 << 0)
        /// The hedging stage: the client hedges, or the call (or its definition) asks to.
        static let hedging = Extras(rawValue: 1 << 1)
        /// The deadline stage: the client has a deadline, or the call (or its definition) has one.
        static let deadline = Extras(rawValue: 1 << 2)
        /// Every combination, for the table of chains.
        static let combinations = 1 << 3
    }

    /// The request seam's chains, built once, one per combination of ``Extras`` (the index is
    /// its raw value); combinations that differ only in what every call has share one.
    private let chains: [Chains]
    /// What every call of this client has.
    private let everyCall: Extras

    /// One set of request chains.
    private struct Chains: Sendable {
        /// The outermost stage with what is inserted around it: every call, replays too, starts here.
        let outermost: [any Middleware]
        /// ``APIClient/Configuration/middlewares``.
        let yours: [any Middleware]
        /// The stages below your middlewares, with and without the offline stage (most requests
        /// are never queued).
        let below: [any Middleware]
        let belowWithoutOffline: [any Middleware]
        /// The whole chain of a call that adds no middlewares of its own, with and without the
        /// offline stage, and a replay's: the stages below the offline stage.
        let usual: [any Middleware]
        let usualOffline: [any Middleware]
        let replay: [any Middleware]

        func stages(for request: Request, isReplay: Bool) -> [any Middleware] {
            if isReplay { return replay }
            let offline = request.storePolicy == .offline
            guard request.middlewares.isEmpty else {
                return outermost + yours + request.middlewares + (offline ? below : belowWithoutOffline)
            }
            return offline ? usualOffline : usual  // the usual case: the client's array, not a copy
        }
    }

    init(
        configuration: APIClient.Configuration, definitions: APIDefinitions, offlineQueue: any OfflineQueueStorage,
        transport: any Transport, factory: RequestFactory, observers: CallObservers, reachability: Reachability, drain: OfflineDrain
    ) {
        let telemetry = Telemetry(metricsFactory: configuration.observability.metricsFactory, tracer: configuration.observability.tracer)
        var ingredients = Ingredients(
            configuration: configuration, definitions: definitions, offlineQueue: offlineQueue, transport: transport, factory: factory,
            telemetry: telemetry, observers: observers, reachability: reachability, drain: drain)
        ingredients.wireChain = Self.wireChain(ingredients)
        var everyCall: Extras = []
        if configuration.observability.logger != nil || telemetry.isActive { everyCall.insert(.observed) }
        if configuration.hedging != nil { everyCall.insert(.hedging) }
        if configuration.timeouts.deadline != nil { everyCall.insert(.deadline) }
        // A middleware of yours above them may set a call's deadline or hedging: its calls keep
        // both stages, as every chain had them.
        let order = MiddlewareStage.order
        let hedging = order.firstIndex(of: .hedging) ?? order.count
        let yoursAbove = !configuration.middlewares.isEmpty || configuration.insertions.contains { insertion in
            guard case .request(let stage) = insertion.stage else { return false }
            return (order.firstIndex(of: stage) ?? order.count) <= hedging
        }
        if yoursAbove { everyCall.formUnion([.deadline, .hedging]) }
        self.everyCall = everyCall
        var built: [Int: Chains] = [:]
        var chains: [Chains] = []
        for combination in 0..<Extras.combinations {
            let extras = Extras(rawValue: combination).union(everyCall)
            if let known = built[extras.rawValue] {
                chains.append(known)
                continue
            }
            ingredients.extras = extras
            let made = Self.chains(ingredients)
            built[extras.rawValue] = made
            chains.append(made)
        }
        self.chains = chains
    }

    /// The middlewares placed at `stage`.
    private static func inserted<Kind>(
        _ configuration: APIClient.Configuration, _ stage: APIClient.Configuration.Insertion.Stage,
        _ placement: APIClient.Configuration.Insertion.Placement, as kind: (APIClient.Configuration.Insertion.Kind) -> Kind?
    ) -> [Kind] {
        configuration.insertions.compactMap { insertion in
            insertion.stage == stage && insertion.placement == placement ? kind(insertion.middleware) : nil
        }
    }

    /// The wire seam: the encoding stage hands requests to it.
    private static func wireChain(_ ingredients: Ingredients) -> [any WireMiddleware] {
        func inserted(_ stage: WireStage, _ placement: APIClient.Configuration.Insertion.Placement) -> [any WireMiddleware] {
            Self.inserted(ingredients.configuration, .wire(stage), placement) { if case .wire(let middleware) = $0 { middleware } else { nil } }
        }
        var wire: [any WireMiddleware] = []
        for row in table {
            switch row.kind {
            case .wire(let stage, let make):
                let built = make(ingredients).map { [$0] } ?? []
                // The transport ends the chain: what is placed after it goes just before it.
                wire += stage == .transport
                    ? inserted(stage, .before) + inserted(stage, .after) + built : inserted(stage, .before) + built + inserted(stage, .after)
            case .yourWireMiddlewares:
                wire += ingredients.configuration.wireMiddlewares
            case .request, .yourMiddlewares:
                continue
            }
        }
        return wire
    }

    /// The request seam's chains for `ingredients`.
    private static func chains(_ ingredients: Ingredients) -> Chains {
        func inserted(_ stage: MiddlewareStage, _ placement: APIClient.Configuration.Insertion.Placement) -> [any Middleware] {
            Self.inserted(ingredients.configuration, .request(stage), placement) { if case .request(let middleware) = $0 { middleware } else { nil } }
        }
        var outermost: [any Middleware] = []
        var below: [any Middleware] = []
        var belowWithoutOffline: [any Middleware] = []
        var replayStart: Int?
        var reachedYours = false
        for row in table {
            guard case .request(let stage, let make) = row.kind else {
                if case .yourMiddlewares = row.kind { reachedYours = true }
                continue
            }
            let built = make(ingredients).map { [$0] } ?? []
            // The encoding stage ends the request seam: what is placed after it goes just before it.
            let here = stage == .encoding
                ? inserted(stage, .before) + inserted(stage, .after) + built : inserted(stage, .before) + built + inserted(stage, .after)
            guard reachedYours else {
                outermost += here
                continue
            }
            below += here
            belowWithoutOffline += row.replayStartsBelow ? inserted(stage, .before) + inserted(stage, .after) : here
            if row.replayStartsBelow { replayStart = below.count }
        }
        let yours = ingredients.configuration.middlewares
        return Chains(
            outermost: outermost, yours: yours, below: below, belowWithoutOffline: belowWithoutOffline,
            usual: outermost + yours + belowWithoutOffline, usualOffline: outermost + yours + below,
            replay: outermost + below[(replayStart ?? 0)...])
    }

    /// The chain for one call: the client's stages around the call's own middlewares.
    func stages(for request: Request, context: MiddlewareContext) -> [any Middleware] {
        var extras = everyCall
        // A request's own logger, or a tracer bound around the call (`withTracer`), asks for the
        // observed chain even when the client observes nothing itself.
        if !extras.contains(.observed), request.logger != nil || !(InstrumentationSystem.instrument is NoOpInstrument) {
            extras.insert(.observed)
        }
        if request.hedging?.isEnabled == true { extras.insert(.hedging) }
        // A call's own middlewares run above both stages, and may set either.
        if request.deadline != nil || !request.middlewares.isEmpty { extras.insert(.deadline) }
        if !request.middlewares.isEmpty { extras.insert(.hedging) }
        return chains[extras.rawValue].stages(for: request, isReplay: context.fields.isReplay)
    }
}
