import Foundation
import HTTPTypes
import Logging
import Tracing

extension APIClient {
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
    func performShared(_ request: Request, key: String?) async throws(APIError) -> Response {
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
    func runLimited(_ request: Request) async throws(APIError) -> Response {
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
    func runAdmitted(_ request: Request, activity: ActivityCall?) async throws(APIError) -> Response {
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
    func runChain(_ request: Request) async throws(APIError) -> Response {
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
    func runWithInfo(_ chain: MiddlewareNext, _ request: Request) async throws -> Response {
        guard transportReadsCallInfo else { return try await chain(request) }
        let info = CallInfo(apiName: request.apiName, tag: request.tag, endpoint: request.endpoint)
        return try await CallInfo.$current.withValue(info) { try await chain(request) }
    }

    /// The key under which identical safe requests share one transport request, or `nil`.
    @inline(never)
    func deduplicationKey(for request: Request) -> String? {
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
    func makeChain(for request: Request, context: MiddlewareContext) -> MiddlewareNext {
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
}
