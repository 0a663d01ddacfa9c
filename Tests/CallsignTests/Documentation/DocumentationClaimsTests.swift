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
        var defined: Set<String> = []
        for (_, source, _) in try Self.swiftFiles(under: "Fuzz/Sources/CallsignFuzz") {
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

    /// The fuzz package compiles some of the command line's files as they are (links in
    /// `Fuzz/Sources/CallsignFuzz/CLI/`), and neither CI nor `swift test` builds it: this is the
    /// check that they would build there. It has no ArgumentParser, and it cannot see Callsign's
    /// `package` types, so each one a linked file names must be linked too.
    @Test("the files the fuzz package links build there: no ArgumentParser, and every package-only type of Callsign they name is linked too")
    func fuzzLinkedFiles() throws {
        let typeName = /(?:enum|struct|class|actor|protocol)\s+([A-Za-z_][A-Za-z0-9_]*)/
        var packageTypes: Set<String> = []
        for file in try Self.swiftFiles(under: "Sources/Callsign") {
            for match in file.source.matches(of: /package\s+(?:final\s+)?(?:enum|struct|class|actor|protocol)\s+([A-Za-z_][A-Za-z0-9_]*)/) {
                packageTypes.insert(String(match.1))
            }
        }
        #expect(packageTypes.contains("KeptJSON"), "the library's package-only types are found")
        let fuzz = try Self.swiftFiles(under: "Fuzz/Sources/CallsignFuzz")
        var declared: Set<String> = []
        for file in fuzz {
            for match in file.source.matches(of: typeName) { declared.insert(String(match.1)) }
        }
        let linked = fuzz.filter(\.linked)
        #expect(linked.count >= 7, "the CLI's files linked into the fuzz package: \(linked.map(\.path))")
        for file in linked {
            #expect(!file.source.contains("import ArgumentParser"), "\(file.path) imports ArgumentParser, which the fuzz package does not have")
            // Code only: a comment may name anything.
            let code = file.source.split(separator: "\n").filter { !$0.drop(while: \.isWhitespace).hasPrefix("//") }.joined(separator: "\n")
            let missing = try packageTypes.subtracting(declared).filter { type in
                // Simple word boundaries: Unicode's would read `KeptJSON.decoder` as one word.
                try code.firstMatch(of: Regex("\\b\(type)\\b").wordBoundaryKind(.simple)) != nil
            }
            #expect(missing.isEmpty, "\(file.path) names \(missing.sorted()), package-only in Callsign and not linked into Fuzz/")
        }
    }

    /// The Swift files under `folder` (relative to the repository): each one's path, text, and
    /// whether it is a symbolic link.
    static func swiftFiles(under folder: String) throws -> [(path: String, source: String, linked: Bool)] {
        let base = root.appendingPathComponent(folder)
        let walker = try #require(FileManager.default.enumerator(at: base, includingPropertiesForKeys: [.isSymbolicLinkKey]))
        var files: [(path: String, source: String, linked: Bool)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let linked = try url.resourceValues(forKeys: [.isSymbolicLinkKey]).isSymbolicLink ?? false
            files.append((url.path, try String(contentsOf: url, encoding: .utf8), linked))
        }
        return files
    }

    @Test("every test the threat model cites exists, and so does every suite it names")
    func threatModelTests() throws {
        let model = try Self.text("Documentation/ThreatModel.md")
        var tests: [String] = []
        var suites: Set<String> = []
        for (_, source, _) in try Self.swiftFiles(under: "Tests/CallsignTests") {
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
