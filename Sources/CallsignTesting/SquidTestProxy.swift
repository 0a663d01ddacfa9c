import Foundation

/// A real Squid (Debian's `squid` package) on 127.0.0.1, for the proxy tests: its own
/// configuration, logs and PID file in a temporary folder, run in the foreground (`-N`) and
/// stopped on every path by ``withRunning(tunnelPorts:credentials:_:)``.
///
/// Its rules are Squid's stock ones: requests from this machine are served, `CONNECT` is allowed
/// to port 443 only (`tunnelPorts` adds others, such as a TLS test server's ephemeral port), and
/// with `credentials` every request needs Basic proxy credentials (Squid's own NCSA helper).
/// Nothing is cached.
///
/// When Squid is missing and the tests run as root on a machine with `apt-get`, the first start
/// installs it (once per process), as ``PostgresTestServer`` installs PostgreSQL; otherwise the
/// start throws ``Unavailable``, which a test turns into a skip with its message.
struct SquidTestProxy: Sendable {
    /// The port Squid listens on.
    let port: Int
    /// `http://127.0.0.1:port`.
    var url: String { "http://127.0.0.1:\(port)" }
    /// The user and password Squid asks for when started with `credentials`.
    static let credentials = (username: "alice", password: "hunter2")
    /// `hunter2` hashed as `htpasswd -m` would (APR1 MD5), for Squid's `basic_ncsa_auth`.
    private static let passwordFile = "alice:$apr1$callsign$R.LHbJLXIKsug9ZSAR0sW.\n"

    /// Squid could not be found or installed here.
    struct Unavailable: Error, CustomStringConvertible {
        let description: String
    }

    /// Starts Squid, runs `body`, and stops Squid whether `body` returns or throws.
    static func withRunning<T>(
        tunnelPorts: [Int] = [], credentials: Bool = false, _ body: (SquidTestProxy) async throws -> T
    ) async throws -> T {
        let squid = try await program()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-squid-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // As root, Squid's workers run as `proxy`: they write the logs in this folder.
        if geteuid() == 0 { try? FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: folder.path) }
        if credentials { try Data(passwordFile.utf8).write(to: folder.appendingPathComponent("passwd")) }
        var lastFailure = ""
        // A port found free may be taken before Squid binds it: then another one.
        for _ in 0..<3 {
            let port = try freePort()
            try Data(configuration(port: port, folder: folder, tunnelPorts: tunnelPorts, credentials: credentials).utf8)
                .write(to: folder.appendingPathComponent("squid.conf"))
            let output = folder.appendingPathComponent("squid.out").path
            let pid = try ChildProcess.spawn([squid, "-N", "-f", folder.appendingPathComponent("squid.conf").path], output: output)
            let start = try await ChildProcess.offPool { waitUntilListening(port: port, pid: pid) }
            guard start == .listening else {
                if start == .timedOut { _ = try? await ChildProcess.offPool { try stop(pid) } }
                lastFailure = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "") + "\n"
                    + ((try? String(contentsOf: folder.appendingPathComponent("cache.log"), encoding: .utf8)) ?? "")
                continue
            }
            do {
                let result = try await body(SquidTestProxy(port: port))
                _ = try await ChildProcess.offPool { try stop(pid) }
                return result
            } catch {
                _ = try? await ChildProcess.offPool { try stop(pid) }
                throw error
            }
        }
        throw TestServerError("Squid did not start: \(lastFailure.suffix(2000))")
    }

    /// Squid's configuration: the stock access rules, loopback only, no cache, files in `folder`.
    private static func configuration(port: Int, folder: URL, tunnelPorts: [Int], credentials: Bool) -> String {
        let path = folder.path
        var lines = [
            "http_port 127.0.0.1:\(port)",
            "acl SSL_ports port 443 \(tunnelPorts.map(String.init).joined(separator: " "))",
            "acl CONNECT method CONNECT",
            "http_access deny CONNECT !SSL_ports",
        ]
        if credentials {
            lines += [
                "auth_param basic program /usr/lib/squid/basic_ncsa_auth \(path)/passwd",
                "auth_param basic realm callsign-test",
                "acl authenticated proxy_auth REQUIRED",
                "http_access allow localhost authenticated",
            ]
        } else {
            lines.append("http_access allow localhost")
        }
        lines += [
            "http_access deny all",
            "cache deny all",
            "cache_mem 8 MB",
            "pid_filename \(path)/squid.pid",
            "access_log stdio:\(path)/access.log",
            "cache_log \(path)/cache.log",
            "cache_store_log none",
            "netdb_filename none",
            "pinger_enable off",
            "coredump_dir \(path)",
            "shutdown_lifetime 0 seconds",
            "dns_nameservers 127.0.0.1",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// Where Squid is, installing Debian's package first if it is missing and we can.
    private static func program() async throws -> String {
        if let found = installed() { return found }
        do {
            guard try await installation.value else {
                throw Unavailable(description: "Squid is not installed and cannot be installed here (apt-get needs root): install Debian's squid package")
            }
        } catch let error as TestServerError {
            throw Unavailable(description: "Squid is not installed and apt-get could not install it: \(error)")
        }
        if let found = installed() { return found }
        throw Unavailable(description: "Squid is not installed (no /usr/sbin/squid after apt-get install squid)")
    }

    /// `apt-get install squid`, run at most once per process.
    private static let installation = Task<Bool, any Error> { try await ChildProcess.aptGetInstall("squid") }

    private static func installed() -> String? {
        ["/usr/sbin/squid", "/usr/local/sbin/squid"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// A TCP port on 127.0.0.1 that nothing listens on now: the one the system picks for port 0.
    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, streamSocket(SOCK_STREAM), 0)
        guard descriptor >= 0 else { throw TestServerError("socket() failed (errno \(errno))") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else { throw TestServerError("bind() failed (errno \(errno))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private enum Start { case listening, ended, timedOut }

    /// Polls until Squid accepts connections on `port`, or has ended (and is reaped), or a minute
    /// passed. Squid says nothing when it is ready: a connection is the only sign.
    private static func waitUntilListening(port: Int, pid: pid_t) -> Start {
        let end = Date().addingTimeInterval(60)
        while Date() < end {
            if ChildProcess.hasEnded(pid) { return .ended }
            if canConnect(port: port) { return .listening }
            usleep(50_000)
        }
        return .timedOut
    }

    private static func canConnect(port: Int) -> Bool {
        let descriptor = socket(AF_INET, streamSocket(SOCK_STREAM), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Asks Squid to stop (SIGTERM: it ends at once, `shutdown_lifetime 0`), kills it if it has
    /// not after ten seconds, and reaps it.
    private static func stop(_ pid: pid_t) throws {
        kill(pid, SIGTERM)
        let end = Date().addingTimeInterval(10)
        while Date() < end {
            if ChildProcess.hasEnded(pid) { return }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        _ = try ChildProcess.wait(for: pid, "squid")
    }
}

/// `SOCK_STREAM` as `socket(2)` takes it: an enumeration in glibc, a plain `Int32` on Darwin (the
/// overload the platform's type picks, so no `#if`).
func streamSocket<Kind: RawRepresentable>(_ kind: Kind) -> Int32 where Kind.RawValue: BinaryInteger { Int32(kind.rawValue) }
func streamSocket(_ kind: Int32) -> Int32 { kind }
