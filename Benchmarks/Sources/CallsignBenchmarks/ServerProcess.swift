import CallsignTesting
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The benchmark's server: the test server, run by this same executable in a child process.
///
/// In its own process the server's CPU time, memory and threads are not the client's: the CPU and
/// peak-RSS columns measure the client alone, and the client's event loops serve the client only
/// (in-process, the server's NIO handlers ran on the same two loops as AsyncHTTPClient's).
struct ServerProcess {
    /// The argument that makes this executable serve instead of measure.
    static let serveArgument = "--serve"

    let baseURL: URL
    let pid: Int32
    private let process: Process
    private let input: Pipe

    func url(_ path: String) -> URL {
        URL(string: path.hasPrefix("/") ? String(path.dropFirst()) : path, relativeTo: baseURL)?.absoluteURL ?? baseURL
    }

    /// This benchmark program again, as a child with `arguments` (a role: a server, a load).
    static func ownProgram(_ arguments: [String]) -> Process {
        let process = Process()
        #if os(Linux)
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        #else
        process.executableURL = Bundle.main.executableURL
        #endif
        process.arguments = arguments
        return process
    }

    /// Starts the child and waits for the line that names its port.
    static func launch() throws -> ServerProcess {
        let process = ownProgram([serveArgument])
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)), let url = URL(string: "http://127.0.0.1:\(port)/") else {
            process.terminate()
            throw ServerProcessError(description: "the server process did not report its port (it printed \"\(text)\")")
        }
        return ServerProcess(baseURL: url, pid: process.processIdentifier, process: process, input: input)
    }

    /// Closes the child's standard input, which ends it, and waits for it.
    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    /// The server process's CPU time so far, in microseconds (Linux; 0 elsewhere). Its
    /// resolution is the kernel's clock tick (10 ms), fine over a round of thousands of requests.
    func cpuMicroseconds() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        // After "pid (comm)": state is field 3, utime field 14, stime field 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK))) * 1e6
    }

    /// The child's side: serve until the parent closes our standard input (or dies).
    static func serve(body: Data) async throws {
        let server = try await TestServer.start()
        server.route("/bench/item") { _ in ServerResponse(headers: [("Content-Type", "application/json")], body: .data(body)) }
        server.route("/bench/cached") { _ in
            ServerResponse(headers: [("Content-Type", "application/json"), ("Cache-Control", "max-age=3600")], body: .data(body))
        }
        FileHandle.standardOutput.write(Data("PORT \(server.port)\n".utf8))
        let (ended, end) = AsyncStream<Void>.makeStream()
        let watcher = Thread {
            while readLine() != nil {}
            end.finish()
        }
        watcher.start()
        for await _ in ended {}
        await server.stop()
    }
}

struct ServerProcessError: Error, CustomStringConvertible {
    let description: String
}

