/// The options that shape one call, declared once: how its parameters are written and its answer
/// read, which statuses count, its time limits, retries, hedging, cache and offline queue, and
/// whether it carries credentials.
///
/// Every way of calling holds the same value — an ``APIDefinition`` (in code or a definitions
/// file), a ``Request``, the ``RequestBuilder``, the callback context of
/// ``APIClient/request(_:configure:)-(String,_)`` and an OpenAPI operation's policy — and reads and writes
/// each option by its name (`definition.retry`, `request.deadline`). They merge with one rule,
/// ``merged(over:)``, the most specific first: the call's over its definition's over `DEFAULT`'s.
/// What is still `nil` then is the client's ``APIClient/Configuration``, read once per call by the
/// stage that acts on the option.
///
/// ```swift
/// var options = CallOptions()
/// options.deadline = .seconds(5)
/// options.retry = RetryPolicy(maximumAttempts: 2)
/// let response = try await client.get("orders").options(options).send()
/// ```
///
/// Adding an option is adding it here (and to ``merged(over:)`` below), to the definitions file
/// reader if files may set it, and to the stage that acts on it.
public struct CallOptions: Sendable, Hashable {
    /// How parameters are encoded into the body (RFAPI's `Serializer`); `nil` means JSON for a body.
    public var contentType: ContentType?
    /// Where the client's common parameters go for this call; `nil` follows the client.
    public var commonParameterPlacement: CommonParameterPlacement?
    /// The statuses ``Response/validate()`` accepts; `nil` means the client's (200–299).
    public var acceptedStatusCodes: StatusCodes?
    /// Whether the call carries the client's credentials; `nil` means it does when it goes to the
    /// client's own origin (its ``APIClient/Configuration/baseURL``) and not anywhere else.
    /// ``CredentialRule`` holds the rule and what each way of calling says when you say nothing
    /// (a definition: `false`, RFAPI's `Authorization`). Credentials never go to an origin that is
    /// not trusted, whatever this says.
    ///
    /// ```swift
    /// let status = try await client.get("status").authorized(false).send()   // no credentials
    /// ```
    public var needsAuthorization: Bool?
    /// Whether the body is read as an adaptive envelope (`{"code", "msg", "data"}`); `nil`
    /// follows the client.
    public var usesEnvelope: Bool?
    /// What the body holds (RFAPI's `Response Type`); `nil` means raw.
    public var responseType: ResponseType?
    /// The name of the type the body decodes into (RFAPI's `Response Class`; see
    /// ``ResponseClasses``), also for documentation and error messages.
    public var responseClass: String?
    /// The types a failed call's body decodes into, by status (`errorClass` in a file: one name,
    /// or a dictionary of statuses and ranges to names; see ``ErrorClasses`` and
    /// ``APIError/serverError``).
    public var errorClasses: ErrorClasses?
    /// Whether an empty or `null` body is acceptable (RFAPI's `Response Accept Null`); `nil`
    /// means it is not.
    public var acceptsNullResponse: Bool?
    /// What the body is written in, for decoding (RFAPI's `Response Serializer`, `responseFormat`
    /// in a file); `nil` means ``ResponseFormat/json``.
    public var responseFormat: ResponseFormat?
    /// How ``APIClient/pages(_:pagination:)`` and ``APIClient/items(_:parameters:as:at:pagination:)``
    /// find the next page when they are given no pagination of their own; `nil` means
    /// ``Pagination/link``.
    ///
    /// ```swift
    /// var users = APIDefinition(name: "ListUsers", path: "users")
    /// users.pagination = .cursor(at: "meta.next_cursor", parameter: "cursor")
    /// ```
    public var pagination: Pagination?
    /// The time limit for one attempt (the per-attempt limit); `nil` uses the client's
    /// ``APIClient/Configuration/Timeouts/attempt``.
    public var timeout: Duration?
    /// One time limit for the whole call — attempts, waits, redirects and body; `nil` uses the
    /// client's ``APIClient/Configuration/Timeouts/deadline``. A middleware may tighten it
    /// (``MiddlewareContext/Fields/deadline``), never extend it.
    public var deadline: Duration?
    /// How failed attempts are retried; `nil` uses the client's ``APIClient/Configuration/retry``.
    public var retry: RetryPolicy?
    /// Whether a slow attempt is hedged with a second one (``HedgePolicy``; `hedging:` in a file:
    /// seconds, `false`, or a dictionary); `nil` uses the client's
    /// ``APIClient/Configuration/hedging``; ``HedgePolicy/off`` turns it off for this call.
    ///
    /// ```swift
    /// options.hedging = .observedPercentile(95, minimum: .milliseconds(50), fallback: .milliseconds(300))
    /// ```
    public var hedging: HedgePolicy?
    /// How the call uses the client's HTTP cache (`cache:` in a file); `nil` means
    /// ``CachePolicy/useProtocol``.
    public var cachePolicy: CachePolicy?
    /// Whether a stored response is served, however stale, when the server cannot be reached
    /// (RFAPI's `Offline Policy` 1); `nil` follows the cache's ``HTTPCache/servesStaleWhenOffline``.
    ///
    /// ```swift
    /// options.servesStaleWhenOffline = true   // the last list seen, when offline
    /// ```
    public var servesStaleWhenOffline: Bool?
    /// Whether the call is queued offline when the server cannot be reached (`storePolicy:` in a
    /// file); `nil` means ``StorePolicy/none``.
    public var storePolicy: StorePolicy?
    /// A tag naming the backend subsystem, for the client's common parameters and headers.
    public var tag: String?

    /// Options that all follow what is above them.
    public init() {}

    /// These options, each one that is `nil` taken from `defaults`: the one merge rule, used
    /// wherever a more specific way of calling meets a more general one (a call over its
    /// definition, a definition over `DEFAULT`).
    ///
    /// ```swift
    /// var call = CallOptions(); call.timeout = .seconds(2)
    /// var api = CallOptions(); api.timeout = .seconds(30); api.retry = .none
    /// call.merged(over: api)   // timeout 2 s, retry .none
    /// ```
    public func merged(over defaults: CallOptions) -> CallOptions {
        var result = self
        result.contentType = contentType ?? defaults.contentType
        result.commonParameterPlacement = commonParameterPlacement ?? defaults.commonParameterPlacement
        result.acceptedStatusCodes = acceptedStatusCodes ?? defaults.acceptedStatusCodes
        result.needsAuthorization = needsAuthorization ?? defaults.needsAuthorization
        result.usesEnvelope = usesEnvelope ?? defaults.usesEnvelope
        result.responseType = responseType ?? defaults.responseType
        result.responseClass = responseClass ?? defaults.responseClass
        result.errorClasses = errorClasses ?? defaults.errorClasses
        result.acceptsNullResponse = acceptsNullResponse ?? defaults.acceptsNullResponse
        result.responseFormat = responseFormat ?? defaults.responseFormat
        result.pagination = pagination ?? defaults.pagination
        result.timeout = timeout ?? defaults.timeout
        result.deadline = deadline ?? defaults.deadline
        result.retry = retry ?? defaults.retry
        result.hedging = hedging ?? defaults.hedging
        result.cachePolicy = cachePolicy ?? defaults.cachePolicy
        result.servesStaleWhenOffline = servesStaleWhenOffline ?? defaults.servesStaleWhenOffline
        result.storePolicy = storePolicy ?? defaults.storePolicy
        result.tag = tag ?? defaults.tag
        return result
    }
}

/// A value that holds ``CallOptions`` and reads and writes each one by its name:
/// `definition.retry`, `request.deadline`, `policy.cachePolicy`.
public protocol HoldsCallOptions {
    /// The options, all at once.
    var options: CallOptions { get set }
}

extension HoldsCallOptions {
    /// Reads or changes one option.
    public subscript<Value>(dynamicMember option: WritableKeyPath<CallOptions, Value>) -> Value {
        get { options[keyPath: option] }
        _modify { yield &options[keyPath: option] }
    }
}
