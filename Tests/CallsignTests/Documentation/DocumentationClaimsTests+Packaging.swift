import Foundation
import Testing

/// Claims about the documentation's own shape and the package's, checked against the files:
/// every migration guide listed where a reader looks for it, every library product with a catalog
/// that every documentation build and the CI name, the README's first sample the one a test runs,
/// the comparison table naming only what the code has, and the platform review covering every
/// `#if` in `Sources`.
extension DocumentationClaimsTests {
    /// The library products `Package.swift` declares (`.library(name: "…"`).
    static func libraryProducts() throws -> [String] {
        try text("Package.swift").matches(of: /\.library\(name: "([A-Za-z]+)"/).map { String($0.1) }
    }

    /// The names of the files in `folder` (relative to the repository) that end in `suffix`.
    static func files(in folder: String, endingIn suffix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)
            .filter { $0.hasSuffix(suffix) }.sorted()
    }

    @Test("every migration guide is in the catalog's topics and in the README's list, and every guide listed exists")
    func migrationGuides() throws {
        let catalog = "Sources/Callsign/Callsign.docc"
        let guides = try Self.files(in: catalog, endingIn: ".md").filter { $0.hasPrefix("Migrating-from-") }
        #expect(guides.count >= 10, "\(guides)")

        let topics = try Self.text("\(catalog)/Callsign.md")
        let section = try #require(topics.range(of: "### Moving to Callsign"), "Callsign.md has no \"Moving to Callsign\" topics")
        let listed = topics[section.upperBound...].prefix { $0 != "#" }
            .matches(of: /<doc:(Migrating-from-[A-Za-z-]+)>/).map { "\($0.1).md" }
        #expect(listed.sorted() == guides, "Callsign.md's \"Moving to Callsign\" topics")

        let readme = try Self.text("README.md")
        let linked = readme.matches(of: /\]\(Sources\/Callsign\/Callsign\.docc\/(Migrating-from-[A-Za-z-]+\.md)\)/).map { String($0.1) }
        #expect(Set(linked) == Set(guides), "the README's \"Coming from another library\" links")
    }

    @Test("every article of every catalog is in its root page's topics")
    func articlesAreListed() throws {
        for product in try Self.libraryProducts() {
            let catalog = "Sources/\(product)/\(product).docc"
            let root = try Self.text("\(catalog)/\(product).md")
            for article in try Self.files(in: catalog, endingIn: ".md") where article != "\(product).md" {
                let name = String(article.dropLast(3))
                #expect(root.contains("<doc:\(name)>"), "\(catalog)/\(product).md does not list <doc:\(name)>")
            }
        }
    }

    @Test("every library product has a DocC catalog that scripts/docs, .spi.yml, the CI's iOS build and the README's installation name")
    func everyProductIsDocumented() throws {
        let products = try Self.libraryProducts()
        #expect(products.count == 5, "\(products)")

        let script = try Self.text("scripts/docs")
        let defaults = try #require(script.split(separator: "\n").first { $0.contains("targets=(Callsign") })
        let inScript = Set(defaults.split(separator: "(").last?.split(separator: ")").first?.split(separator: " ").map(String.init) ?? [])

        let spi = try Self.text(".spi.yml")
        let inSPI = Set(spi.matches(of: /(?m)^\s+- ([A-Za-z]+)\s*$/).map { String($0.1) })

        // The simulators' job: one matrix entry per platform, each with the schemes it builds.
        let workflow = try Self.text(".github/workflows/ci.yml")
        var schemesByPlatform: [String: Set<String>] = [:]
        for match in workflow.matches(of: /- platform: (\w+)\n\s+schemes: ([A-Za-z ]+)\n/) {
            schemesByPlatform[String(match.1)] = Set(match.2.split(separator: " ").map(String.init))
        }
        #expect(Set(schemesByPlatform.keys) == ["iOS", "tvOS", "watchOS", "visionOS"], "\(schemesByPlatform.keys.sorted())")
        #expect(schemesByPlatform.values.allSatisfy { $0.contains("Callsign") && $0.isSubset(of: Set(products)) })
        #expect(workflow.contains("for scheme in ${{ matrix.schemes }}"))
        let inCI = schemesByPlatform["iOS"] ?? []

        let readme = try Self.text("README.md")
        for product in products {
            var isFolder: ObjCBool = false
            let catalog = Self.root.appendingPathComponent("Sources/\(product)/\(product).docc").path
            #expect(FileManager.default.fileExists(atPath: catalog, isDirectory: &isFolder) && isFolder.boolValue, "no catalog \(catalog)")
            #expect(inScript.contains(product), "scripts/docs does not build \(product) by default")
            #expect(inSPI.contains(product), ".spi.yml does not list \(product)")
            #expect(inCI.contains(product), "the CI's iOS job does not build \(product)")
            #expect(readme.contains(".product(name: \"\(product)\", package: \"callsign\")"), "the README's installation does not show \(product)")
        }
        #expect(inScript == Set(products) && inSPI == Set(products) && inCI == Set(products), "\(inScript) \(inSPI) \(inCI)")
        // Documentation is built with the toolchain's docc: no plugin for every user to clone.
        #expect(!(try Self.text("Package.swift")).contains("swift-docc-plugin"))
    }

    @Test("the README's first sample calls what the first-calls test runs, line for line")
    func readmeFirstSample() throws {
        let readme = try Self.text("README.md")
        let block = try #require(ArticleSamplesTests.swiftBlocks(in: readme).first)
        let calls = block.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("let ") && $0.contains("try await") }
        #expect(calls.count == 2, "\(calls)")
        let test = try Self.text("Tests/CallsignTests/Documentation/ReadmeSamplesTests.swift")
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        for call in calls {
            #expect(test.contains(call), "the README's \(call) is not what DocumentationSamplesTests runs")
        }
    }

    @Test("every swift block of the README is compiled in a *Samples.swift file, line for line (its imports aside)")
    func readmeBlocksAreCompiled() throws {
        func lines(_ text: some StringProtocol) -> [String] {
            text.split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let folder = "Tests/CallsignTests/Documentation"
        let samples = try Self.files(in: folder, endingIn: "Samples.swift").map { lines(try Self.text("\(folder)/\($0)")) }
        var checked = 0
        for block in ArticleSamplesTests.swiftBlocks(in: try Self.text("README.md")) {
            // A block's imports are its sample file's; a manifest fragment is checked by SwiftPM.
            let wanted = lines(block).filter { !$0.hasPrefix("import ") }
            if wanted.first?.hasPrefix(".package(") == true { continue }
            let found = samples.contains { lines in
                lines.count >= wanted.count && (0...(lines.count - wanted.count)).contains { Array(lines[$0..<($0 + wanted.count)]) == wanted }
            }
            #expect(found, "README.md: this block is in no *Samples.swift file:\n\(block)")
            checked += 1
        }
        #expect(checked >= 15)
    }

    @Test("every API the comparison table's Callsign column names is in the code")
    func comparisonTableNamesRealAPIs() throws {
        let readme = try Self.text("README.md")
        let table = try #require(readme.range(of: "| | Callsign | Alamofire"), "the comparison table moved")
        var source = ""
        let sources = Self.root.appendingPathComponent("Sources")
        let walker = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        for case let url as URL in walker where url.pathExtension == "swift" {
            source += try String(contentsOf: url, encoding: .utf8)
        }
        var checked = 0
        for line in readme[table.lowerBound...].split(separator: "\n").dropFirst(2) {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
            guard cells.count > 2 else { continue }
            for span in cells[2].split(separator: "`", omittingEmptySubsequences: false).enumerated().filter({ $0.offset % 2 == 1 }) {
                for word in span.element.matches(of: /[A-Za-z][A-Za-z0-9]*/) {
                    let name = String(word.0)
                    #expect(source.contains(try Regex("\\b\(name)\\b")), "the comparison table names `\(span.element)`, but \(name) is nowhere in Sources")
                    checked += 1
                }
            }
        }
        #expect(checked > 20)
    }

    @Test("the platform review in Documentation/Platforms.md lists every file of Sources with an #if, and all its blocks")
    func platformReviewIsComplete() throws {
        // The blocks in the code: top-level `#if`s per file, relative to Sources.
        var blocks: [String: Int] = [:]
        let sources = Self.root.appendingPathComponent("Sources")
        let walker = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        for case let url as URL in walker where url.pathExtension == "swift" {
            var depth = 0
            for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
                let directive = line.trimmingCharacters(in: .whitespaces)
                if directive.hasPrefix("#if ") {
                    if depth == 0 { blocks[String(url.path.dropFirst(sources.path.count + 1)), default: 0] += 1 }
                    depth += 1
                } else if directive.hasPrefix("#endif") {
                    depth -= 1
                }
            }
        }
        #expect(blocks.count > 10)

        // The blocks in the review: each row names files (the first with its folder, the rest in
        // the same folder) and one line range per block, in the same order.
        let review = try Self.text("Documentation/Platforms.md")
        let heading = try #require(review.range(of: "## Every platform-conditional block in `Sources`"))
        var reviewed: [String: Int] = [:]
        for line in review[heading.upperBound...].split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 3 else { continue }
            let names = cells[1].split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 1 }.map { String($0.element) }
            let ranges = cells[2].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let first = names.first else { continue }
            let folder = first.contains("/") ? String(first[..<(first.lastIndex(of: "/") ?? first.startIndex)]) + "/" : ""
            let paths = [first] + names.dropFirst().map { folder + $0 }
            if paths.count == 1 {
                reviewed[first, default: 0] += ranges.count
            } else {
                #expect(paths.count == ranges.count, "one line range per file in: \(cells[1])")
                for path in paths { reviewed[path, default: 0] += 1 }
            }
        }
        let differing = Set(blocks.keys).union(reviewed.keys).sorted().filter { blocks[$0] != reviewed[$0] }
            .map { "\($0): \(blocks[$0] ?? 0) in Sources, \(reviewed[$0] ?? 0) reviewed" }
        #expect(differing.isEmpty, "Documentation/Platforms.md reviews other #if blocks than Sources has — review them line by line and update the table: \(differing)")
    }
}
