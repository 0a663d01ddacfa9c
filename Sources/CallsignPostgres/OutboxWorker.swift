public import Callsign
import Foundation
public import Logging
import PostgresNIO
public import ServiceLifecycle
import Synchronization

/// Drains a client's offline queue continuously: a swift-service-lifecycle `Service` for server
/// apps, one per process of the fleet.
///
/// - `concurrency` loops each claim the next request whose turn it has come (see
///   ``PostgresOfflineQueue``) and send it through the client's chain below the offline stage —
///   fresh credentials, retry with `Retry-After`, deadline.
/// - It wakes **at once** when a request is queued (PostgreSQL `LISTEN`/`NOTIFY`, also for
///   requests queued by other processes), and otherwise looks every `pollInterval`.
/// - A request kept for later (the server is down, a 5xx, a 401) or a storage failure backs the
///   loop off exponentially, from `backoff.lowerBound` to `backoff.upperBound`.
/// - An origin that cannot be reached gates the loop that met it: after each back-off the loop
///   probes it (one `HEAD /`, no credentials) and claims nothing until it answers, instead of
///   sending a queued request to a server that is down on every round. When the client's
///   `client.reachability` learns that an origin is back (any call of the process
///   got an answer from it), the loops wake at once instead of waiting the back-off out.
/// - While it runs it **is** the client's drain: the client's own automatic drain
///   (`configuration.offline.drain`) is paused, and resumed when the worker ends.
/// - **Graceful shutdown** stops claiming: requests in flight finish (or are released with their
///   lease when the group cancels), so none is lost — a released request is sent by the next worker.
///
/// ```swift
/// let worker = OutboxWorker(client: client, concurrency: 8)
/// let group = ServiceGroup(services: [postgres, worker], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
public struct OutboxWorker: Service {
    /// The client whose offline queue is drained.
    public let client: APIClient
    /// How many requests are in flight at once. Default 4.
    public var concurrency: Int
    /// How long a claim lasts without renewal (renewed while a send is in flight). Default 60 s.
    public var lease: Duration
    /// How often an idle worker looks at the queue without being notified. Default 30 s.
    public var pollInterval: Duration
    /// The shortest and longest wait after a failure. Default 0.2 s to 30 s.
    public var backoff: ClosedRange<Duration>
    /// Where the worker reports failures.
    public var logger: Logger

    /// A worker for `client`'s offline queue; `LISTEN`s when that queue is a ``PostgresOfflineQueue``.
    public init(
        client: APIClient, concurrency: Int = 4, lease: Duration = .seconds(60), pollInterval: Duration = .seconds(30),
        backoff: ClosedRange<Duration> = .milliseconds(200) ... .seconds(30), logger: Logger = Logger(label: "callsign.outbox")
    ) {
        self.client = client
        self.concurrency = max(1, concurrency)
        self.lease = lease
        self.pollInterval = pollInterval
        self.backoff = backoff
        self.logger = logger
    }

    /// Runs until graceful shutdown or cancellation.
    public func run() async throws {
        let wakeup = Wakeup()
        // The worker is the queue's drainer while it runs; a drain the app had paused stays paused.
        let pausedBefore = client.isDrainPaused
        client.pauseDrain()
        defer { if !pausedBefore { client.resumeDrain() } }
        await withGracefulShutdownHandler {
            // Each task says whether it was a drain loop: the worker ends when every loop has, and
            // only then cancels the listener — never a loop with a request in flight.
            await withTaskGroup(of: Bool.self) { group in
                if let queue = client.offlineQueue as? PostgresOfflineQueue {
                    group.addTask {
                        await listen(queue, wakeup: wakeup)
                        return false
                    }
                }
                group.addTask { [client] in
                    // An origin back (seen by any call, or a probe) ends every loop's back-off.
                    for await change in client.reachability.changes where change.status != .unreachable { wakeup.signal() }
                    return false
                }
                for _ in 0..<concurrency {
                    group.addTask {
                        await drain(wakeup: wakeup)
                        return true
                    }
                }
                var running = concurrency
                while running > 0, let wasLoop = await group.next() {
                    if wasLoop { running -= 1 }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            wakeup.stop()
        }
    }

    /// One loop: claim, send, repeat; wait when there is nothing to do or something failed.
    private func drain(wakeup: Wakeup) async {
        let owner = "worker-\(UUID().uuidString)"
        var delay = backoff.lowerBound
        // A queued URL whose origin could not be reached: probed, not sent to, until it answers.
        var down: String?
        while !wakeup.isStopped, !Task.isCancelled {
            if let url = down {
                if URL(string: url).map(client.reachability.status(of:)) == .unreachable, await !client.probe(url) {
                    await wakeup.wait(upTo: delay)
                    delay = min(delay * 2, backoff.upperBound)
                    continue
                }
                down = nil
            }
            do throws(APIError) {
                guard let item = try await client.replayNext(owner: owner, lease: lease) else {
                    await wakeup.wait(upTo: pollInterval)
                    continue
                }
                if case .keptForLater(let error) = item.outcome {
                    if let url = URL(string: item.request.url), client.reachability.status(of: url) == .unreachable { down = item.request.url }
                    logger.info("a queued request is kept for later", metadata: ["callsign.queue_id": "\(item.request.id)", "callsign.error": "\(error.message)"])
                    await wakeup.wait(upTo: delay)
                    delay = min(delay * 2, backoff.upperBound)
                } else {
                    delay = backoff.lowerBound
                }
            } catch {
                if error.code == .cancelled { return }
                logger.warning("the outbox could not be drained", metadata: ["callsign.error": "\(error.message)"])
                await wakeup.wait(upTo: delay)
                delay = min(delay * 2, backoff.upperBound)
            }
        }
    }

    /// Wakes the loops on every `NOTIFY` of the queue's channel; reconnects after a failure.
    private func listen(_ queue: PostgresOfflineQueue, wakeup: Wakeup) async {
        var delay = backoff.lowerBound
        while !Task.isCancelled, !wakeup.isStopped {
            do {
                try await queue.migrate()
                try await queue.client.withConnection { connection in
                    try await connection.listen(on: queue.channel) { notifications in
                        wakeup.signal()  // requests queued before LISTEN took effect
                        delay = backoff.lowerBound
                        for try await _ in notifications { wakeup.signal() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("LISTEN on the outbox failed; polling until it is back", metadata: ["callsign.error": "\(error)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, backoff.upperBound)
            }
        }
    }
}

/// Wakes waiting loops: on a notification, on shutdown, or after their time is up.
final class Wakeup: Sendable {
    private struct State {
        var stopped = false
        var generation = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }
    private let state = Mutex(State())

    var isStopped: Bool { state.withLock { $0.stopped } }

    func signal() {
        let waiting = state.withLock { state in
            state.generation += 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for continuation in waiting { continuation.resume() }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        signal()
    }

    /// Returns on the next signal, on stop, on cancellation, or after `duration`.
    func wait(upTo duration: Duration) async {
        let ticket = state.withLock { state -> (id: Int, generation: Int)? in
            guard !state.stopped else { return nil }
            state.nextWaiter += 1
            return (state.nextWaiter, state.generation)
        }
        guard let (id, generation) = ticket else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let resumeNow = self.state.withLock { state in
                            // A signal since the ticket was taken counts: none is missed.
                            guard !state.stopped, !Task.isCancelled, state.generation == generation else { return true }
                            state.waiters[id] = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    self.resume(id)
                }
            }
            group.addTask { try? await Task.sleep(for: duration) }
            await group.next()
            group.cancelAll()
        }
    }

    private func resume(_ id: Int) {
        let continuation = state.withLock { $0.waiters.removeValue(forKey: id) }
        continuation?.resume()
    }
}
