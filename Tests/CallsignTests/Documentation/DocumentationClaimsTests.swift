import Foundation
import Testing

/// Claims the README and the threat model make about the code, checked against the code: the
/// fuzz targets they list, and the tests the threat model cites as proof of each door.
@Suite("Documentation claims match the code", .hangGuard)
struct DocumentationClaimsTests {
    static let root = MessageScanner.repository

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The `code` spans of `text` between `start` and the first `end` after it (line breaks read
    /// as spaces, so re-wrapping a paragraph changes nothing).
    static func codeSpans(in text: String, after start: String, before end: String = ". ") throws -> [String] {
        let text = text.replacingOccurrences(of: "\n", with: " ")
        let from = try #require(text.range(of: start), "\"\(start)\" is not in the text")
        let to = try #require(text.range(of: end, range: from.upperBound..<text.endIndex), "\"\(end)\" does not follow \"\(start)\"")
        return text[from.upperBound..<to.lowerBound].split(separator: "`", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    @Test("the fuzz targets in Fuzz/Sources, run.sh's default list, the README and the threat model are the same")
    func fuzzTargets() throws {
        let folder = Self.root.appendingPathComponent("Fuzz/Sources/CallsignFuzz")
        var defined: Set<String> = []
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".swift") {
            let source = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            for match in source.matches(of: /FuzzTarget\(name: "([a-z-]+)"\)/) { defined.insert(String(match.1)) }
        }
        #expect(defined.count >= 16, "\(defined.sorted())")

        let script = try Self.text("Fuzz/run.sh")
        let line = try #require(script.split(separator: "\n").first { $0.contains("then targets=(") })
        let inScript = Set(line.split(separator: "(").last?.split(separator: ")").first?.split(separator: " ").map(String.init) ?? [])
        #expect(inScript == defined, "run.sh's default list")

        let readme = Set(try Self.codeSpans(in: Self.text("README.md"), after: "Targets, one per door"))
        #expect(readme == defined, "the README's list")

        let model = Set(try Self.codeSpans(in: Self.text("Documentation/ThreatModel.md"), after: "parses bytes has a target:"))
        #expect(model == defined, "the threat model's list")
    }

    @Test("every test the threat model cites exists, and so does every suite it names")
    func threatModelTests() throws {
        let model = try Self.text("Documentation/ThreatModel.md")
        var tests: [String] = []
        var suites: Set<String> = []
        let folder = Self.root.appendingPathComponent("Tests/CallsignTests")
        let walker = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
        for case let url as URL in walker where url.pathExtension == "swift" {
            let source = try String(contentsOf: url, encoding: .utf8)
            for match in source.matches(of: /@Test\(\s*"((?:[^"\\]|\\.)*)"/) { tests.append(String(match.1).replacingOccurrences(of: "\\\"", with: "\"")) }
            for match in source.matches(of: /@Suite\(\s*"((?:[^"\\]|\\.)*)"/) { tests.append(String(match.1)) }
            for match in source.matches(of: /(?:struct|enum|final class) ([A-Za-z]+Tests)\b/) { suites.insert(String(match.1)) }
        }
        // Quoted names in table rows: a name ending in "…" is a prefix.
        var cited = 0
        for line in model.split(separator: "\n") where line.hasPrefix("|") {
            for match in line.matches(of: /"([^"]+)"/) {
                let name = String(match.1)
                // Shell and header examples in quotes are not test names.
                guard name.count > 12, name.contains(" ") else { continue }
                cited += 1
                let prefix = name.hasSuffix("…") ? String(name.dropLast()) : nil
                #expect(tests.contains { prefix.map($0.hasPrefix) ?? ($0 == name) }, "the threat model cites a test that does not exist: \(name)")
            }
            for match in line.matches(of: /\b([A-Z][A-Za-z]+Tests)\b/) {
                #expect(suites.contains(String(match.1)), "the threat model names a suite that does not exist: \(match.1)")
            }
        }
        #expect(cited > 40)
    }
}
