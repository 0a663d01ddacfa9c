import NIOCore
import NIOPosix
import Synchronization

/// Where the test servers run: threads of their own, neither the cooperative pool nor the
/// client's event loops. A test that keeps the pool's threads busy (a large document parsed, a
/// big checksum) must not stall every server of the run — on a busy machine that turned answers
/// into timeouts — and a server's work must not delay the client's I/O either.
enum ServerThreads {
    /// The servers' event loops: they accept, read and write, and run the servers' handlers —
    /// four, so that one handler busy for a while (a large body made up front) leaves others
    /// to every other server of the run.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 4)
    /// The handlers' task executor, on those loops.
    static let executor: any TaskExecutor = LoopExecutor()

    /// Accepts `listener`'s connections on these threads until it closes, then ends what
    /// `pending` still holds. For each connection, `accept` runs in the accepting loop (in the
    /// order connections come) and returns the work that serves it, which runs in a child task.
    static func serve<Accepted: Sendable>(
        _ listener: NIOAsyncChannel<Accepted, Never>, pending: PendingConnections,
        accept: @escaping @Sendable (Accepted) -> @Sendable () async -> Void
    ) -> Task<Void, Never> {
        Task(executorPreference: executor) {
            await withDiscardingTaskGroup { group in
                do {
                    try await listener.executeThenClose { connections in
                        for try await connection in connections {
                            group.addTask(executorPreference: executor, operation: accept(connection))
                        }
                    }
                } catch {
                    // The listening socket closed: the server is stopping.
                }
                await pending.end()
                group.cancelAll()
            }
        }
    }

    private final class LoopExecutor: TaskExecutor {
        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            ServerThreads.group.next().execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }
}

/// Connections a listener accepted that its serving loop has not taken yet. A listener that
/// closes drops those (swift-nio issue 2813), and an `NIOAsyncChannel` dropped before its channel
/// became active traps ("Deinited NIOAsyncWriter without calling finish()"): a server stopped
/// while a client connected crashed the whole test run. Each connection is held here from the
/// moment it is made until the loop takes it; what is left when the loop ends is finished and
/// closed.
final class PendingConnections: Sendable {
    private let state = Mutex<(ended: Bool, held: [ObjectIdentifier: @Sendable () async -> Void])>((false, [:]))

    /// Holds `connection` until ``take(_:)``, and returns it; after ``end()``, ends it at once.
    func hold<Inbound: Sendable, Outbound: Sendable>(
        _ connection: NIOAsyncChannel<Inbound, Outbound>
    ) -> NIOAsyncChannel<Inbound, Outbound> {
        // Finishes the writer and closes the channel; the writer lives until then.
        let finish: @Sendable () async -> Void = { try? await connection.executeThenClose { _, _ in } }
        let ended = state.withLock { state in
            if !state.ended { state.held[ObjectIdentifier(connection.channel)] = finish }
            return state.ended
        }
        if ended { Task { await finish() } }
        return connection
    }

    /// The serving loop has `channel`'s connection: it finishes it itself.
    func take(_ channel: any Channel) {
        _ = state.withLock { $0.held.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// The serving loop has ended: every connection it did not take is finished and closed, and
    /// so is any accepted from now on.
    func end() async {
        let left = state.withLock { state in
            state.ended = true
            defer { state.held = [:] }
            return Array(state.held.values)
        }
        await withDiscardingTaskGroup { group in
            for finish in left { group.addTask { await finish() } }
        }
    }
}

/// A TCP listener on 127.0.0.1 with an ephemeral port that hands each connection, as raw bytes,
/// to a handler on a task of its own: what ``RawServer`` and ``TestProxy`` are built on.
final class LoopbackListener: Sendable {
    typealias Connection = NIOAsyncChannel<ByteBuffer, ByteBuffer>

    /// The port the operating system chose.
    let port: Int
    private let channel: NIOAsyncChannel<Connection, Never>
    private let pending: PendingConnections
    private let serving = Mutex<Task<Void, Never>?>(nil)
    private let accepted = Mutex(0)

    /// How many connections have been accepted.
    var acceptedCount: Int { accepted.withLock { $0 } }

    /// Binds; `what` names the server in the error when the port cannot be read.
    init(what: String) async throws {
        let pending = PendingConnections()
        let channel = try await ServerBootstrap(group: ServerThreads.group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { child in
                child.eventLoop.makeCompletedFuture {
                    pending.hold(try Connection(wrappingChannelSynchronously: child))
                }
            }
        guard let port = channel.channel.localAddress?.port else {
            try? await channel.channel.close()
            throw TestServerError("the \(what) did not report its port")
        }
        self.port = port
        self.channel = channel
        self.pending = pending
    }

    /// Accepts connections until ``stop()``, handing the `n`-th (0-based) to `handle`, on the
    /// servers' own threads (``ServerThreads``).
    func serve(_ handle: @escaping @Sendable (_ index: Int, Connection) async -> Void) {
        let task = ServerThreads.serve(channel, pending: pending) { [self] connection in
            pending.take(connection.channel)
            let current = accepted.withLock { count in
                defer { count += 1 }
                return count
            }
            return { await handle(current, connection) }
        }
        serving.withLock { $0 = task }
    }

    /// Stops accepting connections and ends the open ones.
    func stop() async {
        try? await channel.channel.close()
        let task = serving.withLock { $0 }
        task?.cancel()
        await task?.value
    }
}
