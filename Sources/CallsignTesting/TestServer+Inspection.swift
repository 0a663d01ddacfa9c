/// What a test server recorded: the requests it received, per-path counts and statuses, and how
/// many requests it handled at once.
extension TestServer {
    /// Every request received, oldest first (the last 10,000).
    public var requests: [ServerRequest] { state.withLock { $0.requests } }

    /// How many connections the server accepted (an HTTP/2 connection carries many requests).
    public var connectionCount: Int { state.withLock { $0.connections } }

    /// How many requests arrived for this exact path (without the query).
    public func hits(_ path: String) -> Int { state.withLock { $0.hits[path] ?? 0 } }

    /// How many responses with this status were sent for this exact path (without the query):
    /// `server.responses("/cache/etag/a", status: 304)`.
    public func responses(_ path: String, status: Int) -> Int { state.withLock { $0.statuses[path]?[status] ?? 0 } }

    /// The largest number of requests the server was handling at once.
    public var maxConcurrentRequests: Int { state.withLock { $0.maxInFlight } }

    /// Forgets recorded requests and counters.
    public func resetRecords() {
        state.withLock {
            $0.requests.removeAll()
            $0.hits.removeAll()
            $0.statuses.removeAll()
            $0.maxInFlight = 0
        }
    }
}
