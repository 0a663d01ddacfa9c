public import Foundation

/// A throwaway PostgreSQL cluster for tests: `initdb` in a temporary folder and a server that
/// listens only on a Unix socket in that folder — no TCP port, so it can never take a port
/// another test is holding — removed by ``stop()``.
///
/// It needs PostgreSQL's programs (Debian's `postgresql` package). `.ci/run` installs them; when
/// they are missing and the tests run as root on a machine with `apt-get`, the first ``start()``
/// installs them (once per process). Otherwise ``start()`` throws — tests that need PostgreSQL
/// fail, they are never skipped.
/// As root, the cluster runs as the `postgres` user (`initdb` refuses root), through `runuser`.
///
/// ```swift
/// try await PostgresTestServer.withRunning { postgres in
///     let client = PostgresClient(configuration: try PostgresURL.configuration(postgres.url))
///     …
/// }
/// ```
public final class PostgresTestServer: Sendable {
    /// The port number in the socket's name (`.s.PGSQL.<port>`); nothing listens on it over TCP.
    public let port: Int
    /// The folder with the data directory, the log and the server's Unix socket.
    public let folder: URL
    /// The superuser, who connects without a password (trust, local only).
    public let user = "callsign"
    /// A `postgres://` URL for the `postgres` database, through the socket.
    public var url: String { url(database: "postgres") }

    /// A `postgres://` URL for `database`, through the socket.
    public func url(database: String) -> String { "postgres://\(user)@localhost:\(port)/\(database)?host=\(folder.path)" }
    private let programs: URL

    private init(port: Int, folder: URL, programs: URL) {
        self.port = port
        self.folder = folder
        self.programs = programs
    }

    /// Starts a new cluster.
    public static func start() async throws -> PostgresTestServer {
        let programs = try await binaries()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if geteuid() == 0 {
            try FileManager.default.setAttributes([.ownerAccountName: "postgres"], ofItemAtPath: folder.path)
        }
        let port = Int.random(in: 20_000...60_000)  // names the socket only
        let server = PostgresTestServer(port: port, folder: folder, programs: programs)
        do {
            try await server.run(
                "initdb", ["-D", folder.appendingPathComponent("data").path, "-U", "callsign", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"])
            let options = [
                "-p \(port)", "-k \(folder.path)", "-c listen_addresses=''", "-c fsync=off", "-c synchronous_commit=off",
                "-c full_page_writes=off", "-c max_connections=300",
            ].joined(separator: " ")
            // -t: how long pg_ctl waits for the server, a hang guard for a busy machine.
            try await server.run(
                "pg_ctl", ["start", "-w", "-t", "600", "-D", folder.appendingPathComponent("data").path, "-l", folder.appendingPathComponent("log").path, "-o", options])
        } catch {
            await server.stop()
            throw error
        }
        return server
    }

    /// Creates an empty database of its own in this cluster and returns its URL: tests that share
    /// one cluster each get a database of their own (standard table names and all), at the cost
    /// of a `createdb` instead of a new cluster.
    ///
    /// ```swift
    /// let url = try await postgres.createDatabase()
    /// ```
    public func createDatabase() async throws -> String {
        let name = "db_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        try await run("createdb", ["-h", folder.path, "-p", "\(port)", "-U", user, name])
        return url(database: name)
    }

    /// Starts a cluster, runs `body`, and removes the cluster on every path.
    public static func withRunning<T>(_ body: (PostgresTestServer) async throws -> T) async throws -> T {
        try await runThenStop(try await start(), body)
    }

    /// Stops the server at once and deletes the folder.
    public func stop() async {
        let data = folder.appendingPathComponent("data")
        if FileManager.default.fileExists(atPath: data.appendingPathComponent("postmaster.pid").path) {
            try? await run("pg_ctl", ["stop", "-w", "-m", "immediate", "-D", data.path])
        }
        try? FileManager.default.removeItem(at: folder)
    }

    /// Runs one of PostgreSQL's programs (as `postgres` when we are root); throws with its output on failure.
    private func run(_ program: String, _ arguments: [String]) async throws {
        let executable = programs.appendingPathComponent(program).path
        let command = geteuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        let output = folder.deletingLastPathComponent().appendingPathComponent("\(folder.lastPathComponent)-\(program).out")
        defer { try? FileManager.default.removeItem(at: output) }
        let status = try await ChildProcess.offPool { try ChildProcess.spawnAndWait(command, output: output.path) }
        guard status == 0 else {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            throw TestServerError("\(program) exited with \(status): \(text.suffix(2000))")
        }
    }

    /// Where `pg_ctl` and `initdb` are, installing Debian's package first if they are missing and we can.
    private static func binaries() async throws -> URL {
        if let found = installedBinaries() { return found }
        try await installation.value
        if let found = installedBinaries() { return found }
        throw TestServerError("PostgreSQL is not installed (no pg_ctl and initdb): install Debian's postgresql package, as .ci/run does")
    }

    /// `apt-get install postgresql`, run at most once per process, and only as root with apt-get.
    private static let installation = Task<Void, any Error> {
        _ = try await ChildProcess.aptGetInstall("postgresql")
    }

    /// Where `pg_ctl`, `initdb` and `createdb` are: beside the `pg_ctl` on the `PATH`, else Debian's
    /// `/usr/lib/postgresql/<version>/bin`.
    private static func installedBinaries() -> URL? {
        let manager = FileManager.default
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
        for folder in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder))
            if manager.isExecutableFile(atPath: candidate.appendingPathComponent("pg_ctl").path),
                manager.isExecutableFile(atPath: candidate.appendingPathComponent("initdb").path)
            {
                // The folder pg_ctl really lives in, where its siblings (createdb) are too: a
                // PATH folder may hold links to just pg_ctl and initdb.
                return candidate.appendingPathComponent("pg_ctl").resolvingSymlinksInPath().deletingLastPathComponent()
            }
        }
        let debian = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? manager.contentsOfDirectory(atPath: debian.path)) ?? []).compactMap(Int.init).sorted()
        return versions.last.map { debian.appendingPathComponent("\($0)/bin") }
    }
}
