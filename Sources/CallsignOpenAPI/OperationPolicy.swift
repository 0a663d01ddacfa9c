public import Callsign

/// What Callsign does for one operation of a generated client (see ``CallsignClientTransport``):
/// the same per-call settings a `Request` has, chosen by `operationId`.
///
/// ```swift
/// let transport = CallsignClientTransport(client, policies: [
///     "listPets": .cached(for: .seconds(60)),
///     "createOrder": .queuedOffline,
///     "health": OperationPolicy(needsAuthorization: false, deadline: .seconds(2)),
/// ])
/// ```
public struct OperationPolicy: Sendable {
    /// How the operation uses the client's HTTP cache; `nil` (the default) leaves the cache out
    /// and streams the response. Any policy reads the response into memory so it can be stored.
    public var cachePolicy: CachePolicy?
    /// Whether the operation is queued offline when the server cannot be reached; `nil` means
    /// `StorePolicy.none`. A queued operation carries one `Idempotency-Key` from its first
    /// attempt through every replay, and the caller hears `APIError.Code.queuedOffline`.
    public var storePolicy: StorePolicy?
    /// Whether each call gets an `Idempotency-Key` (a new UUID, unless the generated request has
    /// one), kept through every retry and replay. Say so only for a server that honours the
    /// key: it lets Callsign retry a `POST` and queue one whose first attempt may have arrived.
    /// Default `false`.
    public var sendsIdempotencyKey: Bool
    /// The retry policy; `nil` uses the client's.
    public var retry: RetryPolicy?
    /// The time limit of one attempt; `nil` uses the client's.
    public var timeout: Duration?
    /// One time limit for the whole operation, retries and waits included; `nil` uses the client's.
    public var deadline: Duration?
    /// Whether the client's credentials are added (to its trusted origins only). Default `true`.
    public var needsAuthorization: Bool
    /// A tag for the client's common parameters and headers (see `Request.tag`).
    public var tag: String?
    /// Middlewares for this operation only, run after the client's.
    public var middlewares: [any Middleware]

    /// Creates a policy; every setting left out follows the client.
    public init(
        cachePolicy: CachePolicy? = nil, storePolicy: StorePolicy? = nil, sendsIdempotencyKey: Bool = false,
        retry: RetryPolicy? = nil, timeout: Duration? = nil, deadline: Duration? = nil, needsAuthorization: Bool = true,
        tag: String? = nil, middlewares: [any Middleware] = []
    ) {
        self.cachePolicy = cachePolicy
        self.storePolicy = storePolicy
        self.sendsIdempotencyKey = sendsIdempotencyKey
        self.retry = retry
        self.timeout = timeout
        self.deadline = deadline
        self.needsAuthorization = needsAuthorization
        self.tag = tag
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
    var readsWholeResponse: Bool { cachePolicy != nil }
}
