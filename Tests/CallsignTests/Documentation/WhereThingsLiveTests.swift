import Foundation
import Testing

/// `Documentation/WhereThingsLive.md` is a map of the package's rooms and what each may import;
/// this suite keeps it true.
@Suite("Where things live: every folder is on the map and imports only what its row allows")
struct WhereThingsLiveTests {
    /// The map's rows: folder (relative to the repository) → the modules its files may import.
    static func rows() throws -> [String: Set<String>] {
        let text = try String(contentsOf: MessageScanner.repository.appendingPathComponent("Documentation/WhereThingsLive.md"), encoding: .utf8)
        var rows: [String: Set<String>] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `Sources/") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 3 else { continue }
            let folder = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let modules = cells[2] == "—" ? [] : cells[2].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            rows[folder] = Set(modules)
        }
        return rows
    }

    /// The modules a Swift file imports, however the import is marked.
    static func imports(of file: URL) throws -> Set<String> {
        let text = try String(contentsOf: file, encoding: .utf8)
        var modules: Set<String> = []
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            guard let index = words.firstIndex(of: "import"), index + 1 < words.count,
                words[..<index].allSatisfy({ ["public", "package", "internal", "@preconcurrency", "@_exported"].contains($0) })
            else { continue }
            modules.insert(words[index + 1].split(separator: ".").first.map(String.init) ?? words[index + 1])
        }
        return modules
    }

    @Test("each Swift file's imports are in its folder's row; each folder holding Swift files has a row")
    func importsFollowTheMap() throws {
        let rows = try Self.rows()
        #expect(rows.count > 20)
        let root = MessageScanner.repository
        let sources = root.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        #expect(files.count > 100)
        var unmapped: Set<String> = []
        var outside: [String] = []
        for file in files {
            let relative = String(file.path.dropFirst(root.path.count + 1))
            // The nearest folder on the map (Pipeline/Stages/ is in Pipeline/'s room).
            guard let folder = rows.keys.filter({ relative.hasPrefix($0) }).max(by: { $0.count < $1.count }) else {
                unmapped.insert((relative as NSString).deletingLastPathComponent)
                continue
            }
            let allowed = rows[folder] ?? []
            for module in try Self.imports(of: file).subtracting(allowed) {
                outside.append("\(relative) imports \(module)")
            }
        }
        #expect(unmapped.isEmpty, "folders without a row: \(unmapped.sorted())")
        #expect(outside.isEmpty, "imports outside the map: \(outside.sorted())")
        // Every row names a folder that exists.
        for folder in rows.keys {
            var isFolder: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(folder).path, isDirectory: &isFolder) && isFolder.boolValue, "\(folder)")
        }
    }
}
