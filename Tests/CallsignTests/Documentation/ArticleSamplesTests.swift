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

    @Test("every swift block of every article in every catalog is compiled in a *Samples.swift file, line for line")
    func everyBlockIsCompiled() throws {
        let repository = MessageScanner.repository
        let fileManager = FileManager.default
        // Samples live in Tests/CallsignTests/Documentation/*Samples.swift (one file per kind of
        // article, so each stays readable); a block may sit in any of them.
        let folder = repository.appendingPathComponent("Tests/CallsignTests/Documentation")
        var samples: [[String]] = []
        for name in try fileManager.contentsOfDirectory(atPath: folder.path).sorted() where name.hasSuffix("Samples.swift") {
            samples.append(Self.lines(try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)))
        }
        #expect(!samples.isEmpty)
        // Every product's catalog: Sources/<Target>/<Target>.docc.
        let sources = repository.appendingPathComponent("Sources")
        var catalogs: [URL] = []
        for target in try fileManager.contentsOfDirectory(atPath: sources.path).sorted() {
            let folder = sources.appendingPathComponent(target)
            for entry in (try? fileManager.contentsOfDirectory(atPath: folder.path)) ?? [] where entry.hasSuffix(".docc") {
                catalogs.append(folder.appendingPathComponent(entry))
            }
        }
        #expect(!catalogs.isEmpty)
        var checked = 0
        for catalog in catalogs {
            for name in try fileManager.contentsOfDirectory(atPath: catalog.path).sorted() where name.hasSuffix(".md") {
                let markdown = try String(contentsOf: catalog.appendingPathComponent(name), encoding: .utf8)
                for block in Self.swiftBlocks(in: markdown) {
                    let wanted = Self.lines(block)
                    if wanted.first?.hasPrefix(".package(") == true { continue }  // a manifest fragment
                    let found = samples.contains { lines in
                        (0...max(0, lines.count - wanted.count)).contains { start in
                            Array(lines[start..<min(lines.count, start + wanted.count)]) == wanted
                        }
                    }
                    #expect(found, "\(catalog.lastPathComponent)/\(name): this block is in no *Samples.swift file:\n\(block)")
                    checked += 1
                }
            }
        }
        #expect(checked >= 10)
    }
}
