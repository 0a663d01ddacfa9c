import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Keeps the client and the server process on separate cores, like a client and a server on
/// separate machines, instead of four event loops and four pool threads crowding two cores at
/// the scheduler's whim (the same row moved by ±20 % between runs that way).
///
/// The calling thread's CPU mask is set and the executable starts itself again with `execv`, so
/// every thread of the new image (event loops, the concurrency pool) inherits the mask. Linux
/// only; elsewhere, and with `CALLSIGN_BENCH_PIN=0` or fewer than two cores, nothing changes.
enum Pinning {
    static let marker = "CALLSIGN_BENCH_PINNED"

    /// The core the client runs on; the server gets the next one.
    static let clientCPU = 0
    static let serverCPU = 1

    /// Pins this process to `cpu` and restarts it, unless that was done already. Returns only
    /// when nothing is to be done (or pinning is not possible here).
    static func pinAndRestart(toCPU cpu: Int) {
        #if os(Linux)
        let environment = ProcessInfo.processInfo.environment
        // The server inherits the client's environment: the marker names the core it was for.
        guard environment[marker] != "\(cpu)", environment["CALLSIGN_BENCH_PIN"] != "0",
            ProcessInfo.processInfo.processorCount >= 2,
            setAffinity(cpu: cpu)
        else { return }
        setenv(marker, "\(cpu)", 1)
        let arguments = CommandLine.arguments
        var pointers = arguments.map { strdup($0) }
        pointers.append(nil)
        execv("/proc/self/exe", &pointers)
        // execv returns only when it failed: carry on unpinned.
        for pointer in pointers { free(pointer) }
        #endif
    }

    /// Whether this process was pinned, for the report's first line.
    static var description: String {
        guard let cpu = ProcessInfo.processInfo.environment[marker] else { return "not pinned" }
        return "client on CPU \(cpu), server on CPU \(serverCPU)"
    }

    /// Lets this process run on every core again (a child started by a pinned process inherits
    /// its core): for measurements of work that is not a client beside a server, such as loading
    /// an OpenAPI document, which uses every core a machine has.
    static func unpin() {
        #if os(Linux)
        _ = setAffinity(cpus: Array(0..<ProcessInfo.processInfo.processorCount))
        #endif
    }

    #if os(Linux)
    private static func setAffinity(cpu: Int) -> Bool {
        setAffinity(cpus: [cpu])
    }

    /// `sched_setaffinity(0, …)` for the calling thread. Swift's Glibc module does not export it
    /// (it needs `_GNU_SOURCE`), so it is looked up by name.
    private static func setAffinity(cpus: [Int]) -> Bool {
        typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
        guard let symbol = dlsym(nil, "sched_setaffinity") else { return false }
        let setAffinity = unsafeBitCast(symbol, to: SetAffinity.self)
        var mask = [UInt64](repeating: 0, count: 16)  // 1024 CPUs, glibc's cpu_set_t
        for cpu in cpus {
            guard cpu >= 0, cpu < mask.count * 64 else { return false }
            mask[cpu / 64] |= 1 << UInt64(cpu % 64)
        }
        return mask.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return false }
            return setAffinity(0, bytes.count, base) == 0
        }
    }
    #endif
}
