import Foundation
import HTTPTypes
import Logging
import Tracing

/// One call as the client runs it: the request, and what the stages need to know that is not
/// part of it (``MiddlewareContext``: where it came from, how its body is read, who watches its
/// progress).
struct Call: Sendable {
    var request: Request
    /// The usual call — made from a request, read into memory, watched by nobody — shares the
    /// context's default box: a call waiting for its slot holds two pointers and nothing else was
    /// allocated for it.
    var context = MiddlewareContext()

    init(_ request: Request) {
        self.request = request
    }

    /// The one way an endpoint value becomes a call, for ``APIClient/send(_:)-(E)``,
    /// downloads and every other entry: the endpoint's base URL, shared headers (the request's
    /// win), accepted statuses, and the value itself for middlewares and mock providers.
    init<E: Endpoint>(_ endpoint: E) {
        var request = endpoint.request
        if request.baseURL == nil { request.baseURL = E.baseURL }
        request.headers = E.headers.merging(request.headers)
        if let accepted = endpoint.acceptedStatusCodes { request.acceptedStatusCodes = accepted }
        self.init(request)
        context.fields.endpoint = endpoint
    }

    /// The call with its body read as `reading` says.
    func reading(_ reading: MiddlewareContext.BodyReading) -> Call {
        var call = self
        call.context.fields.bodyReading = reading
        return call
    }
}

extension APIClient {
    // MARK: - Performing

    /// Runs a request: admits it (identifier, de-duplication), waits for a concurrency slot,
    /// then sends it through the middleware chain to the transport.
    func perform(_ call: Call) async throws(APIError) -> Response {
        let request = call.request
        let key = deduplicationKey(for: call)
        // A call nobody can join or cancel from outside runs in the caller's own task: no task
        // hop, and nothing allocated while it waits for a concurrency slot. The caller cancels it
        // by cancelling its task.
        if key == nil, request.identifier == nil, request.group == nil {
            return try await runLimited(call)
        }
        return try await performShared(call, key: key)
    }

    /// Registers a call that ``start(_:)`` runs in its own task when nobody can join it (no
    /// de-duplication key, and no identifier a later call could join), so it needs no second task
    /// to share: registered, `cancel(identifier:)`, `cancel(group:)` and `cancelAll()` reach it.
    /// `nil` when the call must be shared.
    func registerUnshared(_ call: Call) -> SharedCall? {
        let request = call.request
        guard request.identifier == nil || configuration.tasks.identifierConflict == .cancelPrevious,
            deduplicationKey(for: call) == nil
        else { return nil }
        let call = SharedCall(identifier: request.identifier, group: request.group, apiName: request.apiName)
        // With no key and `cancelPrevious`, admitting never joins: it may cancel a running call
        // with the same identifier.
        _ = registry.admit(call, key: nil, conflict: .cancelPrevious)
        return call
    }

    /// Runs a call registered by ``registerUnshared(_:)`` and removes it from the registry.
    func runUnshared(_ call: Call, registered: SharedCall) async throws(APIError) -> Response {
        defer { registry.remove(registered, key: nil) }
        // Cancelled before its task ran (cancelAll() right after start()): nothing is sent.
        guard !Task.isCancelled else { throw registered.explained(Self.cancelledWhileWaiting(call.request)) }
        do {
            return try await runLimited(call)
        } catch {
            throw registered.explained(error)
        }
    }

    /// A call others can join (de-duplication) or cancel by identifier or group: it runs in a
    /// task of its own, registered while it runs.
    @inline(never)
    func performShared(_ admitted: Call, key: String?) async throws(APIError) -> Response {
        let request = admitted.request
        let call = SharedCall(identifier: request.identifier, group: request.group, apiName: request.apiName)
        let (chosen, isNew) = registry.admit(call, key: key, conflict: configuration.tasks.identifierConflict)
        if isNew {
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
        APIError(.cancelled, localized: "the call was cancelled while it waited", request: request)
    }

    /// Tells the observers, if the client has any, then runs the call in its concurrency slots.
    func runLimited(_ call: Call) async throws(APIError) -> Response {
        guard !observers.isEmpty else { return try await runInSlots(call) }
        return try await runObserved(call)
    }

    /// Waits for the tag's and the client's concurrency slots, then runs the chain. Kept small:
    /// its frame is what a waiting call holds.
    private func runInSlots(_ call: Call) async throws(APIError) -> Response {
        let request = call.request
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
        return try await runAdmitted(call)
    }

    /// Runs a call telling the client's observers when it starts (before it waits for a slot:
    /// an activity indicator shows waiting calls too), moves bytes and ends.
    @inline(never)
    private func runObserved(_ call: Call) async throws(APIError) -> Response {
        let (observed, active) = activity.begin(call.request)
        observers.countChanged(active)
        observers.started(observed)
        defer {
            observers.ended(observed)
            observers.countChanged(activity.end())
        }
        var call = call
        let observers = self.observers
        call.context.fields.observedCall = observed
        call.context.fields.progress = ProgressReporter(parent: call.context.fields.progress) { progress in
            observers.progressed(observed, progress)
        }
        return try await runInSlots(call)
    }

    /// Runs a call that has its slots: the client's facts joined to the call's, the target
    /// resolved, then the chain.
    @inline(never)  // its large frame is allocated only once a call has its slot, not while it waits
    func runAdmitted(_ call: Call) async throws(APIError) -> Response {
        var request = call.request
        var context = call.context
        // Only what differs from the defaults is written: the usual call copies its context's
        // box once, for its API name, and nothing else.
        if let apiName = request.apiName { context.fields.apiName = apiName }
        if let tag = request.tag { context.fields.tag = tag }
        if let logger = request.logger ?? configuration.observability.logger { context.fields.logger = logger }
        if redactsMoreThanDefault { context.fields.redaction = credentialRedaction }
        // The clock the call's deadline is an instant of, for the middlewares that tighten it
        // (a type comparison, not a cast: nothing is written for the system clock).
        if type(of: configuration.clock) != SystemClock.self { context.clock = configuration.clock }
        do {
            // Resolved once a call has its slot: a waiting call holds no parsed URL.
            try factory.resolveTarget(&request)
            var response = try await MiddlewareNext(pipeline.stages(for: request, context: context), context: context)(request)
            // Responses made by middlewares (the cache, your own) are judged like the transport's.
            response.settings = responseSettings
            return response
        } catch {
            var failure = Self.callFailure(error, request: request)
            failure.redaction = credentialRedaction
            failure.language = configuration.messageLanguage
            failure.overrides = configuration.messageOverrides
            throw failure
        }
    }

    /// Any error from the chain as the one error type calls throw.
    static func callFailure(_ error: any Error, request: Request) -> APIError {
        if let error = error as? APIError { return error }
        if Task.isCancelled || error is CancellationError {
            return APIError(.cancelled, localized: "the call was cancelled", request: request, underlyingError: error)
        }
        return APIError(.invalidRequest, localized: "a middleware failed: \(error)", request: request, underlyingError: error)
    }

    /// The key under which identical safe requests share one transport request, or `nil`.
    @inline(never)
    func deduplicationKey(for call: Call) -> String? {
        let request = call.request
        guard configuration.tasks.deduplicatesRequests, request.method == .get || request.method == .head, request.body == nil,
            case .memory = call.context.fields.bodyReading,
            let prepared = try? { () throws(APIError) -> PreparedRequest in
                var copy = request
                return try factory.prepare(&copy)
            }()
        else { return nil }
        let headers = prepared.headers.fields.map { "\($0.name.lowercased()):\($0.value)" }.sorted().joined(separator: "\n")
        return "\(request.method.rawValue) \(prepared.url.absoluteString)\n\(request.tag ?? "")\n\(request.needsAuthorization.map { $0 ? "1" : "0" } ?? "-")\n\(headers)"
    }
}
