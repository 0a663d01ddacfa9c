import Foundation

/// Files under `Tests/CallsignTests/Fixtures`.
enum Fixture {
    static func url(_ name: String) -> URL {
        let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
        if let url = Bundle.module.url(forResource: parts[0], withExtension: parts.count > 1 ? parts[1] : nil) {
            return url
        }
        return Bundle.module.bundleURL.appendingPathComponent("Fixtures").appendingPathComponent(name)
    }

    static func data(_ name: String) throws -> Data { try Data(contentsOf: url(name)) }
}

extension Array where Element == Data {
    /// The chunks as an async sequence, as a streamed body delivers them.
    var asyncChunks: AsyncStream<Data> {
        let chunks = self
        return AsyncStream { continuation in
            for chunk in chunks { continuation.yield(chunk) }
            continuation.finish()
        }
    }
}
