import Foundation
import Testing

/// Runs a program as a user would, and collects what it prints.
///
/// Waiting and reading happen on threads of their own — never on the Swift concurrency pool or
/// Dispatch's global queues, whose few threads also run the in-process server and the transports.
/// Every run holds one of the suite's ``ProcessSlots`` from start to reaping.
enum ProcessRunner {
    struct Result {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    /// The variables that choose a program's language.
    static let localeVariables: Set<String> = ["LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"]

    static let proxyVariables: Set<String> = ["http_proxy", "https_proxy", "all_proxy", "no_proxy"]

    static func run(
        _ path: String, _ arguments: [String], environment: [String: String] = [:], input: Data? = nil,
        directory: URL? = nil, started: (@Sendable (_ processIdentifier: Int32) -> Void)? = nil
    ) async throws -> Result {
        try await ProcessSlots.withSlot {
            try await runHoldingSlot(path, arguments, environment: environment, input: input, directory: directory, started: started)
        }
    }

    /// The configuration folder every CLI run sees unless its test gives another: empty.
    private static let configHome = Scratch.folder()
    /// The cache folder every CLI run sees unless its test gives another: the test run's own, so
    /// that no run reads or fills the user's description cache.
    private static let cacheHome = Scratch.folder()

    private static func runHoldingSlot(
        _ path: String, _ arguments: [String], environment: [String: String], input: Data?, directory: URL?,
        started: (@Sendable (_ processIdentifier: Int32) -> Void)?
    ) async throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        // The machine's proxy variables never leak into a test: a test that wants a proxy sets them.
        // Nor its language: every run speaks English unless the test asks for another (LANG=…).
        var inherited = ProcessInfo.processInfo.environment.filter {
            !Self.proxyVariables.contains($0.key.lowercased()) && !Self.localeVariables.contains($0.key)
        }
        inherited["LANG"] = "C.UTF-8"
        // Nor the user's own default options and sessions (~/.config/callsign): an empty folder
        // of its own, unless the test names one.
        inherited["CALLSIGN_CONFIG"] = nil
        inherited["XDG_CONFIG_HOME"] = Self.configHome.path
        inherited["XDG_CACHE_HOME"] = Self.cacheHome.path
        process.environment = inherited.merging(environment) { _, new in new }
        if let directory { process.currentDirectoryURL = directory }
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let standardInput = Pipe()
        process.standardInput = standardInput
        try process.run()
        started?(process.processIdentifier)
        // Standard input: the given bytes, then end of file (never the test runner's own input).
        let writer = standardInput.fileHandleForWriting
        Thread.detachNewThread {
            if let input { writer.write(input) }
            try? writer.close()
        }
        async let outputData = readToEnd(output.fileHandleForReading)
        async let errorData = readToEnd(error.fileHandleForReading)
        let (out, err) = await (outputData, errorData)
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                process.waitUntilExit()
                continuation.resume()
            }
        }
        return Result(
            status: process.terminationStatus, standardOutput: String(decoding: out, as: UTF8.self),
            standardError: String(decoding: err, as: UTF8.self))
    }

    private static func readToEnd(_ handle: FileHandle) async -> Data {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: handle.readDataToEndOfFile()) }
        }
    }
}

/// Runs a command under Python's resource module and returns its peak resident set in bytes.
/// With `discardingOutput`, its standard output goes to `/dev/null` instead of into this process
/// (a hostile body written out as it arrives can be tens of megabytes).
func peakMemory(_ arguments: [String], discardingOutput: Bool = false) async throws -> (result: ProcessRunner.Result, peak: Int) {
    let script = """
        import resource, subprocess, sys
        output = subprocess.DEVNULL if sys.argv[1] == "discard" else None
        code = subprocess.run(sys.argv[2:], stdout=output).returncode
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        # ru_maxrss is in KiB on Linux and in bytes on Darwin.
        sys.stderr.write("peak-kib %d\\n" % (peak // 1024 if sys.platform == "darwin" else peak))
        sys.exit(code)
        """
    let result = try await ProcessRunner.run("/usr/bin/env", ["python3", "-c", script, discardingOutput ? "discard" : "keep"] + arguments)
    let line = result.standardError.split(separator: "\n").last { $0.hasPrefix("peak-kib ") }
    let kib = line.flatMap { Int($0.dropFirst(9)) } ?? -1
    return (result, kib * 1024)
}

/// Runs one SQL statement on a SQLite file, as a person or another program editing it would:
/// through python3's sqlite3, in a process of its own, waited for off the cooperative pool.
func editSQLite(_ file: URL, _ statement: String) async throws {
    let result = try await ProcessRunner.run(
        "/usr/bin/env",
        ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()", file.path, statement])
    try #require(result.status == 0, "\(result.standardError)")
}
