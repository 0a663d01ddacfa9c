@testable import Callsign
import CallsignSQLite
import CallsignTesting
import Foundation
import Testing

/// A route that accepts every queued request with a 201.
func installInbox(on server: TestServer) {
    server.route("/inbox") { _ in ServerResponse.json(["ok": true], status: 201) }
}

/// Queues `count` POSTs to the inbox, numbered 1… in their bodies; returns their ids.
func enqueueNumbered(_ count: Int, to storage: any OfflineQueueStorage, server: TestServer) async throws -> [Int64] {
    var ids: [Int64] = []
    for number in 1...count {
        let request = QueuedRequest(
            method: "POST", url: server.url("/inbox?n=\(number)").absoluteString, headers: Headers(["Content-Type": "text/plain"]),
            body: Data("\(number)".utf8))
        ids.append(try await storage.enqueue(request).id)
    }
    return ids
}

@Suite("Offline queue rows: one that cannot be read is quarantined, the rest lists and replays", .hangGuard)
struct QueueQuarantineTests {
    @Test("the row door: method, URL, body size, names and attempts are checked; a throwing read becomes a placeholder")
    func door() {
        let good = QueuedRequest(method: "POST", url: "https://api.example.com/x", headers: Headers(), body: Data(count: 10))
        #expect(QueuedRequest.reading(storedRow: 7) { good }.quarantineReason == nil)
        #expect(QueuedRequest.reading(storedRow: 7) { good }.id == 7)
        var cases: [(QueuedRequest, String)] = []
        var request = good
        request.method = "NOT A METHOD"
        cases.append((request, "method"))
        request = good
        request.url = "javascript:alert(1)"
        cases.append((request, "URL"))
        request = good
        request.url = "relative/path"
        cases.append((request, "URL"))
        request = good
        request.url = "https://example.com/" + String(repeating: "a", count: 70_000)
        cases.append((request, "Limits.maximumRequestHeadSize"))
        request = good
        request.attempts = -1
        cases.append((request, "attempt"))
        request = good
        request.tag = String(repeating: "t", count: 70_000)
        cases.append((request, "tag"))
        for (bad, word) in cases {
            let read = QueuedRequest.reading(storedRow: 12) { bad }
            #expect(read.id == 12)
            #expect(read.quarantineReason?.contains(word) == true, "\(word): \(read.quarantineReason ?? "nil")")
            #expect(read.method.isEmpty && read.body == nil)
        }
        let oversized = QueuedRequest.reading(storedRow: 3, limits: Limits { $0.maximumRequestBodySize = 5 }) { good }
        #expect(oversized.quarantineReason?.contains("Limits.maximumRequestBodySize") == true)
        struct Broken: Error {}
        let thrown = QueuedRequest.reading(storedRow: 4) { throw Broken() }
        #expect(thrown.id == 4 && thrown.quarantineReason != nil)
        let huge = QueuedRequest.reading(storedRow: 5) { throw APIError(.storage, String(repeating: "x", count: 100_000)) }
        #expect((huge.quarantineReason?.utf8.count ?? 0) < 5000)
    }

    @Test("SQLite: damaged rows are listed with their ids and reasons, dead-lettered unsent, and the others are delivered")
    func sqlite() async throws {
        try await withServer { server, _ in
            installInbox(on: server)
            let file = Scratch.folder().appendingPathComponent("queue.sqlite")
            let storage = SQLiteOfflineQueue(url: file)
            let client = APIClient(configuration: .init { $0.offline.queue = storage; $0.offline.drain = .manual })
            let ids = try await enqueueNumbered(6, to: storage, server: server)
            // Damaged as a person, another program or a disk could: each a different column.
            try await editSQLite(file, "UPDATE queued_request SET method = 'NOT A METHOD' WHERE id = \(ids[1])")
            try await editSQLite(file, "UPDATE queued_request SET url = 'file:///etc/passwd' WHERE id = \(ids[2])")
            try await editSQLite(file, "UPDATE queued_request SET headers = x'00ff' WHERE id = \(ids[3])")
            try await editSQLite(file, "UPDATE queued_request SET attempts = 'many', enqueued_at = 'yesterday' WHERE id = \(ids[4])")

            let listed = try await client.queuedRequests()
            #expect(listed.map(\.id) == ids)
            #expect(listed.filter { $0.quarantineReason != nil }.map(\.id) == Array(ids[1...4]))
            #expect(listed[1].quarantineReason?.contains("method") == true)
            #expect(listed[2].quarantineReason?.contains("URL") == true)
            #expect(listed[4].quarantineReason?.contains("column") == true)

            let report = try await client.replay()
            #expect(report.sent == 2)
            #expect(report.deadLettered == 4)
            #expect(report.remaining == 0)
            #expect(server.requests.filter { $0.rawPath == "/inbox" }.map { String(decoding: $0.body, as: UTF8.self) } == ["1", "6"])
            let quarantined = report.items.filter { $0.request.quarantineReason != nil }
            #expect(quarantined.map(\.request.id) == Array(ids[1...4]))
            for item in quarantined {
                guard case .deadLettered(let error) = item.outcome else {
                    Issue.record("#\(item.request.id) was not dead-lettered")
                    continue
                }
                #expect(error.message.contains("#\(item.request.id)"))
            }
            let dead = try await client.queuedRequests(.deadLetter)
            #expect(dead.map(\.id) == Array(ids[1...4]))
            #expect(dead.allSatisfy { $0.quarantineReason != nil })
            // A person can drop one.
            #expect(try await client.removeQueuedRequest(ids[1]))
            #expect(try await client.queuedRequests(.deadLetter).count == 3)
        }
    }

    @Test("callsign queue list and replay name the quarantined row and its reason, escaped for the terminal")
    func commandLine() async throws {
        try CLIRunner.requireBuilt()
        try await withServer { server, _ in
            installInbox(on: server)
            let file = Scratch.folder().appendingPathComponent("queue.sqlite")
            let ids = try await enqueueNumbered(3, to: SQLiteOfflineQueue(url: file), server: server)
            try await editSQLite(file, "UPDATE queued_request SET method = 'BAD' || char(27) || '[2J' WHERE id = \(ids[1])")
            // Outside text that is printed: a last error holding an escape sequence.
            try await editSQLite(file, "UPDATE queued_request SET attempts = 1, last_error = 'busy' || char(27) || '[2J' WHERE id = \(ids[2])")
            let list = try await CLIRunner.run(["queue", "list", "--queue", file.path])
            #expect(list.status == 0, "\(list.standardError)")
            #expect(list.standardOutput.contains("#\(ids[1])"))
            #expect(list.standardOutput.contains("cannot be read"))
            #expect(list.standardOutput.contains("#\(ids[2])  POST"))
            let replay = try await CLIRunner.run(["queue", "replay", "--queue", file.path])
            #expect(replay.standardOutput.contains("dead-letter  #\(ids[1])"), "\(replay.standardOutput)")
            #expect(replay.standardOutput.contains("2 sent, 1 dead-lettered, 0 still queued"), "\(replay.standardOutput)")
            #expect(!replay.standardOutput.contains("\u{1B}") && !list.standardOutput.contains("\u{1B}"))
        }
    }
}
