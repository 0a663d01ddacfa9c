import Foundation

/// Rate limits (``MiddlewareStage/rateLimit``): every request to an origin (or of a tag with a
/// gate of its own) waits at its gate in ``RateLimits`` until the server's wait is over and its
/// limit allows a send, never past the call's deadline; each answer tells the gate what the
/// server said. With a ``RateLimitStore`` the turns come from the store, shared by every process.
struct RateLimitStage: Middleware {
    let limits: RateLimits
    let clock: any CallClock
    let telemetry: Telemetry

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard let key = limits.key(path: request.path, tag: request.tag ?? context.fields.tag) else { return try await next(request) }
        guard let store = limits.store else {
            try await wait(at: key, request: request, context: context)
            let response = try await next(request)
            limits.observe(response, key: key, now: clock.now)
            return response
        }
        try await wait(at: key, in: store, request: request, context: context)
        let response = try await next(request)
        if let closing = limits.observe(response, key: key, now: clock.now), closing > .zero {
            do {
                try await store.close(key.storeName, for: closing)
            } catch {
                // This process's gate is closed all the same, and the answer is the caller's:
                // the others only miss the server's word until their own answers say it.
                context.fields.logger?.warning(
                    "the rate-limit store did not take the server's wait", metadata: ["callsign.error": "\(error)"])
            }
        }
        return response
    }

    /// Waits for a turn from the shared `store`: one round trip for the turn, then the wait on
    /// the call clock, and again for as long as this process's own gate is closed.
    private func wait(at key: RateLimits.Key, in store: any RateLimitStore, request: Request, context: MiddlewareContext) async throws {
        let started = clock.now
        // What this process already knows refuses a call without a round trip or a turn taken.
        if let closed = limits.closedUntil(key), let deadline = context.fields.deadline, closed > deadline {
            throw refusal(key, in: closed - started, request: request)
        }
        let reservation: RateLimitReservation
        do {
            reservation = try await store.reserve(key.storeName, limit: limits.limit(for: key), within: context.fields.deadline.map { max(.zero, $0 - started) })
        } catch {
            var error = error
            error.request = error.request ?? request
            error.requestSent = false
            throw error
        }
        guard reservation.isAdmitted else { throw refusal(key, in: reservation.wait, request: request) }
        // From the answer's arrival: the store's "now" came before it, so the turn is never early.
        var until = clock.now + reservation.wait
        while true {
            if let closed = limits.closedUntil(key), closed > until { until = closed }
            let now = clock.now
            if let deadline = context.fields.deadline, until > deadline {
                await store.release(key.storeName, reservation: reservation)
                throw refusal(key, in: until - now, request: request)
            }
            if until <= now {
                if now > started { telemetry.recordRateLimitWait(request, duration: now - started) }
                return
            }
            do {
                try await clock.sleep(for: until - now)
            } catch {
                await store.release(key.storeName, reservation: reservation)
                throw error
            }
        }
    }

    private func refusal(_ key: RateLimits.Key, in wait: Duration, request: Request) -> APIError {
        APIError.notSent(
            .timedOut,
            "the rate limit of \(Self.describe(key)) lets the next request go in \(APIClient.describe(wait)), after the call's deadline",
            request: request)
    }

    /// Waits for the gate to let the request go.
    private func wait(at key: RateLimits.Key, request: Request, context: MiddlewareContext) async throws {
        let started = clock.now
        var reserved: ContinuousClock.Instant?
        while true {
            let now = clock.now
            switch limits.admit(key, now: now, deadline: context.fields.deadline, reserved: reserved) {
            case .go:
                if now > started { telemetry.recordRateLimitWait(request, duration: now - started) }
                return
            case .refused(let until):
                throw refusal(key, in: until - now, request: request)
            case .wait(let until, let slot):
                reserved = slot
                do {
                    try await clock.sleep(for: until - now)
                } catch {
                    if let slot { limits.release(key, slot: slot) }
                    throw error
                }
            }
        }
    }

    private static func describe(_ key: RateLimits.Key) -> LocalizedMessage {
        switch key {
        case .origin(let origin): LocalizedMessage(sentence: origin.description)
        case .tag(let tag): "the tag \(tag)" as LocalizedMessage
        }
    }
}
