@testable import Callsign
import Foundation
import Testing

/// The pipeline's order is written once, in `Pipeline.table`; every list of it in the
/// documentation is checked against that table.
@Suite("The pipeline's one table, and every list of it in the docs", .hangGuard)
struct PipelineTableTests {
    /// The table's rows as the docs name them: a stage's name, or where your middlewares go.
    static let expected: [String] = Pipeline.table.map { row in
        switch row.kind {
        case .request(let stage, _): stage.description
        case .wire(let stage, _): stage.description
        case .yourMiddlewares: "your middlewares"
        case .yourWireMiddlewares: "your wire middlewares"
        }
    }

    static func text(_ path: String) throws -> String {
        try String(contentsOf: MessageScanner.repository.appendingPathComponent(path), encoding: .utf8)
    }

    /// The stages of a diagram (` call ─► a ─► b ══► c …`): the words between arrows, in order.
    static func diagram(in text: String) throws -> [String] {
        let lines = text.split(separator: "\n").filter { $0.contains("─►") || $0.contains("══►") }
        let start = try #require(lines.firstIndex { $0.contains("call ─►") }, "no diagram starting with \"call ─►\"")
        var names: [String] = []
        for line in lines[start...].prefix(3) {
            let cleaned = line.replacingOccurrences(of: "///", with: "").replacingOccurrences(of: "══►", with: "─►")
            names += cleaned.components(separatedBy: "─►").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        return Array(names.drop { $0 == "call" })
    }

    /// The first cells of a Markdown table's rows (`` `name` `` or `*name*`), in order.
    static func tableRows(in text: String, after heading: String) throws -> [String] {
        let from = try #require(text.range(of: heading), "\"\(heading)\" is not in the text")
        var names: [String] = []
        var inTable = false
        for line in text[from.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.replacingOccurrences(of: "///", with: "").trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("|") else {
                if inTable { break }
                continue
            }
            inTable = true
            let cell = trimmed.split(separator: "|").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard cell != "stage", !cell.hasPrefix("---") else { continue }
            names.append(cell.trimmingCharacters(in: CharacterSet(charactersIn: "`*").union(.whitespaces)).replacingOccurrences(of: "``", with: ""))
        }
        return names
    }

    @Test("MiddlewareStage.order and WireStage.order are the table's, in its order")
    func orders() {
        #expect(MiddlewareStage.order.map(\.description) + WireStage.order.map(\.description) == Self.expected.filter { !$0.hasPrefix("your") })
        #expect(Self.expected.first == "observability" && Self.expected.last == "transport")
        #expect(Self.expected.firstIndex(of: "encoding").map { $0 + 1 } == Self.expected.firstIndex(of: "signing"), "the seams meet at encoding")
        let replayRows = Pipeline.table.filter(\.replayStartsBelow).compactMap(\.requestStage)
        #expect(replayRows == [.offline], "a replay starts below the offline stage, and only there")
    }

    @Test("the diagrams in the README, ThePipeline article and the code match the table")
    func diagrams() throws {
        #expect(try Self.diagram(in: Self.text("README.md")) == Self.expected, "README.md")
        #expect(try Self.diagram(in: Self.text("Sources/Callsign/Callsign.docc/ThePipeline.md")) == Self.expected, "ThePipeline.md")
        #expect(try Self.diagram(in: Self.text("Sources/Callsign/Pipeline/Pipeline.swift")) == Self.expected, "Pipeline.swift")
    }

    @Test("the stage tables of ThePipeline article and of MiddlewareStage's and WireStage's docs match the table")
    func tables() throws {
        #expect(try Self.tableRows(in: Self.text("Sources/Callsign/Callsign.docc/ThePipeline.md"), after: "Outermost first:") == Self.expected)
        let source = try Self.text("Sources/Callsign/Pipeline/PipelineStages.swift")
        let requestSeam = Array(Self.expected.prefix { $0 != "signing" })
        let wireSeam = Array(Self.expected.drop { $0 != "signing" })
        #expect(try Self.tableRows(in: source, after: "from the pipeline's one\n/// table)") == requestSeam)
        #expect(try Self.tableRows(in: source, after: "for placing your own wire middlewares") == wireSeam)
    }
}
