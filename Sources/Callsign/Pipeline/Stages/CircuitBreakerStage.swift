/// The circuit breaker (``MiddlewareStage/circuitBreaker``): a request to an origin whose circuit
/// is open fails at once with ``APIError/Code/circuitOpen`` (nothing sent, so the
/// ``MiddlewareStage/offline`` stage queues it when its store policy allows); every other
/// request's outcome is recorded against its origin's circuit.
struct CircuitBreakerStage: Middleware {
    let breaker: CircuitBreaker
    let clock: any CallClock
    let telemetry: Telemetry

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard let origin = Origin(request.path) else { return try await next(request) }
        let (admission, opened) = breaker.admit(origin, now: clock.now)
        if let opened { telemetry.recordCircuitTransition(opened) }
        let probe: Bool
        switch admission {
        case .go(let isProbe):
            probe = isProbe
        case .reject(let until):
            telemetry.recordCircuitRejection(request)
            let message: LocalizedMessage = if let until {
                "the circuit breaker for \(origin.description) is open after repeated failures; the next call is let through in \(APIClient.describe(until - clock.now))" as LocalizedMessage
            } else {
                "the circuit breaker for \(origin.description) is half-open and its one probe call has not answered yet" as LocalizedMessage
            }
            throw APIError.notSent(.circuitOpen, message, request: request)
        }
        let outcome: CircuitBreaker.Outcome
        let response: Response
        do {
            response = try await next(request)
            outcome = response.source == .network && breaker.failureStatuses.contains(response.status.code) ? .failure : .success
        } catch {
            record(Self.outcome(of: error), origin: origin, probe: probe)
            throw error
        }
        // An answer that did not come from the server (a mock, a middleware's) says nothing of it;
        // only statuses in the set are failures.
        record(response.source == .network ? outcome : .neutral, origin: origin, probe: probe)
        return response
    }

    private func record(_ outcome: CircuitBreaker.Outcome, origin: Origin, probe: Bool) {
        if let transition = breaker.record(outcome, origin: origin, probe: probe, now: clock.now) {
            telemetry.recordCircuitTransition(transition)
        }
    }

    /// Transport failures and time limits count against the origin; a cancellation, a refused
    /// request or an answer too large does not.
    private static func outcome(of error: any Error) -> CircuitBreaker.Outcome {
        guard let error = error as? APIError else { return .neutral }
        switch error.code {
        case .transport, .timedOut, .invalidResponse: return .failure
        default: return .neutral
        }
    }
}
