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

    private final class LoopExecutor: TaskExecutor {
        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            ServerThreads.group.next().execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
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
    private let serving = Mutex<Task<Void, Never>?>(nil)
    private let accepted = Mutex(0)

    /// How many connections have been accepted.
    var acceptedCount: Int { accepted.withLock { $0 } }

    /// Binds; `what` names the server in the error when the port cannot be read.
    init(what: String) async throws {
        let channel = try await ServerBootstrap(group: ServerThreads.group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { child in
                child.eventLoop.makeCompletedFuture {
                    try Connection(wrappingChannelSynchronously: child)
                }
            }
        guard let port = channel.channel.localAddress?.port else {
            try? await channel.channel.close()
            throw TestServerError("the \(what) did not report its port")
        }
        self.port = port
        self.channel = channel
    }

    /// Accepts connections until ``stop()``, handing the `n`-th (0-based) to `handle`, on the
    /// servers' own threads (``ServerThreads``).
    func serve(_ handle: @escaping @Sendable (_ index: Int, Connection) async -> Void) {
        let executor = ServerThreads.executor
        let task = Task(executorPreference: executor) { [self] in
            await withDiscardingTaskGroup { group in
                do {
                    try await channel.executeThenClose { inbound in
                        for try await connection in inbound {
                            let current = accepted.withLock { count in
                                defer { count += 1 }
                                return count
                            }
                            group.addTask(executorPreference: executor) { await handle(current, connection) }
                        }
                    }
                } catch {
                    // The listening socket closed: the server is stopping.
                }
                group.cancelAll()
            }
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
