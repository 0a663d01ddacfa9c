import Callsign
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
/// `CALLSIGN_BENCH_OPENAPI_SIZES=1000,2000` chooses other operation counts;
/// `CALLSIGN_BENCH_OPENAPI_FILE=openai.yaml` adds a row for a published document.
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
        var documents: [(label: String, operations: Int, file: String?)] = sizes.map { ("", $0, nil) }
        if let file = ProcessInfo.processInfo.environment["CALLSIGN_BENCH_OPENAPI_FILE"], !file.isEmpty {
            documents.append((URL(fileURLWithPath: file).lastPathComponent, 0, file))
        }
        for (label, operations, file) in documents {
            var loads: [(seconds: Double, peakMiB: Double)] = []
            var kept: [(seconds: Double, peakMiB: Double)] = []
            var bytes = 0
            // Fills the cache; not counted.
            _ = try child(operations: operations, file: file, cache: folder.path)
            var counted = operations
            for _ in 0..<rounds {
                let result = try child(operations: operations, file: file)
                loads.append((result.seconds, result.peakMiB))
                bytes = result.bytes
                counted = result.operations
                let read = try child(operations: operations, file: file, cache: folder.path)
                kept.append((read.seconds, read.peakMiB))
            }
            let load = median(loads.map(\.seconds))
            let keptLoad = median(kept.map(\.seconds))
            print(
                "\(pad(format(Double(counted)), 11, right: true)) \(pad("\(bytes / 1024) KiB", 10, right: true)) "
                    + "\(pad("\(format(load * 1000)) ms", 9, right: true)) \(pad("\(format(median(loads.map(\.peakMiB)))) MiB", 10, right: true)) "
                    + "\(pad(format(load * 1e6 / Double(max(1, counted))), 7, right: true)) "
                    + "\(pad("\(format(keptLoad * 1000)) ms", 9, right: true)) \(pad("\(format(median(kept.map(\.peakMiB)))) MiB", 10, right: true)) "
                    + "\(pad("\(format(load / keptLoad))×", 9, right: true)) \(label)")
        }
    }

    /// In the child: makes the document (or reads `file`), loads it once (through a description
    /// cache in the folder `cache`, when given), prints `bytes seconds peakMiB operations`.
    static func load(operations: Int, file: String?, cache: String?) throws {
        let document = try file.map { try Data(contentsOf: URL(fileURLWithPath: $0)) } ?? OpenAPIFixtures.large(operations: operations, depth: 20)
        let format: APIDefinitions.Format = file?.hasSuffix(".json") == true ? .json : .yaml
        let clock = ContinuousClock()
        let start = clock.now
        let loaded = try OpenAPIOperations(
            data: document, format: format, cache: cache.map { DescriptionCache(directory: URL(fileURLWithPath: $0)) })
        let seconds = (clock.now - start).secondsValue
        precondition(file != nil || loaded.operations.count == operations)
        print("\(document.count) \(seconds) \(Measure.peakRSS()) \(loaded.operations.count)")
    }

    private static func child(operations: Int, file: String?, cache: String? = nil) throws -> (bytes: Int, seconds: Double, peakMiB: Double, operations: Int) {
        let process = ServerProcess.ownProgram([loadArgument, String(operations), cache ?? "-", file ?? "-"])
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let fields = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard process.terminationStatus == 0, fields.count == 4, let bytes = Int(fields[0]), let seconds = Double(fields[1]),
            let peak = Double(fields[2]), let count = Int(fields[3])
        else {
            throw ServerProcessError(description: "loading \(file ?? "\(operations) operations") failed (status \(process.terminationStatus))")
        }
        return (bytes, seconds, peak, count)
    }
}
