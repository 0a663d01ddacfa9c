import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A running shell script whose output is read line by line, and whose whole process group can
/// be killed.
final class ScriptRun {
    let process = Process()
    let pipe = Pipe()

    init(_ script: String, environment: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // setsid: the script leads its own process group, so one kill reaches every child. With
        // -w it waits for the script and exits with its status: `setsid` forks when it already
        // leads a group, and without -w that status would be lost.
        process.arguments = ["setsid", "-w", "sh", "-c", script]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
    }

    /// Waits for the script to end on a thread of its own (`waitUntilExit()` blocks, and must not
    /// hold one of the cooperative pool's threads); returns its exit status.
    func exitStatus() async throws -> Int32 {
        let ending = Ending(process)
        return try await onOwnThread {
            ending.process.waitUntilExit()
            return ending.process.terminationStatus
        }
    }

    /// The process handed to the waiting thread. Safe to share: that thread is the only one that
    /// touches it from then on, and only to wait for its end and read its status.
    private final class Ending: @unchecked Sendable {
        let process: Process
        init(_ process: Process) { self.process = process }
    }

    /// Reads lines (on a thread of its own) until `enough` says stop; returns them.
    func lines(until enough: @escaping @Sendable ([String]) -> Bool) async -> [String] {
        let handle = pipe.fileHandleForReading
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var text = ""
                var lines: [String] = []
                while true {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    text += String(decoding: data, as: UTF8.self)
                    lines = text.split(separator: "\n").map(String.init)
                    if enough(lines) { break }
                }
                continuation.resume(returning: lines)
            }
        }
    }
}
