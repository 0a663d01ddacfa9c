import Foundation
import HTTPTypes

extension APIClient {
    /// What the automatic drain of the offline queue does, from now on: each request tried, each
    /// wait for an origin, and the queue running empty. Each use is a stream of its own, ended
    /// when its task is cancelled or the client goes; a reader that falls 100 events behind loses
    /// the oldest.
    ///
    /// ```swift
    /// Task { @MainActor in
    ///     for await event in client.drainEvents {
    ///         if case .item(let item) = event, case .sent = item.outcome { pendingBadge.count -= 1 }
    ///     }
    /// }
    /// ```
    public var drainEvents: AsyncStream<OfflineDrainEvent> { drain.events.stream() }

    /// Holds the automatic drain: no queued request is sent until ``resumeDrain()`` (a request in
    /// flight finishes). ``replay(lease:)`` still sends when called.
    ///
    /// ```swift
    /// client.pauseDrain()          // the user is recording video: keep the uplink free
    /// defer { client.resumeDrain() }
    /// ```
    public func pauseDrain() { drain.pause() }

    /// Lets the automatic drain go on after ``pauseDrain()``, at once if requests wait.
    public func resumeDrain() { drain.resume() }

    /// Whether ``pauseDrain()`` holds the drain.
    public var isDrainPaused: Bool { drain.isPaused }

    /// Asks the origin of `url` whether it answers: one `HEAD /` through the chain, without
    /// credentials, retries or cache, within 10 seconds. Any answer, whatever its status, means
    /// reachable; the transport stage records what it saw in ``reachability``. The drain's probe,
    /// and `CallsignPostgres`'s worker's.
    package func probe(_ url: String) async -> Bool {
        guard var parts = URLComponents(string: url) else { return false }
        (parts.path, parts.query, parts.fragment, parts.user, parts.password) = ("/", nil, nil, nil, nil)
        guard let root = parts.string else { return false }
        var request = Request(method: .head, path: RedirectStage.literalPath(root))
        request.needsAuthorization = false
        request.retry = RetryPolicy.none
        request.cachePolicy = .reloadIgnoringCache
        request.storePolicy = StorePolicy.none
        request.deadline = .seconds(10)
        do {
            _ = try await perform(Call(request))
            return true
        } catch {
            return false
        }
    }
}
