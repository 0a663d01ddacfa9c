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
