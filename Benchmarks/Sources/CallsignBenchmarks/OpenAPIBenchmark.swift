import CallsignOpenAPI
import Foundation

/// How long an OpenAPI document of 1,000 operations, whose responses go through `$ref` chains
/// 20 deep, takes to load (run I in Benchmarks/README.md).
enum OpenAPIBenchmark {
    static func run(rounds: Int) throws {
        let document = OpenAPIFixtures.large(operations: 1_000, depth: 20)
        var seconds: [Double] = []
        for _ in 0..<rounds {
            let clock = ContinuousClock()
            let start = clock.now
            let operations = try OpenAPIOperations(data: document, format: .yaml)
            seconds.append((clock.now - start).secondsValue)
            precondition(operations.operations.count == 1_000)
        }
        print("")
        print("OpenAPI: \(document.count / 1024) KiB YAML, 1,000 operations, $ref chains 20 deep: loaded in \(format(median(seconds) * 1000, 0)) ms (median of \(rounds))")
    }
}
