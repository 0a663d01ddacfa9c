import CallsignOpenAPI
import Foundation

/// How loading an OpenAPI document grows with its size: generated YAML documents of 1,000, 5,000
/// and 20,000 operations whose responses go through `$ref` chains 20 deep (runs I, K and N in
/// Benchmarks/README.md), each loaded in a fresh child process so its peak RSS is its own. The
/// child runs on every core (the benchmark pins itself to one, beside its server), as an app's
/// load does: OpenAPIKit reads a large document's paths on several threads.
///
/// `CALLSIGN_BENCH_OPENAPI_SIZES=1000,2000` chooses other operation counts.
enum OpenAPIBenchmark {
    /// The argument that makes this executable load one document and report instead of measuring.
    static let loadArgument = "--openapi-load"

    static func run(rounds: Int) throws {
        let sizes = (ProcessInfo.processInfo.environment["CALLSIGN_BENCH_OPENAPI_SIZES"] ?? "1000,5000,20000")
            .split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 0 }
        print("")
        print("OpenAPI: YAML documents, $ref chains 20 deep, each loaded in a fresh process on every core (median of \(rounds))")
        print("\(pad("operations", 11, right: true)) \(pad("document", 10, right: true)) \(pad("load", 9, right: true)) \(pad("peak RSS", 10, right: true)) \(pad("µs/op", 7, right: true))")
        for operations in sizes {
            var seconds: [Double] = []
            var peaks: [Double] = []
            var bytes = 0
            for _ in 0..<rounds {
                let result = try child(operations: operations)
                seconds.append(result.seconds)
                peaks.append(result.peakMiB)
                bytes = result.bytes
            }
            let load = median(seconds)
            print(
                "\(pad(format(Double(operations)), 11, right: true)) \(pad("\(bytes / 1024) KiB", 10, right: true)) "
                    + "\(pad("\(format(load * 1000)) ms", 9, right: true)) \(pad("\(format(median(peaks))) MiB", 10, right: true)) "
                    + "\(pad(format(load * 1e6 / Double(operations)), 7, right: true))")
        }
    }

    /// In the child: makes the document, loads it once, prints `bytes seconds peakMiB`.
    static func load(operations: Int) throws {
        let document = OpenAPIFixtures.large(operations: operations, depth: 20)
        let clock = ContinuousClock()
        let start = clock.now
        let loaded = try OpenAPIOperations(data: document, format: .yaml)
        let seconds = (clock.now - start).secondsValue
        precondition(loaded.operations.count == operations)
        print("\(document.count) \(seconds) \(Measure.peakRSS())")
    }

    private static func child(operations: Int) throws -> (bytes: Int, seconds: Double, peakMiB: Double) {
        let process = ServerProcess.ownProgram([loadArgument, String(operations)])
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
