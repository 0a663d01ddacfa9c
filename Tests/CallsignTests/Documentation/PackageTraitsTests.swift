import CallsignTesting
import Foundation
import Testing

/// The README's installation table says how many packages an app resolves with each trait; this
/// asks SwiftPM itself, from a build folder of its own (the suite's own `.build` is in use).
@Suite("Package traits: an app resolves only what it uses", .hangGuard)
struct PackageTraitsTests {
    /// The rows of the README's trait table: the trait (`none`, a name, or `default`) and its count.
    static func readmeRows() throws -> [(trait: String, packages: Int)] {
        let readme = try DocumentationClaimsTests.text("README.md")
        let table = try #require(readme.range(of: "| trait | what it adds | packages resolved with it alone |"))
        var rows: [(String, Int)] = []
        for line in readme[table.upperBound...].split(separator: "\n").dropFirst() {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, let count = Int(cells[cells.count - 1]) else { continue }
            rows.append((cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`")), count))
        }
        return rows
    }

    @Test("each trait resolves the packages the README says, and the core alone at most 10")
    func readmeCounts() async throws {
        let rows = try Self.readmeRows()
        #expect(rows.map(\.trait) == ["none", "AsyncHTTPClient", "SQLite", "OpenAPI", "TestServers", "PostgreSQL", "CommandLine", "default"])
        let scratch = Scratch.folder()
        for (trait, packages) in rows {
            let traits: [String] = switch trait {
            case "default": []
            case "none": ["--disable-default-traits"]
            default: ["--disable-default-traits", "--traits", trait]
            }
            let arguments = ["swift", "package", "--package-path", DocumentationClaimsTests.root.path, "--scratch-path", scratch.path]
                + traits + ["show-dependencies", "--format", "flatlist"]
            let run = try await ProcessRunner.run("/usr/bin/env", arguments)
            try #require(run.status == 0, "\(run.standardError)")
            let resolved = Set(run.standardOutput.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
            #expect(resolved.count == packages, "\(trait): \(resolved.sorted())")
            if trait == "none" {
                #expect(resolved.count <= 10)
                #expect(!resolved.contains("async-http-client") && !resolved.contains("swift-nio") && !resolved.contains("grdb.swift"))
            }
        }
    }
}
