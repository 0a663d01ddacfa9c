#if canImport(AsyncHTTPClient)
import AsyncHTTPClient
import NIOCore
import Synchronization

/// Owns the `HTTPClient` and guarantees it is shut down exactly once — by ``shutdown()`` or,
/// failing that, when the last reference goes — so the client's "not shut down" check can never fire.
///
/// A client reaches one proxy (AsyncHTTPClient sets it per client), so an owned transport keeps
/// one more client per proxy it is asked for, made from the same settings on the same event
/// loops, and shuts them down with the first.
final class ClientOwner: Sendable {
    let client: HTTPClient
    let owned: Bool
    let executor: EventLoopGroupTaskExecutor
    /// The settings `client` was made with, when the transport made it.
    private let configuration: HTTPClient.Configuration?
    private let proxied = Mutex<[Proxy: HTTPClient]>([:])
    private let isShutDown = Mutex(false)

    init(client: HTTPClient, owned: Bool, configuration: HTTPClient.Configuration? = nil) {
        self.client = client
        self.owned = owned
        self.configuration = configuration
        self.executor = EventLoopGroupTaskExecutor(group: client.eventLoopGroup)
    }

    /// The client that connects through `proxy`, or directly for `nil`.
    func client(through proxy: Proxy?) throws(APIError) -> HTTPClient {
        guard let proxy else { return client }
        guard owned, var settings = configuration else {
            throw APIError(
                .invalidRequest,
                localized: "this AsyncHTTPClientTransport borrows its HTTPClient, so it cannot go through the proxy \(proxy): set the proxy in that HTTPClient's configuration, or let the transport make its own client")
        }
        return try proxied.withLock { (clients: inout [Proxy: HTTPClient]) throws(APIError) -> HTTPClient in
            if let existing = clients[proxy] { return existing }
            guard !isShutDown.withLock({ $0 }) else { throw APIError(.cancelled, localized: "the transport has been shut down") }
            settings.proxy = .server(
                host: proxy.host, port: proxy.port,
                authorization: proxy.credentials.map { .basic(username: $0.username, password: $0.password) })
            let made = HTTPClient(eventLoopGroup: client.eventLoopGroup, configuration: settings)
            clients[proxy] = made
            return made
        }
    }

    func shutdown() async throws {
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        let extra = proxied.withLock { Array($0.values) }
        for client in extra { try await client.shutdown() }
        try await client.shutdown()
    }

    deinit {
        guard owned, !isShutDown.withLock({ $0 }) else { return }
        // Non-blocking: the returned future keeps the client alive until it is shut down,
        // and it is safe to call from any thread, including an event loop.
        for extra in proxied.withLock({ Array($0.values) }) { _ = extra.shutdown() }
        _ = client.shutdown()
    }
}

/// A task executor on an event loop group: a job enqueued on one of the group's loops (a task
/// resumed by the response that just arrived there) stays on that loop; any other goes to the
/// group's next loop. A task that prefers it therefore runs on the thread doing its I/O and
/// follows its connection, instead of hopping to a pool thread and back for every response.
final class EventLoopGroupTaskExecutor: TaskExecutor {
    private let group: any EventLoopGroup
    /// The group's loops, to tell whether the current thread is one of them.
    private let loops: [any EventLoop]

    init(group: any EventLoopGroup) {
        self.group = group
        self.loops = Array(group.makeIterator())
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let loop = loops.first(where: { $0.inEventLoop }) ?? group.next()
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
#endif
