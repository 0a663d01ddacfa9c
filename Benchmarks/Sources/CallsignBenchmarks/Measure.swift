import CMallocCounter
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Sample {
    var seconds: Double
    var cpuMicroseconds: Double
    var serverCPUMicroseconds: Double
    var requests: Int
    /// Heap blocks this process allocated during the run (the benchmark's own malloc counter).
    var allocations: Double = 0
    var requestsPerSecond: Double { Double(requests) / seconds }
    var cpuPerRequest: Double { cpuMicroseconds / Double(requests) }
    var serverCPUPerRequest: Double { serverCPUMicroseconds / Double(requests) }
    var allocationsPerRequest: Double { allocations / Double(requests) }
}

enum Measure {
    static func cpuMicroseconds() -> Double {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    }

    /// Peak resident set size in MiB since the last reset (Linux: VmHWM).
    static func peakRSS() -> Double { statusValue("VmHWM") / 1024 }
    static func currentRSS() -> Double { statusValue("VmRSS") / 1024 }

    /// Resets the peak to the current RSS (Linux ≥ 4.0).
    static func resetPeak() { try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8) }

    private static func statusValue(_ key: String) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }

    /// The resident set size every `interval` while `body` runs, from just before it starts to
    /// just after it ends: `(milliseconds since the start, MiB)` pairs. For the memory-over-time
    /// chart (`scripts/charts`), never for a measured round: the sampler shares the client's core.
    static func sampledRSS(every interval: Duration = .milliseconds(5), _ body: () async throws -> Void) async throws -> [(Double, Double)] {
        let samples = RSSSamples()
        samples.take()
        let sampler = Task.detached {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                samples.take()
            }
        }
        defer { sampler.cancel() }
        try await body()
        sampler.cancel()
        _ = await sampler.result
        samples.take()
        return samples.values.withLock { $0 }
    }

    /// Samples taken from two tasks: the sampler's and the measured one's.
    private final class RSSSamples: Sendable {
        let start = ContinuousClock.now
        let values = Mutex<[(Double, Double)]>([])

        func take() {
            let elapsed = (ContinuousClock.now - start).secondsValue * 1000
            let rss = Measure.currentRSS()
            values.withLock { $0.append((elapsed, rss)) }
        }
    }

    /// Prints samples of ``sampledRSS(every:_:)`` as one block `scripts/charts` reads:
    /// `--- rss samples: NAME (t_ms rss_MiB) ---`, one `t_ms rss_MiB` line per sample, then
    /// `--- end rss samples ---`.
    static func printRSSSamples(_ name: String, _ samples: [(Double, Double)]) {
        print("--- rss samples: \(name) (t_ms rss_MiB) ---")
        for (milliseconds, rss) in samples { print("\(format(milliseconds, 1)) \(format(rss, 2))") }
        print("--- end rss samples ---")
    }

    /// Runs `requests` calls with `concurrency` workers and returns time and CPU (this process's,
    /// and the server process's when there is one). With `executors`, each worker task prefers
    /// one of them (round robin) instead of the default global executor.
    static func run(
        requests: Int, concurrency: Int, server: ServerProcess? = nil, executors: [any TaskExecutor] = [],
        _ call: @escaping @Sendable () async throws -> Void
    ) async throws -> Sample {
        let cpu = cpuMicroseconds()
        let serverCPU = server?.cpuMicroseconds() ?? 0
        let allocated = callsign_bench_allocations()
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                let share = requests / concurrency + (worker < requests % concurrency ? 1 : 0)
                if executors.isEmpty {
                    // Not `addTask(executorPreference: nil)`: that marks the task as having a
                    // preference, and every executor switch in it then takes a lock to look it up.
                    group.addTask { for _ in 0..<share { try await call() } }
                } else {
                    group.addTask(executorPreference: executors[worker % executors.count]) { for _ in 0..<share { try await call() } }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = clock.now - start
        return Sample(
            seconds: elapsed.secondsValue, cpuMicroseconds: cpuMicroseconds() - cpu,
            serverCPUMicroseconds: (server?.cpuMicroseconds() ?? 0) - serverCPU, requests: requests,
            allocations: Double(callsign_bench_allocations() &- allocated))
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func format(_ value: Double, _ digits: Int = 0) -> String { String(format: "%.\(digits)f", value) }

func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let padding = String(repeating: " ", count: max(0, width - text.count))
    return right ? padding + text : text + padding
}
