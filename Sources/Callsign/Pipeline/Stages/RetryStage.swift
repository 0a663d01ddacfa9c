import Foundation
import HTTPTypes

/// Gives a call one overall time limit — attempts, waits, redirects and body reading together.
struct DeadlineMiddleware: Middleware {
    let clock: any CallClock
    let defaultDeadline: Duration?

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard let limit = request.deadline ?? defaultDeadline else { return try await next(request) }
        var context = context
        context.call.deadline = clock.now + limit
        let bounded = context
        do {
            return try await Deadline.run(within: limit) { try await next(request, context: bounded) }
        } catch is Deadline.Expired {
            throw APIError(
                .timedOut, localized: "the deadline of \(APIClient.describe(limit)) passed before the call completed", request: request)
        }
    }
}

/// Tries failed attempts again under a ``RetryPolicy``.
struct RetryMiddleware: Middleware {
    let clock: any CallClock
    let defaultPolicy: RetryPolicy

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let policy = request.retry ?? defaultPolicy
        guard policy.maximumAttempts > 1 else { return try await next(request) }
        var request = request
        if policy.addsIdempotencyKey, !request.isIdempotent, !request.headers.contains("Idempotency-Key") {
            // One key per logical request: every attempt carries the same one.
            request.headers["Idempotency-Key"] = UUID().uuidString
        }
        let replayable = request.body?.content.isReplayable ?? true
        guard replayable, request.isIdempotent || request.headers.contains("Idempotency-Key") else {
            return try await next(request)
        }
        var attempt = 1
        while true {
            let wait: Duration
            let outcome: LocalizedMessage
            var lastResponse: Response?
            var lastError: APIError?
            do {
                let response = try await next(request)
                guard attempt < policy.maximumAttempts, policy.retryableStatusCodes.contains(response.status.code) else {
                    return response
                }
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
            if let end = context.call.deadline, clock.now + wait > end {
                var error = APIError(
                    .timedOut,
                    localized: "attempt \(attempt) failed (\(outcome)); the next would start after the deadline (wait \(APIClient.describe(wait)))",
                    request: request, response: lastResponse)
                error.responseStarted = lastResponse != nil
                // The deadline keeps what the last attempt knew: whether the request got out.
                error.requestSent = lastResponse != nil || (lastError?.requestSent ?? true)
                throw error
            }
            if let logger = context.logger, logger.logLevel <= .debug {
                logger.debug(
                    "retrying",
                    metadata: [
                        "callsign.api": .string(request.apiName ?? ""), "callsign.attempt": .stringConvertible(attempt),
                        "callsign.outcome": .string(SecretMask(configuration: context.configuration, request: request).text(outcome.resolved(in: context.configuration.messageLanguage))),
                        "callsign.wait_ms": .stringConvertible(wait.wholeMilliseconds),
                    ])
            }
            context.configuration.observability.attemptObserver?(AttemptReport(attempt: attempt, outcome: outcome.resolved(in: context.configuration.messageLanguage), wait: wait))
            try await clock.sleep(for: wait)
            attempt += 1
        }
    }
}

/// What the retry policy did after one attempt, for `--verbose` and similar reports.
public struct AttemptReport: Sendable {
    /// The attempt that failed (1-based).
    public var attempt: Int
    /// What happened: a status or an error message, in the client's language.
    public var outcome: String
    /// The wait before the next attempt.
    public var wait: Duration
}
