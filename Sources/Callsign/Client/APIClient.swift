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
    /// The transport again when it can send and collect in one step (cast once, not per call).
    private let collectingTransport: (any CollectingTransport)?
    /// Whether the transport decodes `Content-Encoding` by itself (asked once).
    private let transportDecodes: Bool
    /// Where the tasks the client starts itself run: the transport's preferred executor, unless
    /// the configuration says otherwise.
    let taskExecutor: (any TaskExecutor)?
    /// Whether the transport may read ``CallInfo/current`` (mocks match by API name): Callsign's
    /// network transports never do, so calls through them skip setting it.
    private let transportReadsCallInfo: Bool
    /// The fixed parts of the middleware chain, built once.
    private let pipeline: Pipeline
    /// How responses are judged, from the configuration.
    private let responseSettings: ResponseSettings
    /// The configuration's headers in wire form, for requests that add none.
    private let requestDefaults: RequestFactory.RequestDefaults?
    /// Running calls by identifier, group and de-duplication key.
    let registry = CallRegistry()
    private let observability: Observability
    private let limiter: AsyncLimiter?
    private let tagLimiters: [String: AsyncLimiter]
    let activity = ActivityCounter()

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
        self.collectingTransport = transport as? any CollectingTransport
        self.transportDecodes = transport.decodesContentEncoding
        self.taskExecutor = configuration.usesTransportExecutor ? transport.preferredTaskExecutor : nil
        self.transportReadsCallInfo = !(transport is any IgnoresCallInfo)
        let offlineQueue = configuration.offlineQueue ?? MemoryOfflineQueue()
        self.offlineQueue = offlineQueue
        self.pipeline = Pipeline(configuration: configuration, definitions: definitions, offlineQueue: offlineQueue)
        self.observability = Observability(metricsFactory: configuration.metricsFactory, tracer: configuration.tracer)
        self.limiter = configuration.concurrency.maximum.map(AsyncLimiter.init(limit:))
        self.tagLimiters = configuration.tagConcurrency.compactMapValues { $0.maximum.map(AsyncLimiter.init(limit:)) }
        self.requestDefaults = RequestFactory.RequestDefaults(configuration: configuration)
        self.responseSettings = ResponseSettings(
            acceptedStatusCodes: configuration.acceptedStatusCodes, envelope: configuration.envelope,
            decoder: configuration.decoder, validators: configuration.validators,
            maximumJSONDepth: configuration.limits.maximumJSONDepth)
        if let logger = configuration.logger {
            for warning in definitions.warnings { logger.warning("definitions warning", metadata: ["callsign.warning": "\(warning)"]) }
        }
    }

    /// The transport a client uses when given none: a process-wide AsyncHTTPClient transport on
    /// Linux, a process-wide URLSession transport on Apple platforms.
    public static var defaultTransport: any Transport {
        #if canImport(AsyncHTTPClient)
        AsyncHTTPClientTransport.shared
        #else
        sharedURLSessionTransport
        #endif
    }

    #if !canImport(AsyncHTTPClient)
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
        let response = try await call(name, parameters: parameters, headers: headers)
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
        return try Self.validated(await perform(request))
    }

    @inline(never)
    private func request(named name: String, parameters: Parameters, headers: Headers) throws(APIError) -> Request {
        try definitions.definition(named: name).request(parameters: parameters, headers: headers)
    }

    @inline(never)
    private static func validated(_ response: Response) throws(APIError) -> Response {
        try response.validate()
    }

    // MARK: - By value

    /// Sends the request an endpoint value describes. The response is not validated: call
    /// ``Response/validate()`` or ``Response/decode(_:decoder:)``.
    ///
    /// ```swift
    /// let board = try await client.send(Boards.show(id: 7)).validate().decode(Board.self)
    /// ```
    public func send<E: Endpoint>(_ endpoint: E) async throws(APIError) -> Response {
        var request = endpoint.request
        if request.baseURL == nil { request.baseURL = E.baseURL }
        if let base = E.baseURL { request.vouchedOrigin = Origin(base) }
        request.endpoint = endpoint
        request.headers = E.headers.merging(request.headers)
        if let accepted = endpoint.acceptedStatusCodes { request.acceptedStatusCodes = accepted }
        return try await perform(request)
    }

    /// Sends a request. The response is not validated: call ``Response/validate()`` or
    /// ``Response/decode(_:decoder:)``.
    ///
    /// ```swift
    /// let response = try await client.send(.get("https://example.com/health"))
    /// ```
    public func send(_ request: Request) async throws(APIError) -> Response {
        try await perform(request)
    }

    // MARK: - Performing

    /// Runs a request: admits it (identifier, de-duplication), waits for a concurrency slot,
    /// then sends it through the middleware chain to the transport.
    func perform(_ request: Request) async throws(APIError) -> Response {
        let key = deduplicationKey(for: request)
        // A call nobody can join or cancel from outside runs in the caller's own task: no task
        // hop, and nothing allocated while it waits for a concurrency slot. The caller cancels it
        // by cancelling its task.
        if key == nil, request.identifier == nil, request.group == nil {
            return try await runLimited(request)
        }
        return try await performShared(request, key: key)
    }

    /// Registers a call that ``start(_:)`` runs in its own task when nobody can join it (no
    /// de-duplication key, and no identifier a later call could join), so it needs no second task
    /// to share: registered, `cancel(identifier:)`, `cancel(group:)` and `cancelAll()` reach it.
    /// `nil` when the call must be shared.
    func registerUnshared(_ request: Request) -> SharedCall? {
        guard request.identifier == nil || configuration.identifierConflict == .cancelPrevious,
            deduplicationKey(for: request) == nil
        else { return nil }
        let call = SharedCall(identifier: request.identifier, group: request.group, apiName: request.apiName)
        // With no key and `cancelPrevious`, admitting never joins: it may cancel a running call
        // with the same identifier.
        _ = registry.admit(call, key: nil, conflict: .cancelPrevious)
        return call
    }

    /// Runs a call registered by ``registerUnshared(_:)`` and removes it from the registry.
    func runUnshared(_ request: Request, registered call: SharedCall) async throws(APIError) -> Response {
        defer { registry.remove(call, key: nil) }
        // Cancelled before its task ran (cancelAll() right after start()): nothing is sent.
        guard !Task.isCancelled else { throw Self.cancelledWhileWaiting(request) }
        return try await runLimited(request)
    }

    /// A call others can join (de-duplication) or cancel by identifier or group: it runs in a
    /// task of its own, registered while it runs.
    @inline(never)
    private func performShared(_ request: Request, key: String?) async throws(APIError) -> Response {
        let call = SharedCall(identifier: request.identifier, group: request.group, apiName: request.apiName)
        let (chosen, isNew) = registry.admit(call, key: key, conflict: configuration.identifierConflict)
        if isNew {
            let admitted = request
            let registry = self.registry
            chosen.start(on: taskExecutor, { [self] () async throws(APIError) -> Response in try await self.runLimited(admitted) }) {
                registry.remove(call, key: key)
            }
        }
        do {
            return try await chosen.wait()
        } catch let error as APIError {
            throw error
        } catch {
            throw Self.cancelledWhileWaiting(request)
        }
    }

    /// Built out of line: an error built inline makes the calling async function's frame — held
    /// by every call waiting for a slot — much larger.
    @inline(never)
    static func cancelledWhileWaiting(_ request: Request) -> APIError {
        APIError(.cancelled, "the call was cancelled while it waited", request: request)
    }

    /// Waits for the tag's and the client's concurrency slots, reports activity, runs the chain.
    /// Kept small: its frame is what a waiting call holds.
    private func runLimited(_ request: Request) async throws(APIError) -> Response {
        let activity = activityStarted(request)
        defer { activityEnded(activity) }
        let tagLimiter = request.tag.flatMap { tagLimiters[$0] }
        do {
            try await tagLimiter?.acquire()
        } catch {
            throw Self.cancelledWhileWaiting(request)
        }
        defer { tagLimiter?.release() }
        do {
            try await limiter?.acquire()
        } catch {
            throw Self.cancelledWhileWaiting(request)
        }
        defer { limiter?.release() }
        return try await runAdmitted(request, activity: activity)
    }

    /// Runs a call that has its slots, reporting its progress to the activity observer.
    @inline(never)
    private func runAdmitted(_ request: Request, activity: ActivityCall?) async throws(APIError) -> Response {
        if let activity, let observer = configuration.activityObserver {
            let reporting = ProgressSink(
                continuation: nil, observer: { progress in observer.callDidProgress(activity, progress: progress) },
                parent: ProgressSink.current)
            let result = await ProgressSink.$current.withValue(reporting) { () async -> Result<Response, APIError> in
                do throws(APIError) {
                    return .success(try await runChain(request))
                } catch {
                    return .failure(error)
                }
            }
            return try result.get()
        }
        return try await runChain(request)
    }

    @inline(never)  // its large frame is allocated only once a call has its slot, not while it waits
    private func runChain(_ request: Request) async throws(APIError) -> Response {
        // Resolved once a call has its slot: a waiting call holds no parsed URL.
        var request = request
        try RequestFactory.resolveTarget(&request, configuration: configuration)
        let context = MiddlewareContext(configuration: configuration, apiName: request.apiName)
        let chain = makeChain(for: request, context: context)
        // Without a tracer (the no-op one): no span, no name to format, no context to set.
        let span = observability.startSpan("HTTP \(request.method.rawValue)")
        if let span {
            span.attributes["http.request.method"] = request.method.rawValue
            span.attributes["url.full"] = configuration.redaction.redact(url: request.path)
            if let apiName = request.apiName { span.attributes["callsign.api"] = apiName }
        }
        defer { span?.end() }
        let clock = ContinuousClock()
        let started = clock.now
        do {
            var response: Response
            if let span {
                response = try await ServiceContext.withValue(span.context) { try await runWithInfo(chain, request) }
            } else {
                response = try await runWithInfo(chain, request)
            }
            // Responses made by middlewares (the cache, your own) are judged like the transport's.
            response.settings = responseSettings
            span?.record(status: response.status.code)
            observability.recordSuccess(response)
            log(response)
            return response
        } catch {
            var apiError: APIError
            if let error = error as? APIError {
                apiError = error
            } else if Task.isCancelled || error is CancellationError {
                apiError = APIError(.cancelled, "the call was cancelled", request: request, underlyingError: error)
            } else {
                apiError = APIError(.invalidRequest, "a middleware failed: \(error)", request: request, underlyingError: error)
            }
            apiError.redaction = configuration.credentialRedaction
            span?.record(failure: apiError)
            observability.recordFailure(apiError, request: request, duration: clock.now - started)
            // Debug, not error: the error is thrown to the caller, who decides what it means.
            if let logger = configuration.logger, logger.logLevel <= .debug {
                let mask = SecretMask(configuration: configuration, request: request)
                logger.debug(
                    "request failed",
                    metadata: [
                        "callsign.api": .string(request.apiName ?? ""), "callsign.method": .string(request.method.rawValue),
                        "callsign.url": .string(mask.url(request.path)),
                        "callsign.error": .string(apiError.code.shortDescription),
                        "callsign.message": .string(mask.text(apiError.message)),
                    ])
            }
            throw apiError
        }
    }

    /// Runs the chain with ``CallInfo/current`` set when the transport may read it.
    private func runWithInfo(_ chain: MiddlewareNext, _ request: Request) async throws -> Response {
        guard transportReadsCallInfo else { return try await chain(request) }
        let info = CallInfo(apiName: request.apiName, tag: request.tag, endpoint: request.endpoint)
        return try await CallInfo.$current.withValue(info) { try await chain(request) }
    }

    /// The key under which identical safe requests share one transport request, or `nil`.
    @inline(never)
    private func deduplicationKey(for request: Request) -> String? {
        guard configuration.deduplicatesRequests, request.method == .get || request.method == .head, request.body == nil,
            let prepared = try? { () throws(APIError) -> PreparedRequest in
                var copy = request
                return try RequestFactory.prepare(&copy, configuration: configuration, defaults: requestDefaults)
            }()
        else { return nil }
        let headers = prepared.headers.fields.map { "\($0.name.lowercased()):\($0.value)" }.sorted().joined(separator: "\n")
        return "\(request.method.rawValue) \(prepared.url.absoluteString)\n\(request.tag ?? "")\n\(request.needsAuthorization)\n\(headers)"
    }

    /// The chain for one request: the client's fixed stages around the request's own middlewares.
    private func makeChain(for request: Request, context: MiddlewareContext) -> MiddlewareNext {
        let stages: [any Middleware]
        if request.isReplay {
            stages = pipeline.belowOffline
        } else {
            let fixed = request.storePolicy == .offline ? pipeline.builtIns : pipeline.withoutOffline
            let perDefinition = request.apiName.flatMap { configuration.definitionMiddlewares[$0] } ?? []
            if pipeline.leading.isEmpty, perDefinition.isEmpty, request.middlewares.isEmpty {
                stages = fixed  // the usual case: the client's array, not a copy
            } else {
                stages = pipeline.leading + perDefinition + request.middlewares + fixed
            }
        }
        return MiddlewareNext(MiddlewareChain(stages: stages, context: context, client: self))
    }

    /// The end of the chain: encode, `preProcess`, send, and read the body within the timeout.
    func sendToTransport(_ request: Request) async throws(APIError) -> Response {
        var request = request
        var prepared = try RequestFactory.prepare(&request, configuration: configuration, defaults: requestDefaults)
        let span = observability.startSpan("HTTP \(request.method.rawValue) attempt")
        defer { span?.end() }
        if let span { observability.activeTracer.inject(span.context, into: &prepared.head.headerFields, using: HTTPFieldsInjector()) }
        logAttempt(request, body: prepared.body)
        if let preProcess = configuration.preProcess {
            do {
                prepared.head = try await preProcess(prepared.head)
            } catch {
                throw APIError.wrap(error, request: request, defaultCode: .invalidRequest, context: "preProcess failed")
            }
        }
        let startedAt = Date()
        let clock = ContinuousClock()
        let start = clock.now
        // A download's length has no natural bound: only an explicit timeout limits one attempt.
        let timeout = request.timeout ?? (request.downloadDestination == nil ? configuration.timeout : .seconds(86_400))
        let limit = configuration.maxResponseBodySize
        let limits = configuration.limits
        let transport = self.transport
        let head = prepared.head
        let progress = ProgressSink.current
        let uploadLength = prepared.body?.count.map(Int64.init)
        // With someone watching, a streamed body reports each chunk as the transport takes it.
        let body = progress.map { sink in
            prepared.body?.reportingProgress { sent in
                sink.report(TransferProgress(direction: .upload, completedBytes: sent, totalBytes: uploadLength))
            }
        } ?? prepared.body
        let downloadDestination = request.downloadDestination
        let url = prepared.url
        let resumePoint = downloadDestination.flatMap { destination in
            request.resumesDownload ? FileDownload.resumePoint(destination: destination, url: url) : nil
        }
        if let destination = downloadDestination, resumePoint == nil, !request.resumesDownload {
            FileDownload.discard(destination: destination)
        }
        // A transport that decodes by itself gets its bodies left alone.
        let decompression = transportDecodes ? DecompressionPolicy.disabled : configuration.decompression
        let decodedLimit = decompression.maximumDecodedSize ?? limit
        let streams = request.streamsBody
        do {
            let (responseHead, responseBody, stream): (HTTPResponse, Data, ResponseBodyStream?)
            if let destination = downloadDestination, request.timeout == nil {
                // A download without an explicit timeout has no per-attempt limit: no race to set up.
                let (head, data) = try await Self.transferToFile(
                    destination, head: head, body: body, url: url, resumePoint: resumePoint, transport: transport,
                    decompression: decompression, limits: limits, progress: progress)
                (responseHead, responseBody, stream) = (head, data, nil)
            } else if let collecting = collectingTransport, downloadDestination == nil, !streams,
                body == nil || body?.inMemoryData != nil
            {
                // The common case — bodies in memory — in one step, progress reported as it reads.
                let received = progress.map { sink in
                    { @Sendable (received: Int64, expected: Int64?) in
                        // The first report comes with the head: the upload is complete by then.
                        if received == 0, let uploadLength {
                            sink.report(TransferProgress(direction: .upload, completedBytes: uploadLength, totalBytes: uploadLength))
                        }
                        sink.report(TransferProgress(direction: .download, completedBytes: received, totalBytes: expected))
                    }
                }
                if let progress, let uploadLength {
                    progress.report(TransferProgress(direction: .upload, completedBytes: 0, totalBytes: uploadLength))
                }
                var (head, data) = try await collecting.sendAndCollect(
                    head, body: body?.inMemoryData, limit: limit, timeout: timeout, progress: received)
                try limits.check(head)
                if head.headerFields[.contentEncoding] != nil {
                    let decoded: ResponseBodyStream
                    (decoded, head) = try ContentDecoding.decode(
                        ResponseBodyStream(data: data), head: head, policy: decompression, decodedLimit: decodedLimit)
                    do {
                        data = try await decoded.collect(upTo: limit)
                    } catch var error as APIError {
                        error.responseStarted = true
                        throw error
                    }
                }
                // Ends at 1 also without a Content-Length, or once a compressed body is decoded.
                progress?.report(TransferProgress(direction: .download, completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
                (responseHead, responseBody, stream) = (head, data, nil)
            } else {
            (responseHead, responseBody, stream) = try await Deadline.run(within: timeout) { () async throws -> (HTTPResponse, Data, ResponseBodyStream?) in
                let uploadTotal = uploadLength
                if let progress, let uploadTotal {
                    progress.report(TransferProgress(direction: .upload, completedBytes: 0, totalBytes: uploadTotal))
                }
                if let destination = downloadDestination {
                    let (head, data) = try await Self.transferToFile(
                        destination, head: head, body: body, url: url, resumePoint: resumePoint, transport: transport,
                        decompression: decompression, limits: limits, progress: progress)
                    return (head, data, nil)
                }
                let sent = try await transport.send(head, body: body)
                let declaredLength = try limits.check(sent.head)
                if let progress, let uploadTotal {
                    progress.report(TransferProgress(direction: .upload, completedBytes: uploadTotal, totalBytes: uploadTotal))
                }
                let (responseBody, responseHead) = try ContentDecoding.decode(
                    sent.body, head: sent.head, policy: decompression, decodedLimit: decodedLimit)
                if streams { return (responseHead, Data(), responseBody) }
                // The declared length of the encoded body; a decoded one has no declared length.
                let length = responseHead.headerFields[.contentLength] == nil ? nil : declaredLength.map { Int(clamping: $0) }
                if let length, length > limit { throw ResponseBodyStream.tooLarge(limit) }
                do {
                    guard let progress else { return (responseHead, try await responseBody.collect(upTo: limit), nil) }
                    return (responseHead, try await Self.read(responseBody, limit: limit, length: length, progress: progress), nil)
                } catch let error as APIError {
                    var error = error
                    error.responseStarted = true
                    throw error
                } catch {
                    throw BodyReadError(underlying: error)
                }
            }
            }
            var response = Response(
                request: request, status: responseHead.status, headers: responseHead.headerFields, body: responseBody,
                startedAt: startedAt, duration: clock.now - start, settings: responseSettings)
            response.sentBody = prepared.body
            response.bodyStream = stream
            if (200..<300).contains(responseHead.status.code) { response.fileURL = request.downloadDestination }
            span?.record(status: response.status.code)
            logAttemptResponse(response)
            return response
        } catch {
            let apiError = mapFailure(error, request: request, timeout: timeout)
            span?.record(failure: apiError)
            throw apiError
        }
    }

    /// A download's exchange: a range request when a partial file can be continued, the body
    /// written to the file, and one restart from zero when the server's answer cannot continue it.
    /// Out of line, so the common in-memory path keeps a small async frame.
    @inline(never)
    private static func transferToFile(
        _ destination: URL, head: HTTPRequest, body: HTTPBody?, url: URL, resumePoint: ResumePoint?, transport: any Transport,
        decompression: DecompressionPolicy, limits: Limits, progress: ProgressSink?
    ) async throws -> (HTTPResponse, Data) {
        var resume = resumePoint
        while true {
            var head = head
            if let resume {
                head.headerFields[.range] = "bytes=\(resume.offset)-"
                head.headerFields[.ifRange] = resume.validator
            }
            let sent = try await transport.send(head, body: body)
            try limits.check(sent.head)
            let (responseBody, responseHead) = try ContentDecoding.decode(
                sent.body, head: sent.head, policy: decompression, decodedLimit: decompression.maximumDecodedSize)
            // An error status keeps its (small) body in memory, for the error to show.
            guard (200..<300).contains(responseHead.status.code) else {
                return (responseHead, try await responseBody.collect(upTo: 1 << 20))
            }
            do {
                try await FileDownload.write(
                    responseBody, status: responseHead.status.code, headers: responseHead.headerFields, url: url,
                    to: destination, resume: resume, progress: progress)
                return (responseHead, Data())
            } catch is FileDownload.Restart where resume != nil {
                resume = nil  // the partial file was discarded: ask for the whole file
            } catch let error as APIError {
                throw error
            } catch {
                throw BodyReadError(underlying: error)
            }
        }
    }

    /// Reads a body chunk by chunk, reporting download progress; the last report is complete.
    private static func read(_ body: ResponseBodyStream, limit: Int, length: Int?, progress: ProgressSink) async throws -> Data {
        var data = Data()
        if let length { data.reserveCapacity(length) }
        let total = length.map(Int64.init)
        progress.report(TransferProgress(direction: .download, completedBytes: 0, totalBytes: total))
        for try await chunk in body {
            guard data.count + chunk.count <= limit else { throw ResponseBodyStream.tooLarge(limit) }
            data.append(chunk)
            progress.report(TransferProgress(direction: .download, completedBytes: Int64(data.count), totalBytes: total))
        }
        if total == nil || total != Int64(data.count) {
            progress.report(TransferProgress(direction: .download, completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
        }
        return data
    }

    /// A failure while reading a body whose head had arrived.
    private struct BodyReadError: Error {
        let underlying: any Error
    }

    private func mapFailure(_ error: any Error, request: Request, timeout: Duration) -> APIError {
        if error is Deadline.Expired {
            return APIError(
                .timedOut, "no complete answer within \(Self.describe(timeout))", request: request, underlyingError: error)
        }
        if Task.isCancelled || error is CancellationError {
            return APIError(.cancelled, "the call was cancelled", request: request, underlyingError: error)
        }
        if let bodyError = error as? BodyReadError {
            var apiError = APIError.wrap(bodyError.underlying, request: request)
            if apiError.code == .transport { apiError.message = "the connection broke while the body arrived: \(bodyError.underlying)" }
            apiError.responseStarted = true
            return apiError
        }
        return APIError.wrap(error, request: request)
    }

    /// `debug`: the attempt's headers (redacted); `trace`: also the body (capped, redacted) and a cURL line.
    private func logAttempt(_ request: Request, body: HTTPBody?) {
        guard let logger = configuration.logger, logger.logLevel <= .debug else { return }
        let mask = SecretMask(configuration: configuration, request: request)
        var metadata: Logger.Metadata = [
            "callsign.api": .string(request.apiName ?? ""), "callsign.method": .string(request.method.rawValue),
            "callsign.url": .string(mask.url(request.url?.absoluteString ?? request.path)),
            "callsign.headers": .string(request.headers.fields.map { "\($0.name): \(mask.header($0.name, $0.value))" }.joined(separator: "\n")),
        ]
        if logger.logLevel <= .trace {
            if let data = body?.inMemoryData {
                metadata["callsign.body"] = .string(loggable(data, contentType: request.headers["Content-Type"], mask: mask))
            }
            metadata["callsign.curl"] = .string(CURLCommand(request: request, body: body?.inMemoryData, mask: mask).text)
        }
        logger.debug("sending attempt", metadata: metadata)
    }

    private func logAttemptResponse(_ response: Response) {
        guard let logger = configuration.logger, logger.logLevel <= .debug else { return }
        let mask = SecretMask(configuration: configuration, request: response.request)
        var metadata: Logger.Metadata = [
            "callsign.status": .stringConvertible(response.status.code),
            "callsign.headers": .string(
                response.headers.map { "\($0.name.rawName): \(mask.header($0.name.rawName, $0.value))" }.joined(separator: "\n")),
        ]
        if logger.logLevel <= .trace {
            metadata["callsign.body"] = .string(loggable(response.body, contentType: response.headers[.contentType], mask: mask))
        }
        logger.debug("received response", metadata: metadata)
    }

    private func loggable(_ body: Data, contentType: String?, mask: SecretMask) -> String {
        let redacted = mask.body(body, contentType: contentType)
        let cut = redacted.prefix(configuration.maximumLoggedBodySize)
        guard let text = String(data: cut, encoding: .utf8) else { return "<\(body.count) bytes of binary data>" }
        return redacted.count > cut.count ? text + "… (\(redacted.count) bytes)" : text
    }

    private func log(_ response: Response) {
        guard let logger = configuration.logger, logger.logLevel <= .debug else { return }
        logger.debug(
            "request finished",
            metadata: [
                "callsign.api": .string(response.request.apiName ?? ""),
                "callsign.method": .string(response.request.method.rawValue),
                "callsign.url": .string(SecretMask(configuration: configuration, request: response.request).url(response.request.url?.absoluteString ?? "")),
                "callsign.status": .stringConvertible(response.status.code),
                "callsign.duration_ms": .stringConvertible(response.duration.wholeMilliseconds),
            ])
    }

    static func describe(_ duration: Duration) -> String {
        let seconds = duration.seconds
        return seconds >= 1 ? "\(seconds.formatted(.number.precision(.fractionLength(0...2)))) s" : "\(duration.wholeMilliseconds) ms"
    }
}
