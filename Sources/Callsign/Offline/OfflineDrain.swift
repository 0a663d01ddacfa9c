import Foundation
import Synchronization

/// What the offline drain did (``APIClient/drainEvents``).
public enum OfflineDrainEvent: Sendable {
    /// One queued request was tried: sent, dead-lettered, or kept for later.
    case item(OfflineReplayReport.Item)
    /// The request at the head of the queue waits: its origin cannot be reached (a probe is
    /// sent after `retryIn`), or it was kept for later (tried again after `retryIn`).
    case waiting(origin: String, retryIn: Duration)
    /// Nothing is left to send now: the queue is empty — or, for a queue other processes share
    /// (a file, a database), nothing this client could claim; it looks again later.
    case drained
    /// ``APIClient/pauseDrain()`` took effect: no request is sent until ``APIClient/resumeDrain()``.
    case paused
    /// ``APIClient/resumeDrain()`` took effect.
    case resumed
}

/// A client's automatic drain of its offline queue (``APIClient/Configuration/Offline/drain``):
/// one task that sends the head of the queue whenever its origin is not known to be down,
/// through ``APIClient/replayNext(owner:lease:)`` — the same claims and leases as `replay()`,
/// below the offline stage, so through rate limits and the circuit breaker. While the origin is
/// down it probes it on the client's clock with the back-off of
/// ``APIClient/Configuration/Offline/probe``. It wakes when a request is queued, when the
/// reachability of an origin changes, and on resume; it holds its client weakly and stops when
/// the client goes.
final class OfflineDrain: Sendable {
    /// What the loop waits for next.
    private enum Wait {
        case untilWoken
        case after(Duration)
    }

    private struct State {
        weak var client: APIClient?
        var paused = false
        var woken = false
        var stopped = false
        var sleeper: CheckedContinuation<Void, Never>?
        var timer: Task<Void, Never>?
        var loop: Task<Void, Never>?
        var listener: Task<Void, Never>?
        /// Back-off steps since the last request went out.
        var failures = 0
        /// When the head's origin may be probed again.
        var probeDue: ContinuousClock.Instant?
        /// Looks at a durable queue that found nothing to claim, in a row.
        var idleLooks = 0
        /// A queued URL whose origin could not be reached: probed before the next claim.
        var down: String?
        /// Whether a request was tried since the queue was last found empty (at first: the
        /// drain has not said yet whether the queue is empty).
        var triedSinceEmpty = true
    }

    private let state = Mutex(State())
    let policy: APIClient.Configuration.Offline.DrainPolicy
    let probe: APIClient.Configuration.Offline.ProbeSchedule
    let reachability: Reachability
    let clock: any CallClock
    let events = Broadcast<OfflineDrainEvent>()
    /// Whether the queue outlives the process, and so may be written by others.
    private let durable: Bool
    /// How long a claim on the head lasts without renewal, as in `replay()`.
    static let lease: Duration = .seconds(300)

    init(configuration: APIClient.Configuration, queue: any OfflineQueueStorage, reachability: Reachability) {
        policy = configuration.offline.drain
        durable = queue.isDurable
        probe = configuration.offline.probe
        self.reachability = reachability
        clock = configuration.clock
    }

    /// Binds the drain to its client; with a durable queue it starts at once, for what an
    /// earlier run left.
    func attach(_ client: APIClient) {
        state.withLock { $0.client = client }
        if durable { wake() }
    }

    /// A request to `url` was queued because its origin could not be reached: the drain probes
    /// that origin before it claims anything.
    func queued(_ url: String) {
        state.withLock { state in
            if state.down == nil { state.down = url }
        }
        wake()
    }

    /// Something may be sendable now: a request was queued, an origin came back.
    func wake() {
        guard policy != .manual else { return }
        let resume = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.stopped else { return nil }
            if state.loop == nil {
                state.loop = Task { [self] in await run() }
                state.listener = Task { [self, reachability] in
                    for await change in reachability.changes where change.status != .unreachable { wake() }
                }
            }
            guard let sleeper = state.sleeper else {
                state.woken = true  // for the next wait, which then does not sleep
                return nil
            }
            state.sleeper = nil
            state.timer?.cancel()
            state.timer = nil
            return sleeper
        }
        resume?.resume()
    }

    func pause() {
        let changed = state.withLock { state in
            defer { state.paused = true }
            return !state.paused
        }
        if changed { events.send(.paused) }
    }

    func resume() {
        let changed = state.withLock { state in
            defer { state.paused = false }
            return state.paused
        }
        if changed {
            events.send(.resumed)
            wake()
        }
    }

    var isPaused: Bool { state.withLock { $0.paused } }

    /// Ends the drain for good (its client is gone).
    func stop() {
        let (tasks, sleeper) = state.withLock { state -> ([Task<Void, Never>], CheckedContinuation<Void, Never>?) in
            state.stopped = true
            defer { state.sleeper = nil }
            return ([state.loop, state.listener, state.timer].compactMap { $0 }, state.sleeper)
        }
        for task in tasks { task.cancel() }
        sleeper?.resume()
        events.finish()
    }

    private func run() async {
        while !Task.isCancelled {
            let next: Wait
            do {
                guard let client = state.withLock({ $0.client }) else { return }
                next = await round(client)
            }
            await wait(next)
        }
    }

    /// Waits until woken or, for `.after`, until the duration passed on the clock.
    private func wait(_ next: Wait) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.woken || state.stopped {
                    state.woken = false
                    return true
                }
                state.sleeper = continuation
                if case .after(let duration) = next {
                    state.timer = Task { [self, clock] in
                        try? await clock.sleep(for: duration)
                        if !Task.isCancelled { ring() }
                    }
                }
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// The timer's end: the sleeper goes on, unless a wake came first.
    private func ring() {
        let sleeper = state.withLock { state in
            defer {
                state.sleeper = nil
                state.timer = nil
            }
            return state.sleeper
        }
        sleeper?.resume()
    }

    /// One pass: sends from the head of the queue while it goes out, and says what to wait for.
    /// The claim of the head is the look at it; an origin known to be down is probed before
    /// anything is claimed.
    private func round(_ client: APIClient) async -> Wait {
        guard !isPaused, policy.allows(reachability.path) else { return .untilWoken }  // resume or a path change wakes it
        if let down = state.withLock({ $0.down }), let origin = Origin(down), reachability.status(of: origin) == .unreachable {
            let now = clock.now
            let due = state.withLock { state -> ContinuousClock.Instant in
                if state.probeDue == nil { state.probeDue = now + probe.delay(afterFailures: state.failures) }
                return state.probeDue ?? now
            }
            if now < due { return .after(due - now) }
            guard await client.probe(down) else { return backOff(origin: origin) }
            reachability.record(.reachable, origin: origin)
        }
        let owner = UUID().uuidString
        while !isPaused, !Task.isCancelled {
            let item: OfflineReplayReport.Item?
            do {
                item = try await client.replayNext(owner: owner, lease: Self.lease)
            } catch {
                return backOff(origin: nil)
            }
            guard let item else { return await emptied(client) }
            events.send(.item(item))
            state.withLock { $0.idleLooks = 0 }
            if case .keptForLater = item.outcome {
                state.withLock { $0.down = item.request.url }
                return backOff(origin: Origin(item.request.url))
            }
            state.withLock { ($0.failures, $0.probeDue, $0.down, $0.triedSinceEmpty) = (0, nil, nil, true) }
        }
        return .untilWoken
    }

    /// Nothing was ready to claim. In a memory queue that is checked (a `replay()` may hold the
    /// head): empty, it waits for a wake. A durable queue is never listed — an outbox may hold many
    /// rows, and other processes may hold its head — so it is claimed again after the probe's
    /// first wait, then twice as long each time, up to its maximum; what this client queues wakes
    /// it at once. Either way "drained" is said once after the requests tried since it last was.
    private func emptied(_ client: APIClient) async -> Wait {
        if !durable, (try? await client.queuedRequests().isEmpty) == false {
            return .after(probe.delay(afterFailures: state.withLock { $0.failures }))
        }
        let (tried, idle) = state.withLock { state in
            defer {
                (state.failures, state.probeDue, state.triedSinceEmpty) = (0, nil, false)
                state.idleLooks = min(state.idleLooks + 1, 64)
            }
            return (state.triedSinceEmpty, state.idleLooks)
        }
        if tried { events.send(.drained) }
        return durable ? .after(probe.delay(afterFailures: idle)) : .untilWoken
    }

    /// One more failed step: the next try waits longer, up to the schedule's bound.
    private func backOff(origin: Origin?) -> Wait {
        let now = clock.now
        let delay = state.withLock { state -> Duration in
            state.failures = min(state.failures + 1, 64)
            state.triedSinceEmpty = true
            let delay = probe.delay(afterFailures: state.failures)
            state.probeDue = now + delay
            return delay
        }
        events.send(.waiting(origin: origin?.description ?? "", retryIn: delay))
        return .after(delay)
    }
}
