import Foundation
import HTTPTypes

/// The offline store (``MiddlewareStage/offline``): a request with ``StorePolicy/offline`` that
/// cannot reach the server is written to the offline queue, and the caller hears
/// ``APIError/Code/queuedOffline``. Only such requests pass through it; a replay starts below it.
struct OfflineStage: Middleware {
    let queue: any OfflineQueueStorage
    let factory: RequestFactory
    /// The client's retry policy, for whether the request will carry an idempotency key.
    let defaultRetry: RetryPolicy
    /// Told of each request queued, so it goes out once its origin is back.
    let drain: OfflineDrain

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard request.storePolicy == .offline, !context.fields.isReplay else { return try await next(request) }
        var request = request
        // Sending twice is harmless when the method is idempotent, or when the caller's key
        // (their own header, or the retry policy's) lets the server recognise a repeat.
        let policy = request.retry ?? defaultRetry
        let repeatable = request.isIdempotent || request.headers.contains("Idempotency-Key") || policy.addsIdempotencyKey
        // One key for the first attempts and every replay, whatever the method: a server that
        // honours keys can recognise a request it already acted on.
        request.addIdempotencyKeyIfMissing()
        do {
            return try await next(request)
        } catch let error as APIError {
            guard error.isUnreachable else { throw error }
            // Queue only what never reached the server, or what may safely arrive twice.
            guard !error.requestSent || repeatable else {
                var unknown = APIError(
                    .deliveryUnknown,
                    localized: "the request was sent and no answer came (\(error.text)); the server may have processed it, so it was not queued — send it with an Idempotency-Key the server honours to have it queued",
                    request: request, underlyingError: error)
                unknown.requestSent = true
                throw unknown
            }
            throw await enqueue(request, failure: error, context: context)
        }
    }

    /// Queues the request; returns the error the caller gets (queued, or why it could not be).
    private func enqueue(_ request: Request, failure: APIError, context: MiddlewareContext) async -> APIError {
        let queued: QueuedRequest
        do throws(APIError) {
            queued = try await Self.queuedForm(of: request, factory: factory, redaction: context.fields.redaction)
        } catch {
            var refusal = error
            refusal.text = "the server could not be reached (\(failure.text)), and the request could not be queued: \(error.text)"
            refusal.underlyingError = failure
            return refusal
        }
        let stored: QueuedRequest
        do {
            stored = try await queue.enqueue(queued)
        } catch {
            let reason = (error as? APIError)?.text ?? LocalizedMessage(sentence: "\(error)")
            return APIError(
                .storage, localized: "the server could not be reached (\(failure.text)), and the request was NOT queued: \(reason)",
                request: request, underlyingError: error)
        }
        // Whole sentences, one a case, so that each is translated whole.
        let sentence =
            switch (queue.isDurable, drain.policy == .manual) {
            case (true, true): "the server could not be reached (\(failure.text)); the request was queued as #\(stored.id) and will be sent by replay()" as LocalizedMessage
            case (true, false): "the server could not be reached (\(failure.text)); the request was queued as #\(stored.id) and will be sent once the server can be reached" as LocalizedMessage
            case (false, true): "the server could not be reached (\(failure.text)); the request was queued as #\(stored.id) in memory (lost if the process ends) and will be sent by replay()" as LocalizedMessage
            case (false, false): "the server could not be reached (\(failure.text)); the request was queued as #\(stored.id) in memory (lost if the process ends) and will be sent once the server can be reached" as LocalizedMessage
            }
        var outcome = APIError(.queuedOffline, localized: sentence, request: request, underlyingError: failure)
        outcome.queuedRequestID = stored.id
        drain.queued(stored.url)
        context.fields.logger?.debug(
            "request queued offline",
            metadata: ["callsign.api": .string(request.apiName ?? ""), "callsign.queue_id": .stringConvertible(stored.id)])
        return outcome
    }

    /// What is written to the queue: method, URL, headers and body bytes as they would be sent.
    /// Secrets are never written: a request carrying one in its own headers, query or body is
    /// refused (credentials from ``APIClient/Configuration/authentication`` are added at replay).
    static func queuedForm(
        of request: Request, factory: RequestFactory, redaction: Redaction
    ) async throws(APIError) -> QueuedRequest {
        var copy = request
        let prepared = try factory.prepare(&copy)
        let secretHeaders = prepared.headers.fields.map(\.name).filter(redaction.isSecretHeader)
        guard secretHeaders.isEmpty else {
            throw APIError(
                .invalidRequest,
                localized: "it carries a secret in its \(secretHeaders.joined(separator: ", ")) header, and secrets are never written to the offline queue; let configuration.authentication add credentials (they are attached when the request is replayed)",
                request: request)
        }
        let url = prepared.url.absoluteString
        guard redaction.redact(url: url) == url else {
            throw APIError(
                .invalidRequest, localized: "its URL carries a secret query parameter, and secrets are never written to the offline queue",
                request: request)
        }
        let body = try await prepared.body?.collect()
        if let body, redaction.redact(body: body, contentType: prepared.headers["Content-Type"]) != body {
            throw APIError(
                .invalidRequest, localized: "its body carries a secret field, and secrets are never written to the offline queue", request: request)
        }
        return QueuedRequest(
            apiName: request.apiName, method: request.method.rawValue, url: url, headers: prepared.headers, body: body,
            needsAuthorization: request.wantsCredentials(ownOrigin: factory.settings.baseURL.flatMap(Origin.init)), tag: request.tag, orderingKey: request.orderingKey ?? request.apiName)
    }
}
