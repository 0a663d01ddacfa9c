@testable import Callsign
import CallsignSQLite
import Foundation
import Testing

/// Definitions files, HAR archives and stored rows are outside data too: a small hostile file
/// ends in a clear error, fast, with bounded memory.
@Suite("Hostile files: definitions, archives and stored rows", .hangGuard)
struct HostileFileTests {
    @Test("a billion-laughs YAML document fails fast with a clear error")
    func billionLaughs() throws {
        var yaml = "a0: &a0 [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n"
        for level in 1...9 {
            let previous = "*a\(level - 1)"
            yaml += "a\(level): &a\(level) [\(Array(repeating: previous, count: 10).joined(separator: ", "))]\n"
        }
        yaml += "Boom:\n  path: x\n  headers: *a9\n"
        let error = #expect(throws: APIError.self) { try APIDefinitions(data: Data(yaml.utf8), format: .yaml) }
        #expect(error?.code == .invalidDefinition)
        #expect(error?.message.contains("maximumDefinitionNodes") == true)
    }

    @Test("aliases nested inside aliases cannot build a value deeper than the depth limit")
    func aliasDepth() throws {
        var yaml = "a0: &a0 " + String(repeating: "[", count: 400) + String(repeating: "]", count: 400) + "\n"
        for level in 1...5 {
            yaml += "a\(level): &a\(level) " + String(repeating: "[", count: 400) + "*a\(level - 1)" + String(repeating: "]", count: 400) + "\n"
        }
        let error = #expect(throws: APIError.self) { try APIDefinitions(data: Data(yaml.utf8), format: .yaml) }
        #expect(error?.message.contains("deeper than") == true)
    }

    @Test("YAML nested 100,000 deep")
    func deepYAML() {
        let yaml = "A:\n  path: " + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "\n"
        let error = #expect(throws: APIError.self) { try APIDefinitions(data: Data(yaml.utf8), format: .yaml) }
        #expect(error?.code == .invalidDefinition)
    }

    @Test("YAML's base-60 integers that overflow are text, not a trap (found by the definitions fuzzer)")
    func sexagesimalOverflow() throws {
        for value in ["6444444444444444444:40", "1:1:1:1:1:1:1:1:1:1:1:1", "-9223372036854775807:59"] {
            let definitions = try APIDefinitions(data: Data("A:\n  path: a\n  parameters:\n    n: \(value)\n".utf8), format: .yaml)
            #expect(definitions["A"]?.parameters?["n"] == .string(value))
        }
        let fuzzed = Data([0x44, 0x46, 0x4F, 0x78, 0x65, 0x3A, 0x20] + Array("6444444444444444444:40".utf8))
        #expect(throws: APIError.self) { try APIDefinitions(data: fuzzed, format: .yaml) }
        // An ordinary YAML integer is still a number.
        let plain = try APIDefinitions(data: Data("A:\n  path: a\n  parameters:\n    n: 90\n".utf8), format: .yaml)
        #expect(plain["A"]?.parameters?["n"] == .int(90))
    }

    @Test("JSON definitions nested 100,000 deep, and past a lower limit")
    func deepJSON() {
        let json = "{\"A\": {\"path\": " + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "}}"
        let error = #expect(throws: APIError.self) { try APIDefinitions(data: Data(json.utf8), format: .json) }
        #expect(error?.code == .invalidDefinition)
        let shallow = "{\"A\": {\"path\": \"a\", \"headers\": {\"X\": \"1\"}, \"extra\": [[[[[[]]]]]]}}"
        #expect(throws: APIError.self) {
            try APIDefinitions(data: Data(shallow.utf8), format: .json, limits: .init { $0.maximumJSONDepth = 4 })
        }
    }

    @Test("an XML property list nested 100,000 deep")
    func deepXMLPropertyList() {
        let plist = "<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>A</key>"
            + String(repeating: "<array>", count: 100_000) + String(repeating: "</array>", count: 100_000) + "</dict></plist>"
        let error = #expect(throws: APIError.self) { try APIDefinitions(data: Data(plist.utf8), format: .plist) }
        #expect(error?.message.contains("deeper than") == true)
    }

    @Test("a binary property list nested 100,000 deep")
    func deepBinaryPropertyList() {
        let error = #expect(throws: APIError.self) {
            try APIDefinitions(data: Self.binaryPropertyListOfArrays(depth: 100_000), format: .plist)
        }
        #expect(error?.message.contains("deeper than") == true)
        // The walk reads a normal list as Foundation does.
        #expect(!PropertyListDepth.exceeds(Self.binaryPropertyListOfArrays(depth: 10), limit: 11))
        #expect(PropertyListDepth.exceeds(Self.binaryPropertyListOfArrays(depth: 10), limit: 9))
    }

    @Test("a binary property list whose dictionary claims 2^62 entries is malformed, not an overflow")
    func hugeBinaryCount() {
        func be64(_ value: Int) -> [UInt8] { (0..<8).reversed().map { UInt8((value >> ($0 * 8)) & 0xFF) } }
        // Object 0: a dictionary (0xDF) whose count follows as an 8-byte integer (0x13): 2^62.
        var bytes = Array("bplist00".utf8) + [0xDF, 0x13] + be64(1 << 62)
        let tableOffset = bytes.count
        bytes += [8]  // object 0 starts right after the header
        bytes += [0, 0, 0, 0, 0, 0, 1, 4] + be64(1) + be64(0) + be64(tableOffset)
        #expect(!PropertyListDepth.exceeds(Data(bytes), limit: 4), "malformed lists are left to Foundation's reader")
        #expect(throws: APIError.self) { try APIDefinitions(data: Data(bytes), format: .plist) }
    }

    /// `bplist00` with `depth` arrays, object i naming object i+1 `references` times (1 to 14):
    /// with one, arrays nested `depth` deep; with two, a file of a few bytes per level that stands
    /// for 2^depth - 1 values once walked.
    static func binaryPropertyListOfArrays(depth: Int, references: Int = 1) -> Data {
        func be(_ value: Int, bytes count: Int) -> [UInt8] { (0..<count).reversed().map { UInt8((value >> ($0 * 8)) & 0xFF) } }
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for index in 0..<depth {
            offsets.append(bytes.count)
            if index == depth - 1 {
                bytes.append(0xA0)
            } else {
                bytes.append(0xA0 | UInt8(references))
                for _ in 0..<references { bytes += be(index + 1, bytes: 4) }
            }
        }
        let tableOffset = bytes.count
        for offset in offsets { bytes += be(offset, bytes: 4) }
        bytes += [0, 0, 0, 0, 0, 0, 4, 4] + be(depth, bytes: 8) + be(0, bytes: 8) + be(tableOffset, bytes: 8)
        return Data(bytes)
    }

    @Test("a HAR entry whose status HTTPTypes cannot hold is a clear error")
    func harStatus() {
        let har = #"{"log":{"version":"1.2","creator":{"name":"x","version":"1"},"entries":[{"startedDateTime":"2026-01-01T00:00:00Z","time":1,"request":{"method":"GET","url":"http://127.0.0.1/x","httpVersion":"HTTP/1.1","headers":[],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0},"response":{"status":5000,"statusText":"","httpVersion":"HTTP/1.1","headers":[],"cookies":[],"content":{"size":0,"mimeType":"text/plain"},"redirectURL":"","headersSize":-1,"bodySize":0},"cache":{},"timings":{"blocked":-1,"dns":-1,"connect":-1,"send":0,"wait":1,"receive":0,"ssl":-1}}]}}"#
        let error = #expect(throws: APIError.self) { try HARReplay(data: Data(har.utf8)) }
        #expect(error?.message.contains("5000") == true, "\(error?.message ?? "")")
    }

    @Test("a mock with an impossible status is an error, not a trap")
    func mockStatus() async {
        let client = APIClient(configuration: .init { $0.mocks = Mocks(realRequests: false) { _ in .data(Data(), status: 1234) } })
        let error = await apiError { _ = try await client.send(.get("http://127.0.0.1/x")) }
        #expect(error?.message.contains("1234") == true)
    }

    @Test("damaged cache rows are errors (or misses), never GRDB's trapping reads")
    func damagedCacheRows() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-rows-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let storage = SQLiteCacheStorage(directory: folder)
        let entry = CachedResponse(
            url: "http://127.0.0.1/x", partition: "", method: "GET", varyingHeaders: [:], status: 200, headers: [.cacheControl: "max-age=3600"], body: Data("ok".utf8),
            requestTime: Date(), responseTime: Date())
        try await storage.store(entry)
        #expect(try await storage.entries(url: entry.url, partition: "", method: "GET").count == 1)
        // Tamper with the file as an attacker or a disk error could: NULL and text where numbers belong.
        try await editSQLite(folder.appendingPathComponent("callsign-cache.sqlite"), "UPDATE cached_response SET status = 'two hundred', request_time = 'soon'")
        await #expect(throws: (any Error).self) { try await storage.entries(url: entry.url, partition: "", method: "GET") }
        let client = APIClient(configuration: .init {
            $0.cache = HTTPCache(storage: storage)
            $0.mocks = Mocks(realRequests: false) { _ in .json(["fresh": true]) }
        })
        try await editSQLite(folder.appendingPathComponent("callsign-cache.sqlite"), "UPDATE cached_response SET status = 200, request_time = response_time")
        #expect(try await client.send(.get(entry.url)).source != .network)
        // A status HTTPTypes cannot hold is never served.
        try await editSQLite(folder.appendingPathComponent("callsign-cache.sqlite"), "UPDATE cached_response SET status = 70000")
        #expect(try await client.send(.get(entry.url)).source == .network)
    }
}

/// Every file a user or an app names is read through one bounded door (`FileReader`): a link to
/// `/dev/zero` — a file without end — fails with a clear error after at most its limit.
@Suite("Hostile files: every named file is read within a bound", .hangGuard)
struct BoundedFileTests {
    /// A link named `name` to `/dev/zero`, in a fresh folder.
    private func endless(_ name: String) throws -> URL {
        let link = Scratch.folder().appendingPathComponent(name)
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "/dev/zero")
        return link
    }

    @Test("definitions, OpenAPI-capable definitions files, HAR archives, cookie files and PEM files past their bound")
    func endlessFiles() async throws {
        try await onOwnThread {
            var limits = Limits.default
            limits.maximumDocumentSize = 64 * 1024
            let definitions = #expect(throws: APIError.self) { try APIDefinitions(contentsOf: try endless("api.json"), limits: limits) }
            #expect(definitions?.code == .invalidDefinition)
            #expect(definitions?.message.contains("larger than 65536 bytes") == true, "\(String(describing: definitions))")

            let archive = #expect(throws: APIError.self) { try HARReplay(contentsOf: try endless("session.har")) }
            #expect(archive?.code == .invalidDefinition)
            #expect(archive?.message.contains("larger than \(HARReplay.maximumFileSize) bytes") == true)

            let cookies = #expect(throws: APIError.self) { try CookieJar(fileURL: try endless("cookies.json")) }
            #expect(cookies?.code == .storage)
            #expect(cookies?.message.contains("larger than") == true)

            let pem = #expect(throws: APIError.self) { try TLSCertificate.load(pemFile: try endless("roots.pem")) }
            #expect(pem?.code == .invalidRequest)
            #expect(pem?.message.contains("larger than") == true)

            let table = #expect(throws: APIError.self) { try MessageOverrides.read(try endless("Localizable.strings")) }
            #expect(table?.message.contains("larger than") == true)
        }
    }

    @Test("a mock's file is read up to the client's response body limit")
    func endlessMockFile() async throws {
        let link = try endless("answer.json")
        let client = APIClient(configuration: .init {
            $0.limits.maximumResponseBodySize = 32 * 1024
            $0.mocks = Mocks(realRequests: false) { _ in .file(link.path) }
        })
        let error = await apiError { _ = try await client.get("http://127.0.0.1:9/anything").send() }
        #expect(error?.code == .responseTooLarge)
        #expect(error?.message.contains("32768") == true, "\(String(describing: error))")
    }
}
