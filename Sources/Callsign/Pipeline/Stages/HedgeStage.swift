import Foundation

/// Hedged requests (``MiddlewareStage/hedging``): when no answer head has arrived after the
/// ``HedgePolicy``'s delay, the same request goes down the rest of the chain again, and the
/// first answer wins; the other attempts are cancelled and awaited, so their connections close.
///
/// It sits below ``MiddlewareStage/retry`` (each retry attempt may be hedged; a hedge is not a
/// retry) and above ``MiddlewareStage/redirects``: every hedge crosses authentication, the
/// cache, the circuit breaker and its rate-limit gate like any request — it takes a turn of its
/// own (the server sees it) and gives the turn back when cancelled while it waits, and an open
/// circuit refuses it at once while the first attempt goes on.
struct HedgeStage: Middleware {
    let defaultPolicy: HedgePolicy?
    let clock: any CallClock
    let telemetry: Telemetry
    let latencies: HedgeLatencies

    private enum Event: Sendable {
        /// An attempt's answer head arrived.
        case head
        /// The delay before the next hedge passed.
        case delayPassed
        /// Attempt `index` (0: the first) ended.
        case ended(index: Int, Result<Response, any Error>)
    }

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        // A download writes one file: two attempts would write it together.
        guard let policy = request.hedging ?? defaultPolicy, policy.isEnabled, request.maySendAgain, !context.fields.bodyReading.isFile, context.fields.webSocket == nil
        else { return try await next(request) }
        let key = policy.delay.isObserved ? HedgeLatencies.Key(request) : nil
        let delay = policy.delay.duration { percentile in key.flatMap { latencies.percentile(percentile, for: $0) } }
        let started = clock.now
        // No hedge could start before the deadline with as long to answer as the first attempt had.
        if let deadline = context.fields.deadline, deadline - started < delay { return try await next(request) }
        return try await race(request, policy: policy, delay: delay, key: key, started: started, context: context, next: next)
    }

    /// Runs the first attempt, a hedge after each delay until a head arrives, and returns the
    /// first answer (or, when every attempt failed, the first attempt's failure).
    private func race(
        _ request: Request, policy: HedgePolicy, delay: Duration, key: HedgeLatencies.Key?, started: ContinuousClock.Instant,
        context: MiddlewareContext, next: MiddlewareNext
    ) async throws -> Response {
        let (events, sink) = AsyncStream.makeStream(of: Event.self)
        var attemptContext = context
        attemptContext.headArrived = { sink.yield(.head) }
        let attempt = attemptContext
        let clock = self.clock
        let outcome = await withTaskGroup(of: Void.self, returning: Result<Response, any Error>?.self) { group in
            func launch(_ index: Int) {
                group.addTask {
                    do {
                        sink.yield(.ended(index: index, .success(try await next(request, context: attempt))))
                    } catch {
                        sink.yield(.ended(index: index, .failure(error)))
                    }
                }
            }
            launch(0)
            group.addTask {
                for _ in 0..<policy.maximumExtraAttempts {
                    do { try await clock.sleep(for: delay) } catch { return }
                    sink.yield(.delayPassed)
                }
            }
            var headArrived = false
            var hedging = true
            var launched = 1
            var running = 1
            var failures: [Int: any Error] = [:]
            var outcome: Result<Response, any Error>?
            for await event in events {
                switch event {
                case .head:
                    guard !headArrived else { continue }
                    headArrived = true
                    if let key { latencies.record(clock.now - started, for: key) }
                case .delayPassed:
                    guard hedging, !headArrived, launched <= policy.maximumExtraAttempts else { continue }
                    if let deadline = context.fields.deadline, deadline - clock.now < delay {
                        hedging = false  // the time left only shrinks: no later hedge either
                        continue
                    }
                    launch(launched)
                    telemetry.recordHedgeStarted(request)
                    log("hedging", request: request, hedge: launched, delay: delay, context: context)
                    launched += 1
                    running += 1
                case .ended(let index, .success(let response)):
                    if index > 0 {
                        telemetry.recordHedgeWon(request)
                        log("hedge won", request: request, hedge: index, delay: delay, context: context)
                    }
                    outcome = .success(response)
                case .ended(let index, .failure(let error)):
                    // Another attempt may still answer; when none is left, the first one's failure
                    // says the most (a hedge refused by an open circuit says little).
                    failures[index] = error
                    running -= 1
                    if running == 0 {
                        hedging = false
                        outcome = .failure(failures[0] ?? error)
                    }
                }
                if outcome != nil { break }
            }
            // The losers are cancelled here and awaited as the group ends: none is left running.
            group.cancelAll()
            sink.finish()
            return outcome
        }
        guard let outcome else { throw CancellationError() }  // the call was cancelled
        return try outcome.get()
    }

    private func log(_ message: String, request: Request, hedge: Int, delay: Duration, context: MiddlewareContext) {
        guard let logger = context.fields.logger, logger.logLevel <= .debug else { return }
        logger.debug(
            "\(message)",
            metadata: [
                "callsign.api": .string(request.apiName ?? ""), "callsign.attempt": .stringConvertible(context.fields.attempt),
                "callsign.hedge": .stringConvertible(hedge), "callsign.delay_ms": .stringConvertible(delay.wholeMilliseconds),
            ])
    }
}
