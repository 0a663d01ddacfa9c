public import Foundation
import HTTPTypes

/// A fluent request builder (xAPI's chain): start from a client, add parts, send.
///
/// ```swift
/// let users = try await client.get("/v1/{room}/users")
///     .parameters(["room": .string(roomID)])
///     .query(["page": 2])
///     .header("X-Trace", traceID)
///     .tag("system1")
///     .send()
///     .decode([User].self)
/// ```
///
/// Every step returns a new builder; nothing is sent until ``send()``. A step that cannot
/// succeed (an `Encodable` body that does not encode, a method that is not a token) is
/// remembered and reported by ``send()`` as an ``APIError``.
public struct RequestBuilder: Sendable {
    private let client: APIClient
    /// The request built so far.
    public private(set) var request: Request
    private var problem: APIError?

    init(client: APIClient, request: Request, problem: APIError? = nil) {
        self.client = client
        self.request = request
        self.problem = problem
    }

    private func with(_ change: (inout RequestBuilder) -> Void) -> RequestBuilder {
        var copy = self
        change(&copy)
        return copy
    }

    /// Adds query parameters (always in the query string).
    public func query(_ parameters: Parameters) -> RequestBuilder {
        with { $0.request.query.merge(parameters) { _, new in new } }
    }

    /// Adds parameters: path template values, then query (GET, HEAD, DELETE) or body fields.
    public func parameters(_ parameters: Parameters) -> RequestBuilder {
        with { $0.request.parameters.merge(parameters) { _, new in new } }
    }

    /// Sets a header field, replacing any of the same name.
    public func header(_ name: String, _ value: String) -> RequestBuilder {
        with { $0.request.headers[name] = value }
    }

    /// Sets several header fields; each replaces any of the same name.
    public func headers(_ headers: Headers) -> RequestBuilder {
        with { $0.request.headers = $0.request.headers.merging(headers) }
    }

    /// Sets the tag naming the backend subsystem.
    public func tag(_ tag: String) -> RequestBuilder { with { $0.request.tag = tag } }

    /// Sets the base URL (xAPI's `host`).
    public func baseURL(_ url: URL) -> RequestBuilder { with { $0.request.baseURL = url } }

    /// Sets how parameters are encoded.
    public func contentType(_ contentType: ContentType) -> RequestBuilder { with { $0.request.contentType = contentType } }

    /// Sets the body.
    public func body(_ body: RequestBody) -> RequestBuilder { with { $0.request.body = body } }

    /// Sets bytes as the body, sent as they are (`application/octet-stream` unless you name
    /// another type). Without this overload `Data`, being `Encodable`, would go out as a base64
    /// JSON string.
    ///
    /// ```swift
    /// try await client.put("avatars/me").body(png, contentType: "image/png").send()
    /// ```
    public func body(_ data: Data, contentType: String = "application/octet-stream") -> RequestBuilder {
        body(.data(data, contentType: contentType))
    }

    /// Sets text as the body, sent as it is (`text/plain; charset=utf-8`), not as a JSON string.
    ///
    /// ```swift
    /// try await client.post("notes").body("Buy balsa").send()
    /// ```
    public func body(_ text: String) -> RequestBuilder { body(.text(text)) }

    /// Sets an `Encodable` body, encoded as JSON with the client's encoder.
    public func body(_ value: some Encodable) -> RequestBuilder {
        do {
            let body = try RequestBody.json(value, encoder: client.configuration.encoder)
            return with { $0.request.body = body }
        } catch {
            return with { $0.problem = $0.problem ?? error }
        }
    }

    /// Sets one of the call's options (see ``CallOptions``), any of them by its key path.
    ///
    /// ```swift
    /// let feed = try await client.get("feed").option(\.servesStaleWhenOffline, true).send()
    /// ```
    public func option<Value>(_ option: WritableKeyPath<CallOptions, Value>, _ value: Value) -> RequestBuilder {
        with { $0.request.options[keyPath: option] = value }
    }

    /// Sets the call's options from `options`: each one it sets wins over what the request has.
    ///
    /// ```swift
    /// var slow = CallOptions(); slow.timeout = .seconds(60); slow.retry = .none
    /// let report = try await client.get("reports/2026").options(slow).send()
    /// ```
    public func options(_ options: CallOptions) -> RequestBuilder {
        with { $0.request.options = options.merged(over: $0.request.options) }
    }

    /// Sets the time limit for one attempt.
    public func timeout(_ timeout: Duration) -> RequestBuilder { with { $0.request.timeout = timeout } }

    /// Sets one time limit for the whole call, retries and waits included.
    ///
    /// ```swift
    /// let me = try await client.get("me").deadline(.seconds(3)).decode(User.self)
    /// ```
    public func deadline(_ deadline: Duration) -> RequestBuilder { with { $0.request.deadline = deadline } }

    /// Sets how this call's failed attempts are retried; `.none` makes one attempt.
    ///
    /// ```swift
    /// try await client.post("payments").retry(.none).send()
    /// ```
    public func retry(_ policy: RetryPolicy) -> RequestBuilder { with { $0.request.retry = policy } }

    /// Sets the identifier used to find or cancel the call.
    public func identifier(_ identifier: String) -> RequestBuilder { with { $0.request.identifier = identifier } }

    /// Sets the group used to cancel related calls together.
    public func group(_ group: String) -> RequestBuilder { with { $0.request.group = group } }

    /// Sets the statuses ``Response/validate()`` accepts.
    public func accept(statusCodes: StatusCodes) -> RequestBuilder { with { $0.request.acceptedStatusCodes = statusCodes } }

    /// Turns the adaptive envelope on or off for this request.
    public func envelope(_ enabled: Bool = true) -> RequestBuilder { with { $0.request.usesEnvelope = enabled } }

    /// Whether this request carries the client's credentials (a definition's "Authorization").
    /// Without it, a request to the client's own origin (its
    /// ``APIClient/Configuration/baseURL``) carries them and one to any other origin does not;
    /// `authorized()` asks for them at another trusted origin, `authorized(false)` opts out.
    ///
    /// ```swift
    /// let status = try await client.get("status").authorized(false).send()            // no credentials
    /// let avatar = try await client.get("https://cdn.example.com/me.png").authorized().send()   // in additionalOrigins
    /// ```
    public func authorized(_ enabled: Bool = true) -> RequestBuilder { with { $0.request.needsAuthorization = enabled } }

    /// Sets how this request uses the client's HTTP cache.
    ///
    /// ```swift
    /// let boards = try await client.get("boards").cachePolicy(.returnCacheElseLoad).decode([Board].self)
    /// ```
    public func cachePolicy(_ policy: CachePolicy) -> RequestBuilder { with { $0.request.cachePolicy = policy } }

    /// Sets whether a slow attempt of this request is hedged with another (see ``HedgePolicy``);
    /// ``HedgePolicy/off`` turns the client's hedging off for it.
    ///
    /// ```swift
    /// let quote = try await client.get("quotes/latest").hedging(.after(.milliseconds(150))).send()
    /// ```
    public func hedging(_ policy: HedgePolicy) -> RequestBuilder { with { $0.request.hedging = policy } }

    /// Sets whether this request is queued offline when the server cannot be reached.
    ///
    /// ```swift
    /// try await client.post("boards").parameters(["title": "Balsa"]).storePolicy(.offline).send()
    /// ```
    public func storePolicy(_ policy: StorePolicy) -> RequestBuilder { with { $0.request.storePolicy = policy } }

    /// Sends the request. The response is not validated; ``Response/decode(_:decoder:)`` checks
    /// the status, ``Response/validate()`` checks everything.
    public func send() async throws(APIError) -> Response {
        if var problem {
            problem.request = request
            throw problem
        }
        return try await client.perform(Call(request))
    }

    /// Sends the request, validates the response and decodes it as `T`.
    ///
    /// ```swift
    /// let user = try await client.get("/v1/me").decode(User.self)
    /// ```
    public func decode<T: Decodable>(_ type: T.Type = T.self) async throws(APIError) -> T {
        try await send().validate().decode(T.self)
    }

    /// Opens the request as a WebSocket (``APIClient/webSocket(_:options:)``).
    ///
    /// ```swift
    /// let socket = try await client.get("wss://chat.example.com/live").header("X-Room", "lobby").webSocket()
    /// ```
    public func webSocket(options: WebSocketOptions = WebSocketOptions()) async throws(APIError) -> WebSocket {
        if var problem {
            problem.request = request
            throw problem
        }
        return try await client.webSocket(request, options: options)
    }
}

extension APIClient {
    /// Starts a GET request. `path` is relative to the base URL (may be a template) or a full URL.
    ///
    /// ```swift
    /// let users = try await client.get("/v1/users").query(["page": 1]).send().decode([User].self)
    /// ```
    public func get(_ path: String) -> RequestBuilder { builder(.get, path) }
    /// Starts a POST request; parameters go into the body (JSON by default).
    public func post(_ path: String) -> RequestBuilder { builder(.post, path) }
    /// Starts a PUT request; parameters go into the body (JSON by default).
    public func put(_ path: String) -> RequestBuilder { builder(.put, path) }
    /// Starts a PATCH request; parameters go into the body (JSON by default).
    public func patch(_ path: String) -> RequestBuilder { builder(.patch, path) }
    /// Starts a DELETE request; parameters go into the query string.
    public func delete(_ path: String) -> RequestBuilder { builder(.delete, path) }
    /// Starts a HEAD request; parameters go into the query string.
    public func head(_ path: String) -> RequestBuilder { builder(.head, path) }

    /// Starts a request with any method, such as `PURGE`. A method that is not a valid HTTP
    /// token is reported by ``RequestBuilder/send()`` as ``APIError/Code/invalidRequest``.
    public func request(method: String, _ path: String) -> RequestBuilder {
        guard let parsed = HTTPRequest.Method(method) else {
            return RequestBuilder(
                client: self, request: Request(path: path),
                problem: APIError(.invalidRequest, localized: "\"\(method.escapedForMessage)\" is not a valid HTTP method token"))
        }
        return builder(parsed, path)
    }

    private func builder(_ method: HTTPRequest.Method, _ path: String) -> RequestBuilder {
        RequestBuilder(client: self, request: Request(method: method, path: path))
    }
}
