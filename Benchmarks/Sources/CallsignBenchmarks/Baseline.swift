import Foundation
import Synchronization

/// The committed baseline a run is compared with (`Benchmarks/baseline.json`): ratios to the raw
/// clients (higher is better) and costs per call (lower is better). A row more than 5 % worse
/// than its baseline is marked `REGRESSION` in the output — a gate that reads the benchmark's own
/// numbers, never a timed test. `CALLSIGN_BENCH_WRITE_BASELINE=1` writes this run's figures as
/// the new baseline (commit it with the change that earned it).
final class Baseline: Sendable {
    private let ratios: [String: Double]
    private let costs: [String: Double]
    private let state = Mutex((ratios: [String: Double](), costs: [String: Double](), regressions: [String]()))
    let path: String

    static let shared = Baseline(path: ProcessInfo.processInfo.environment["CALLSIGN_BENCH_BASELINE"] ?? "Benchmarks/baseline.json")

    private struct File: Codable {
        var ratios: [String: Double]
        var costs: [String: Double]
    }

    init(path: String) {
        self.path = path
        let file = FileManager.default.contents(atPath: path).flatMap { try? JSONDecoder().decode(File.self, from: $0) }
        ratios = file?.ratios ?? [:]
        costs = file?.costs ?? [:]
    }

    /// `" (baseline 0.97×)"`, with `REGRESSION` when `value` fell more than 5 % below it.
    func ratio(_ name: String, _ value: Double) -> String {
        state.withLock { $0.ratios[name] = value }
        guard let base = ratios[name] else { return "" }
        if value < base * 0.95 {
            state.withLock { $0.regressions.append(name) }
            return " REGRESSION (baseline \(format(base, 2))×)"
        }
        return " (baseline \(format(base, 2))×)"
    }

    /// `" (baseline 4.5)"`, with `REGRESSION` when `value` rose more than 5 % above it.
    func cost(_ name: String, _ value: Double) -> String {
        state.withLock { $0.costs[name] = value }
        guard let base = costs[name] else { return "" }
        if value > base * 1.05 {
            state.withLock { $0.regressions.append(name) }
            return " REGRESSION (baseline \(format(base, 1)))"
        }
        return " (baseline \(format(base, 1)))"
    }

    /// Prints the verdict; writes the baseline when asked.
    func finish() {
        let measured = state.withLock { $0 }
        let regressions = measured.regressions
        print("")
        if regressions.isEmpty {
            print(ratios.isEmpty && costs.isEmpty ? "no baseline at \(path)" : "no row regressed against \(path)")
        } else {
            print("REGRESSION against \(path): " + regressions.joined(separator: "; "))
        }
        guard ProcessInfo.processInfo.environment["CALLSIGN_BENCH_WRITE_BASELINE"] == "1" else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let rounded = File(
            ratios: measured.ratios.mapValues { ($0 * 100).rounded() / 100 }, costs: measured.costs.mapValues { ($0 * 10).rounded() / 10 })
        if let data = try? encoder.encode(rounded) {
            _ = FileManager.default.createFile(atPath: path, contents: data)
            print("baseline written to \(path)")
        }
    }
}
