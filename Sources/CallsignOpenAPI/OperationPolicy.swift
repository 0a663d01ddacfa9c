public import Callsign

/// What Callsign does for one operation of a generated client (see ``CallsignClientTransport``):
/// the same per-call settings a `Request` has, chosen by `operationId`.
///
/// ```swift
/// let transport = CallsignClientTransport(client, policies: [
///     "listPets": .cached(for: .seconds(60)),
///     "createOrder": .queuedOffline,
///     "health": OperationPolicy(deadline: .seconds(2), needsAuthorization: false),
/// ])
/// ```
///
/// A policy holds the same `CallOptions` as a `Request` — `policy.hedging`, `policy.deadline`,
/// every option by its name — and they reach the call as they are. The options that say how a
/// body is read (`responseType`, `usesEnvelope`, `responseFormat`, `errorClasses`,
/// `acceptsNullResponse`, `pagination`) have nothing to act on here: the generated code reads the
/// body itself.
@dynamicMemberLookup
public struct OperationPolicy: HoldsCallOptions, Sendable {
    /// The operation's options (see `CallOptions`); each one left `nil` follows the client.
    /// Credentials (`CallOptions.needsAuthorization`) default to `true` here: the document's
    /// `security` decides (`CredentialRule`). A cache policy reads the response into memory so
    /// it can be stored; without one the response streams. A store policy of `.offline` queues
    /// the operation when the server cannot be reached: see ``queuedOffline``.
    public var options: CallOptions
    /// Whether each call gets an `Idempotency-Key` (a new UUID, unless the generated request has
    /// one), kept through every retry and replay. Say so only for a server that honours the
    /// key: it lets Callsign retry a `POST` and queue one whose first attempt may have arrived.
    /// Default `false`.
    public var sendsIdempotencyKey: Bool
    /// Middlewares for this operation only, run after the client's.
    public var middlewares: [any Middleware]

    /// Creates a policy; every setting left out follows the client.
    public init(
        cachePolicy: CachePolicy? = nil, storePolicy: StorePolicy? = nil, sendsIdempotencyKey: Bool = false,
        retry: RetryPolicy? = nil, timeout: Duration? = nil, deadline: Duration? = nil,
        needsAuthorization: Bool? = CredentialRule.defaultNeedsAuthorization(for: .openAPIOperation),
        tag: String? = nil, middlewares: [any Middleware] = []
    ) {
        options = CallOptions()
        options.cachePolicy = cachePolicy
        options.storePolicy = storePolicy
        options.retry = retry
        options.timeout = timeout
        options.deadline = deadline
        options.needsAuthorization = needsAuthorization
        options.tag = tag
        self.sendsIdempotencyKey = sendsIdempotencyKey
        self.middlewares = middlewares
    }

    /// A policy with these options, every one of them (see `CallOptions`); credentials follow
    /// the document's `security` unless `options` says otherwise.
    ///
    /// ```swift
    /// var search = CallOptions(); search.hedging = .after(.milliseconds(150))
    /// let policies: [String: OperationPolicy] = ["searchPets": OperationPolicy(options: search)]
    /// ```
    public init(options: CallOptions, sendsIdempotencyKey: Bool = false, middlewares: [any Middleware] = []) {
        var options = options
        options.needsAuthorization = options.needsAuthorization ?? CredentialRule.defaultNeedsAuthorization(for: .openAPIOperation)
        self.options = options
        self.sendsIdempotencyKey = sendsIdempotencyKey
        self.middlewares = middlewares
    }

    /// Served from the client's cache for `duration` after each answer, whatever the server's
    /// headers say (`CachePolicy.fresh(for:)`).
    ///
    /// ```swift
    /// let policies: [String: OperationPolicy] = ["listPets": .cached(for: .seconds(60))]
    /// ```
    public static func cached(for duration: Duration) -> OperationPolicy {
        OperationPolicy(cachePolicy: .fresh(for: duration))
    }

    /// Queued in the client's offline queue when the server cannot be reached, with an
    /// `Idempotency-Key` that stays the same on every attempt and replay (so also when the first
    /// attempt may have arrived: the server is trusted to recognise the key); replayed by
    /// `APIClient.replay(lease:)`.
    public static var queuedOffline: OperationPolicy {
        OperationPolicy(storePolicy: .offline, sendsIdempotencyKey: true)
    }

    /// Whether the response is read whole (cached operations) rather than streamed.
    var readsWholeResponse: Bool { options.cachePolicy != nil }
}
