import Foundation

/// Programs the test servers start — PostgreSQL's (``PostgresTestServer``), Squid
/// (`SquidTestProxy`) and `apt-get` to install them — spawned and reaped here rather than with
/// Foundation's `Process`, whose wait spins and never reaps on Linux once the child leaves a
/// daemon behind, and which lets a child inherit the test process's sockets.
enum ChildProcess {
    /// Runs blocking work on a thread of its own, never on the cooperative pool, whose two
    /// threads on a 2-core machine also run the servers and the transports.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    /// `posix_spawn`s `command` with its output in the file `output` and no input, and waits.
    static func spawnAndWait(_ command: [String], output: String, environment: [String] = []) throws -> Int32 {
        try wait(for: spawn(command, output: output, environment: environment), command[0])
    }

    /// `posix_spawn`s `command` with its output (standard output and error) in the file `output`,
    /// no input, and none of this process's other descriptors; returns its process ID.
    static func spawn(_ command: [String], output: String, environment: [String] = []) throws -> pid_t {
        var actions = Self.noActions()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of ours goes to the child: a server it starts lives on, and a socket it
        // inherited would stay open after a test closed it (a peer would never see the close).
        closeInheritedDescriptors(&actions)
        let arguments = command.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        let inherited = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        let variables = (inherited + environment).map { strdup($0) } + [nil]
        defer { for variable in variables { free(variable) } }
        // The child starts with no signal blocked and default handlers, whatever the spawning
        // thread's mask: a server that inherits a blocked SIGTERM would never stop when asked.
        var attributes = Self.noAttributes()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) | Self.closesOthersByFlag)
        var pid = pid_t()
        let spawned = posix_spawn(&pid, command[0], &actions, &attributes, arguments, variables)
        guard spawned == 0 else { throw TestServerError("\(command[0]) could not be started (error \(spawned))") }
        return pid
    }

    /// Waits for the child `pid` to end and returns its exit status (128 + the signal's number
    /// when a signal ended it).
    static func wait(for pid: pid_t, _ name: String) throws -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw TestServerError("waiting for \(name) failed (errno \(errno))") }
        }
        // WIFEXITED / WEXITSTATUS, which Swift does not import as macros.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Whether the child `pid` has ended; reaps it when it has.
    static func hasEnded(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == pid
    }

    /// `apt-get install -y --no-install-recommends package`, after an `apt-get update`: only as
    /// root on a machine with `apt-get` (returns `false` otherwise). Throws with apt-get's output
    /// when it fails.
    static func aptGetInstall(_ package: String) async throws -> Bool {
        let aptGet = "/usr/bin/apt-get"
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: aptGet) else { return false }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-apt-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        for command in [[aptGet, "update"], [aptGet, "install", "-y", "--no-install-recommends", package]] {
            let status = try await offPool { try spawnAndWait(command, output: log.path, environment: ["DEBIAN_FRONTEND=noninteractive"]) }
            guard status == 0 else {
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                throw TestServerError("\(command.joined(separator: " ")) exited with \(status): \(text.suffix(2000))")
            }
        }
        return true
    }

    // The one place where this file differs by platform: how `posix_spawn`'s C types are
    // imported, and how a child is kept from inheriting this process's other descriptors.
    #if canImport(Darwin)
    /// Darwin's spawn types are opaque pointers, set by their `init` functions.
    typealias Actions = posix_spawn_file_actions_t?
    typealias Attributes = posix_spawnattr_t?
    private static func noActions() -> Actions { nil }
    private static func noAttributes() -> Attributes { nil }
    /// Darwin closes in the child every descriptor the file actions do not set up.
    private static let closesOthersByFlag = Int16(POSIX_SPAWN_CLOEXEC_DEFAULT)
    private static func closeInheritedDescriptors(_ actions: inout Actions) {}
    #else
    typealias Actions = posix_spawn_file_actions_t
    typealias Attributes = posix_spawnattr_t
    private static func noActions() -> Actions { Actions() }
    private static func noAttributes() -> Attributes { Attributes() }
    private static let closesOthersByFlag: Int16 = 0
    /// Adds "close every descriptor from 3 up" to `actions`: glibc's `addclosefrom_np` (2.34 and
    /// later, looked up at run time as Swift does not import it), else one close per descriptor
    /// open now.
    private static func closeInheritedDescriptors(_ actions: inout Actions) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
            return
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in open.compactMap({ Int32($0) }) where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }
    #endif
}
