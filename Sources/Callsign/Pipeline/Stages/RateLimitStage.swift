import Foundation

/// Rate limits (``MiddlewareStage/rateLimit``): every request to an origin (or of a tag with a
/// gate of its own) waits at its gate in ``RateLimits`` until the server's wait is over and its
/// limit allows a send, never past the call's deadline; each answer tells the gate what the
/// server said.
struct RateLimitStage: Middleware {
    let limits: RateLimits
    let clock: any CallClock
    let telemetry: Telemetry

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard let key = limits.key(path: request.path, tag: request.tag ?? context.tag) else { return try await next(request) }
        try await wait(at: key, request: request, context: context)
        let response = try await next(request)
        limits.observe(response, key: key, now: clock.now)
        return response
    }

    /// Waits for the gate to let the request go.
    private func wait(at key: RateLimits.Key, request: Request, context: MiddlewareContext) async throws {
        let started = clock.now
        var reserved: ContinuousClock.Instant?
        while true {
            let now = clock.now
            switch limits.admit(key, now: now, deadline: context.deadline, reserved: reserved) {
            case .go:
                if now > started { telemetry.recordRateLimitWait(request, duration: now - started) }
                return
            case .refused(let until):
                throw APIError.notSent(
                    .timedOut,
                    "the rate limit of \(Self.describe(key)) lets the next request go in \(APIClient.describe(until - now)), after the call's deadline",
                    request: request)
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
