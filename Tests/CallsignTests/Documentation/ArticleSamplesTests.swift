import Foundation
import Testing

@Suite("Documentation articles", .hangGuard)
struct ArticleSamplesTests {
    /// The trimmed, non-empty lines of `text`.
    private static func lines(_ text: some StringProtocol) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// The ```swift blocks of a Markdown file.
    static func swiftBlocks(in markdown: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```swift") {
                current = []
            } else if current != nil, line.hasPrefix("```") {
                blocks.append(current?.joined(separator: "\n") ?? "")
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test("every swift block of every article is compiled in ArticleSamples.swift, line for line")
    func everyBlockIsCompiled() throws {
        let repository = MessageScanner.repository
        let samples = Self.lines(
            try String(contentsOf: repository.appendingPathComponent("Tests/CallsignTests/Documentation/ArticleSamples.swift"), encoding: .utf8))
        let catalog = repository.appendingPathComponent("Sources/Callsign/Callsign.docc")
        var checked = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: catalog.path) where name.hasSuffix(".md") {
            let markdown = try String(contentsOf: catalog.appendingPathComponent(name), encoding: .utf8)
            for block in Self.swiftBlocks(in: markdown) {
                let wanted = Self.lines(block)
                if wanted.first?.hasPrefix(".package(") == true { continue }  // a manifest fragment
                let found = (0...max(0, samples.count - wanted.count)).contains { start in
                    Array(samples[start..<min(samples.count, start + wanted.count)]) == wanted
                }
                #expect(found, "\(name): this block is not in ArticleSamples.swift:\n\(block)")
                checked += 1
            }
        }
        #expect(checked >= 10)
    }
}
