public import Callsign
public import Foundation
public import HTTPTypes
public import OpenAPIRuntime

/// Callsign as the transport of a client made by swift-openapi-generator: every operation goes
/// through the `APIClient`'s one chain — authentication with refresh, retry with `Retry-After`
/// inside one deadline, the HTTP cache, the offline queue, mocks, HAR recording, metrics and
/// tracing — and then through its own transport.
///
/// ```swift
/// let callsign = APIClient(configuration: .init {
///     $0.baseURL = URL(string: "https://petstore.example.com/v1")
///     $0.authentication = .bearer(tokens)
///     $0.cache = .memory()
/// })
/// let transport = CallsignClientTransport(callsign, policies: [
///     "listPets": .cached(for: .seconds(60)),
///     "createOrder": .queuedOffline,
/// ])
/// let petstore = Client(serverURL: try Servers.Server1.url(), transport: transport)
/// let pets = try await petstore.listPets(query: .init(limit: 10)).ok.body.json
/// ```
///
/// What the generated client gets:
/// - **Every answer the server gives is a response**, whatever its status: the generated code
///   decides what a `404` means. Retries happen first, so a `503` that a retry turned into a
///   `200` arrives as the `200`.
/// - **Bodies stream both ways.** A request body the runtime can iterate once is sent as it is
///   produced; a response body is handed over as its bytes arrive, however large. An operation
///   with a cache policy is read into memory (up to the client's
///   `Limits.maximumResponseBodySize`), since a cache stores whole bodies; an operation queued
///   offline reads a one-pass request body into memory (up to the same limit) so it can be
///   stored and replayed.
/// - **Failures** are `APIError`s: the runtime wraps them in its `ClientError`, whose
///   ``OpenAPIRuntime/ClientError/apiError`` gives ours back with its code
///   (`APIError.Code.queuedOffline`, `APIError.Code.timedOut`, …). **Cancellation** of the
///   calling task stops the exchange and throws `CancellationError`, as Swift code expects.
/// - The operation's `operationId` is the call's API name: it names the call in logs, metrics,
///   traces and HAR entries (`MiddlewareContext.apiName` for your middlewares), selects
///   per-API mocks, and chooses the ``OperationPolicy``.
///
/// Credentials go only to the client's trusted origins (its base URL and the authentication's
/// `Authentication.additionalOrigins`), so give the client the server URL you give the
/// generated client.
public struct CallsignClientTransport: ClientTransport {
    /// The client whose chain sends every operation.
    public let client: APIClient
    /// Policies by `operationId`; an operation without one gets ``defaultPolicy``.
    public var policies: [String: OperationPolicy]
    /// The policy of operations not in ``policies``. Default: streamed, not cached, not queued,
    /// with the client's credentials, retry and deadline.
    public var defaultPolicy: OperationPolicy

    /// Creates a transport that sends through `client`.
    public init(_ client: APIClient, policies: [String: OperationPolicy] = [:], defaultPolicy: OperationPolicy = .init()) {
        self.client = client
        self.policies = policies
        self.defaultPolicy = defaultPolicy
    }

    /// Sends one operation through the client's chain (the `ClientTransport` requirement).
    public func send(
        _ request: HTTPRequest, body: OpenAPIRuntime.HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, OpenAPIRuntime.HTTPBody?) {
        let policy = policies[operationID] ?? defaultPolicy
        do {
            let call = try await callsignRequest(request, body: body, baseURL: baseURL, operationID: operationID, policy: policy)
            if policy.readsWholeResponse {
                let response = try await client.send(call)
                return (response.openAPIHead, Self.body(of: response.openAPIHead, method: request.method, data: response.body))
            }
            let streamed = try await client.stream(call)
            let head = streamed.response.openAPIHead
            return (head, Self.body(of: head, method: request.method, chunks: streamed.chunks))
        } catch {
            // (A `catch where` here would send Swift 6.3's optimizer into a loop: typed throws in async code.)
            if error.code == .cancelled { throw CancellationError() }
            throw error
        }
    }

    /// The Callsign request for one operation: the runtime's head, path and query as they are
    /// (already percent-encoded by the generated code), below the server URL's path.
    private func callsignRequest(
        _ request: HTTPRequest, body: OpenAPIRuntime.HTTPBody?, baseURL: URL, operationID: String, policy: OperationPolicy
    ) async throws(APIError) -> Request {
        // Braces cannot come from the generated code (it percent-encodes values); should one
        // appear, it is sent as a literal character rather than read as a Callsign template.
        let path = (request.path ?? "/").drop { $0 == "/" }
            .replacingOccurrences(of: "{", with: "%7B").replacingOccurrences(of: "}", with: "%7D")
        var call = Request(
            method: request.method, path: path, baseURL: Self.directory(baseURL),
            headers: Headers(request.headerFields))
        call.apiName = operationID
        call.options = policy.options
        call.middlewares = policy.middlewares
        if policy.sendsIdempotencyKey, !call.headers.contains("Idempotency-Key") {
            call.headers["Idempotency-Key"] = UUID().uuidString
        }
        if let body {
            let contentType = request.headerFields[.contentType]
            let limit = client.configuration.limits.maximumResponseBodySize
            call.body = try await RuntimeBody.requestBody(
                body, contentType: contentType, buffered: policy.storePolicy == .offline, limit: limit)
        }
        return call
    }

    /// The server URL as a directory, so the operation's path goes below its path (`/v1` + `pets`).
    private static func directory(_ url: URL) -> URL {
        let text = url.absoluteString
        return text.hasSuffix("/") ? url : URL(string: text + "/") ?? url
    }

    /// No body for a `HEAD`, `204` or `304` answer (the generated code expects none), else `make()`.
    private static func hasBody(_ head: HTTPResponse, method: HTTPRequest.Method) -> Bool {
        !(method == .head || head.status.code == 204 || head.status.code == 304)
    }

    private static func body(of head: HTTPResponse, method: HTTPRequest.Method, data: Data) -> OpenAPIRuntime.HTTPBody? {
        hasBody(head, method: method) ? OpenAPIRuntime.HTTPBody(data) : nil
    }

    private static func body(of head: HTTPResponse, method: HTTPRequest.Method, chunks: ResponseBodyStream) -> OpenAPIRuntime.HTTPBody? {
        guard hasBody(head, method: method) else { return nil }
        return OpenAPIRuntime.HTTPBody(chunks.map { ArraySlice($0) }, length: RuntimeBody.length(of: head), iterationBehavior: .single)
    }
}

extension Response {
    /// The head the runtime sees: the status and the fields as received (after decoding, without
    /// the encoding's `Content-Encoding` and `Content-Length`, as Callsign reports them).
    fileprivate var openAPIHead: HTTPResponse {
        HTTPResponse(status: self.status, headerFields: self.headers)
    }
}

extension ClientError {
    /// The `APIError` under a generated client's error, when Callsign's chain threw it.
    ///
    /// ```swift
    /// do {
    ///     _ = try await petstore.createOrder(body: .json(order))
    /// } catch let error as ClientError where error.apiError?.code == .queuedOffline {
    ///     showQueuedBanner()
    /// }
    /// ```
    public var apiError: APIError? { underlyingError as? APIError }
}
