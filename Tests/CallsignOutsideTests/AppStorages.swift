// Storages as an app outside the package would write them: `import Callsign`, public API only.
// Their rows hold header lists the way Callsign's own storages do (StoredFields), so a damaged
// row is read through the same bounds.
import Callsign
import Foundation
import HTTPTypes

/// A cache storage kept in rows, as a database-backed one would be: header fields are a
/// `StoredFields` column, least recently used rows go first past the byte budget.
actor AppCacheStorage: HTTPCacheStorage {
    struct Row {
        var url: String
        var partition: String
        var method: String
        var variant: String
        var varyingHeaders: [String: String]
        var status: Int
        var headers: Data
        var body: Data
        var requestTime: Date
        var responseTime: Date
        var size: Int
        var lastUse: UInt64
    }

    let byteBudget: Int
    private(set) var rows: [Row] = []
    private var tick: UInt64 = 0
    private let key = Data((0..<32).map { _ in UInt8.random(in: 0...255) })

    init(byteBudget: Int) {
        self.byteBudget = byteBudget
    }

    func partitionKey() -> Data { key }

    func entries(url: String, partition: String, method: String) -> [CachedResponse] {
        tick += 1
        var found: [CachedResponse] = []
        for index in rows.indices where rows[index].url == url && rows[index].partition == partition && rows[index].method == method {
            rows[index].lastUse = tick
            let row = rows[index]
            // A row whose header column cannot be read is a miss, never a trap.
            guard let headers = try? StoredFields.decode(row.headers) else { continue }
            found.append(
                CachedResponse(
                    url: row.url, partition: row.partition, method: row.method, varyingHeaders: row.varyingHeaders, status: row.status,
                    headers: headers, body: row.body, requestTime: row.requestTime, responseTime: row.responseTime))
        }
        return found.sorted { $0.responseTime > $1.responseTime }
    }

    func store(_ entry: CachedResponse) {
        guard entry.size <= byteBudget else { return }
        tick += 1
        rows.removeAll { $0.url == entry.url && $0.partition == entry.partition && $0.method == entry.method && $0.variant == entry.variant }
        rows.append(
            Row(
                url: entry.url, partition: entry.partition, method: entry.method, variant: entry.variant, varyingHeaders: entry.varyingHeaders,
                status: entry.status, headers: StoredFields.encode(entry.headers), body: entry.body, requestTime: entry.requestTime,
                responseTime: entry.responseTime, size: entry.size, lastUse: tick))
        var total = rows.reduce(0) { $0 + $1.size }
        rows.sort { $0.lastUse < $1.lastUse }
        while total > byteBudget, !rows.isEmpty { total -= rows.removeFirst().size }
    }

    func removeEntries(url: String) { rows.removeAll { $0.url == url } }

    func removeEntries(partition: String) { rows.removeAll { $0.partition == partition } }

    func removeAll() { rows = [] }

    /// Overwrites every row's header column, as a damaged file would.
    func damageHeaders(with bytes: Data) {
        for index in rows.indices { rows[index].headers = bytes }
    }
}

/// An offline queue kept in rows: header fields are a `StoredFields` column, and every row is
/// read through `QueuedRequest.reading(storedRow:)`, so a damaged one is quarantined.
actor AppQueueStorage: OfflineQueueStorage {
    struct Row {
        var id: Int64
        var request: QueuedRequest
        var headers: Data
        var isDead = false
    }

    private var rows: [Row] = []
    private var nextID: Int64 = 1
    private var claim: (id: Int64, owner: String, until: ContinuousClock.Instant)?

    nonisolated var isDurable: Bool { false }

    func enqueue(_ request: QueuedRequest) -> QueuedRequest {
        var request = request
        request.id = nextID
        nextID += 1
        rows.append(Row(id: request.id, request: request, headers: StoredFields.encode(request.headers)))
        return request
    }

    private func read(_ row: Row) -> QueuedRequest {
        QueuedRequest.reading(storedRow: row.id) {
            var request = row.request
            request.headers = try StoredFields.decodeHeaders(row.headers)
            return request
        }
    }

    func claimNext(lease: Duration, owner: String) -> QueuedRequest? {
        let now = ContinuousClock.now
        if let claim, claim.until > now, rows.contains(where: { $0.id == claim.id && !$0.isDead }) { return nil }
        guard let first = rows.first(where: { !$0.isDead }) else { return nil }
        claim = (first.id, owner, now + lease)
        return read(first)
    }

    private func owns(_ id: Int64, _ owner: String) -> Bool { claim?.id == id && claim?.owner == owner }

    func renewClaim(_ id: Int64, owner: String, lease: Duration) -> Bool {
        guard owns(id, owner) else { return false }
        claim?.until = ContinuousClock.now + lease
        return true
    }

    func complete(_ id: Int64, owner: String) -> Bool {
        guard owns(id, owner) else { return false }
        rows.removeAll { $0.id == id }
        claim = nil
        return true
    }

    func release(_ id: Int64, owner: String, error: String) {
        guard owns(id, owner), let index = rows.firstIndex(where: { $0.id == id }) else { return }
        rows[index].request.attempts += 1
        rows[index].request.lastError = error
        claim = nil
    }

    func moveToDeadLetter(_ id: Int64, owner: String, error: String) {
        guard owns(id, owner), let index = rows.firstIndex(where: { $0.id == id }) else { return }
        rows[index].request.attempts += 1
        rows[index].request.lastError = error
        rows[index].isDead = true
        claim = nil
    }

    func list(_ list: OfflineQueueList) -> [QueuedRequest] {
        rows.filter { $0.isDead == (list == .deadLetter) }.map(read)
    }

    func remove(_ id: Int64) -> Bool {
        let before = rows.count
        rows.removeAll { $0.id == id }
        if claim?.id == id { claim = nil }
        return rows.count < before
    }

    func revive(_ id: Int64) -> Bool {
        guard let index = rows.firstIndex(where: { $0.id == id && $0.isDead }) else { return false }
        rows[index].isDead = false
        rows[index].request.lastError = nil
        return true
    }

    /// Overwrites one row's header column, as a damaged file would.
    func damageHeaders(of id: Int64, with bytes: Data) {
        guard let index = rows.firstIndex(where: { $0.id == id }) else { return }
        rows[index].headers = bytes
    }
}
