import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Testing

/// Storages an app writes with public API only pass the suites Callsign's own storages pass.
@Suite("Storages written outside the package, with public API only, pass the shipped conformance suites")
struct OutsideStorageTests {
    @Test("an app's cache storage passes every CacheStorageConformance check", arguments: CacheStorageConformance.Check.allCases)
    func cache(check: CacheStorageConformance.Check) async throws {
        try await CacheStorageConformance(byteBudget: 64 << 10) { AppCacheStorage(byteBudget: 64 << 10) }.run(check)
    }

    @Test("an app's queue storage passes every QueueStorageConformance check", arguments: QueueStorageConformance.Check.allCases)
    func queue(check: QueueStorageConformance.Check) async throws {
        try await QueueStorageConformance { AppQueueStorage() }.run(check)
    }

    @Test("StoredFields keeps order and repeated names, and a damaged or oversized column is an APIError, never a trap")
    func storedFields() async throws {
        let storage = AppCacheStorage(byteBudget: 1 << 20)
        var headers = HTTPFields()
        headers.append(HTTPField(name: .contentType, value: "text/plain"))
        headers.append(HTTPField(name: .cacheControl, value: "max-age=60"))
        headers.append(HTTPField(name: .cacheControl, value: "public"))
        let entry = CachedResponse(
            url: "http://127.0.0.1/a", partition: "", method: "GET", varyingHeaders: [:], status: 200, headers: headers, body: Data("a".utf8),
            requestTime: Date(), responseTime: Date())
        await storage.store(entry)
        let back = await storage.entries(url: entry.url, partition: "", method: "GET").first?.headers
        #expect(back.map { $0.map { "\($0.name.rawName): \($0.value)" } } == ["Content-Type: text/plain", "Cache-Control: max-age=60", "Cache-Control: public"])

        let damaged = [Data("not json".utf8), Data("[[\"a\"],{}]".utf8), Data(repeating: 0x20, count: StoredFields.maximumBytes + 1)]
        for bytes in damaged {
            #expect(throws: APIError.self) { try StoredFields.decode(bytes) }
            await storage.damageHeaders(with: bytes)
            #expect(await storage.entries(url: entry.url, partition: "", method: "GET").isEmpty, "a damaged row is a miss")
        }
        let tooMany = StoredFields.encode(Headers((0..<1_000).map { Headers.Field(name: "X-\($0)", value: "v") }))
        #expect(throws: APIError.self) { try StoredFields.decodeHeaders(tooMany) }
    }

    @Test("a queue row whose header column is damaged is listed as quarantined with its id; the others are read whole")
    func damagedQueueRow() async throws {
        let queue = AppQueueStorage()
        let first = await queue.enqueue(QueuedRequest(method: "POST", url: "http://127.0.0.1:1/a", headers: ["X-Order": "1"]))
        let second = await queue.enqueue(QueuedRequest(method: "POST", url: "http://127.0.0.1:1/b", headers: ["X-Order": "2"]))
        await queue.damageHeaders(of: first.id, with: Data("{".utf8))
        let listed = await queue.list(.pending)
        #expect(listed.map(\.id) == [first.id, second.id])
        #expect(listed[0].quarantineReason != nil)
        #expect(listed[1].quarantineReason == nil && listed[1].headers["X-Order"] == "2")
    }

    @Test("this target's sources use no @testable import: what they reach is public API")
    func publicOnly() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil).filter { $0.pathExtension == "swift" }
        #expect(files.count >= 2)
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            let imports = text.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("@testable") }
            #expect(imports.isEmpty, "\(file.lastPathComponent)")
        }
    }
}
