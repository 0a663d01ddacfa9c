import CallsignOpenAPI
import Foundation

/// How loading an OpenAPI document grows with its size: generated YAML documents of 1,000, 5,000
/// and 20,000 operations whose responses go through `$ref` chains 20 deep (runs I, K and N in
/// Benchmarks/README.md), each loaded in a fresh child process so its peak RSS is its own. The
/// child runs on every core (the benchmark pins itself to one, beside its server), as an app's
/// load does: OpenAPIKit reads a large document's paths on several threads.
///
/// Each size is also loaded from a `DescriptionCache` the first load of the size filled (run O):
/// what a second `callsign call X -D big.yaml` costs.
///
/// `CALLSIGN_BENCH_OPENAPI_SIZES=1000,2000` chooses other operation counts.
enum OpenAPIBenchmark {
    /// The argument that makes this executable load one document and report instead of measuring.
    static let loadArgument = "--openapi-load"

    static func run(rounds: Int) throws {
        let sizes = (ProcessInfo.processInfo.environment["CALLSIGN_BENCH_OPENAPI_SIZES"] ?? "1000,5000,20000")
            .split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 0 }
        print("")
        print("OpenAPI: YAML documents, $ref chains 20 deep, each loaded in a fresh process on every core (median of \(rounds));")
        print("kept: the same document read back from the description cache")
        print(
            "\(pad("operations", 11, right: true)) \(pad("document", 10, right: true)) \(pad("load", 9, right: true)) \(pad("peak RSS", 10, right: true)) "
                + "\(pad("µs/op", 7, right: true)) \(pad("kept", 9, right: true)) \(pad("peak RSS", 10, right: true)) \(pad("load/kept", 9, right: true))")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-bench-descriptions-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        for operations in sizes {
            var loads: [(seconds: Double, peakMiB: Double)] = []
            var kept: [(seconds: Double, peakMiB: Double)] = []
            var bytes = 0
            // Fills the cache; not counted.
            _ = try child(operations: operations, cache: folder.path)
            for _ in 0..<rounds {
                let result = try child(operations: operations)
                loads.append((result.seconds, result.peakMiB))
                bytes = result.bytes
                let read = try child(operations: operations, cache: folder.path)
                kept.append((read.seconds, read.peakMiB))
            }
            let load = median(loads.map(\.seconds))
            let keptLoad = median(kept.map(\.seconds))
            print(
                "\(pad(format(Double(operations)), 11, right: true)) \(pad("\(bytes / 1024) KiB", 10, right: true)) "
                    + "\(pad("\(format(load * 1000)) ms", 9, right: true)) \(pad("\(format(median(loads.map(\.peakMiB)))) MiB", 10, right: true)) "
                    + "\(pad(format(load * 1e6 / Double(operations)), 7, right: true)) "
                    + "\(pad("\(format(keptLoad * 1000)) ms", 9, right: true)) \(pad("\(format(median(kept.map(\.peakMiB)))) MiB", 10, right: true)) "
                    + "\(pad("\(format(load / keptLoad))×", 9, right: true))")
        }
    }

    /// In the child: makes the document, loads it once (through a description cache in the folder
    /// `cache`, when given), prints `bytes seconds peakMiB`.
    static func load(operations: Int, cache: String?) throws {
        let document = OpenAPIFixtures.large(operations: operations, depth: 20)
        let clock = ContinuousClock()
        let start = clock.now
        let loaded = try OpenAPIOperations(
            data: document, format: .yaml, cache: cache.map { DescriptionCache(directory: URL(fileURLWithPath: $0)) })
        let seconds = (clock.now - start).secondsValue
        precondition(loaded.operations.count == operations)
        print("\(document.count) \(seconds) \(Measure.peakRSS())")
    }

    private static func child(operations: Int, cache: String? = nil) throws -> (bytes: Int, seconds: Double, peakMiB: Double) {
        let process = ServerProcess.ownProgram([loadArgument, String(operations)] + (cache.map { [$0] } ?? []))
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let fields = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard process.terminationStatus == 0, fields.count == 3, let bytes = Int(fields[0]), let seconds = Double(fields[1]),
            let peak = Double(fields[2])
        else {
            throw ServerProcessError(description: "loading \(operations) operations failed (status \(process.terminationStatus))")
        }
        return (bytes, seconds, peak)
    }
}
