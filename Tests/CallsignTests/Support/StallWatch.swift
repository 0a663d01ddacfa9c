import Foundation

/// Diagnostic only, off unless `CALLSIGN_STALL_WATCH` names a folder: a thread outside the
/// cooperative pool checks every half second that a new task gets to run; when none has for
/// three seconds it writes every thread's stack there with gdb.
enum StallWatch {
    static let started: Bool = {
        guard let folder = ProcessInfo.processInfo.environment["CALLSIGN_STALL_WATCH"] else { return false }
        let ran = Flag()
        Thread.detachNewThread {
            var dumps = 0
            while dumps < 30 {
                ran.value = false
                let sent = Date()
                Task.detached { ran.value = true }
                Thread.sleep(forTimeInterval: 0.5)
                var waited = Date().timeIntervalSince(sent)
                while !ran.value, waited < 3 { Thread.sleep(forTimeInterval: 0.25); waited = Date().timeIntervalSince(sent) }
                if !ran.value {
                    dumps += 1
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: "/usr/bin/gdb")
                    process.arguments = ["-p", "\(getpid())", "-batch", "-ex", "thread apply all bt 40"]
                    _ = FileManager.default.createFile(atPath: "\(folder)/stall-\(dumps).txt", contents: nil)
                    process.standardOutput = FileHandle(forWritingAtPath: "\(folder)/stall-\(dumps).txt")
                    process.standardError = FileHandle.nullDevice
                    try? process.run()
                    process.waitUntilExit()
                    while !ran.value { Thread.sleep(forTimeInterval: 0.5) }
                }
            }
        }
        return true
    }()

    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var stored = false
        var value: Bool {
            get { lock.withLock { stored } }
            set { lock.withLock { stored = newValue } }
        }
    }
}
