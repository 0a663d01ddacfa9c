import Foundation

/// Tries failed attempts again under a ``RetryPolicy`` (``MiddlewareStage/retry``), counting
/// them in ``MiddlewareContext/Fields/attempt``.
struct RetryStage: Middleware {
    let clock: any CallClock
    let defaultPolicy: RetryPolicy
    let log: CallLogSettings
    let observers: CallObservers

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let policy = request.retry ?? defaultPolicy
        guard policy.maximumAttempts > 1 else { return try await next(request) }
        var request = request
        if policy.addsIdempotencyKey, !request.isIdempotent {
            // One key per logical request: every attempt carries the same one.
            request.addIdempotencyKeyIfMissing()
        }
        guard request.maySendAgain else { return try await next(request) }
        var attempt = 1
        var context = context
        while true {
            let wait: Duration
            let outcome: LocalizedMessage
            var lastResponse: Response?
            var lastError: APIError?
            // The first attempt is the context's own: its box is shared, not copied.
            if context.fields.attempt != attempt { context.fields.attempt = attempt }
            do {
                let response = try await next(request, context: context)
                // A stored answer is what the server said earlier: asking the cache again changes nothing.
                guard attempt < policy.maximumAttempts, policy.retryableStatusCodes.contains(response.status.code), response.source == .network
                else { return response }
                if let header = response.headers[.retryAfter], let after = RetryAfter.parse(header) {
                    guard after <= policy.maximumRetryAfter else { return response }
                    wait = after
                } else {
                    wait = policy.delay(afterAttempt: attempt)
                }
                outcome = "status \(response.status.code)" as LocalizedMessage
                lastResponse = response
            } catch let error as APIError {
                guard attempt < policy.maximumAttempts, policy.retriesTransportErrors, error.code == .transport,
                    !error.responseStarted
                else { throw error }
                wait = policy.delay(afterAttempt: attempt)
                outcome = error.text
                lastError = error
            }
            if let end = context.fields.deadline, clock.now + wait > end {
                var error = APIError(
                    .timedOut,
                    localized: "attempt \(attempt) failed (\(outcome)); the next would start after the deadline (wait \(APIClient.describe(wait)))",
                    request: request, response: lastResponse)
                error.responseStarted = lastResponse != nil
                // The deadline keeps what the last attempt knew: whether the request got out.
                error.requestSent = lastResponse != nil || (lastError?.requestSent ?? true)
                throw error
            }
            let said = outcome.resolved(in: log.language, overrides: log.overrides)
            if let logger = context.fields.logger, logger.logLevel <= .debug {
                logger.debug(
                    "retrying",
                    metadata: [
                        "callsign.api": .string(request.apiName ?? ""), "callsign.attempt": .stringConvertible(attempt),
                        "callsign.outcome": .string(SecretMask(redaction: context.fields.redaction, request: request).text(said)),
                        "callsign.wait_ms": .stringConvertible(wait.wholeMilliseconds),
                    ])
            }
            if let call = context.fields.observedCall { observers.willRetry(call, AttemptReport(attempt: attempt, outcome: said, wait: wait)) }
            try await clock.sleep(for: wait)
            attempt += 1
        }
    }
}
