@testable import Callsign
import Foundation
import HTTPTypes

/// Arbitrary bytes as a stored offline-queue row, read through the door every storage uses
/// (``QueuedRequest/reading(storedRow:limits:_:)``), with the header cell through ``StoredFields``
/// as SQLite and PostgreSQL read it.
///
/// The bytes are the row's cells separated by 0x1F (the ASCII unit separator): method, URL,
/// headers, body, API name, tag, ordering key, last error, attempts (decimal text) and the
/// enqueue time (decimal seconds). A cell that is not UTF-8 where text belongs fails as a
/// driver's decode would. Whatever the bytes, the row comes back — never a trap — either whole
/// and sendable (method token, absolute http(s) URL, attempts not negative, a replay call
/// that builds), or as a placeholder with its id and a bounded reason.
func fuzzQueueRow(_ data: Data) {
    let cells = data.split(separator: 0x1F, maxSplits: 9, omittingEmptySubsequences: false).map { Data($0) }
    func cell(_ index: Int) -> Data? { index < cells.count ? cells[index] : nil }
    func text(_ index: Int) throws -> String? {
        guard let bytes = cell(index) else { return nil }
        guard let text = String(bytes: bytes, encoding: .utf8) else { throw APIError(.storage, "cell \(index) is not UTF-8") }
        return text
    }
    func required(_ index: Int) throws -> String {
        guard let value = try text(index) else { throw APIError(.storage, "cell \(index) is missing") }
        return value
    }
    let id: Int64 = 42
    let row = QueuedRequest.reading(storedRow: id) {
        let seconds = try text(9).flatMap(Double.init) ?? 0
        return QueuedRequest(
            id: id, enqueuedAt: Date(timeIntervalSince1970: seconds.isFinite ? seconds : 0), apiName: try text(4),
            method: try required(0), url: try required(1), headers: try StoredFields.decodeHeaders(cell(2) ?? Data()), body: cell(3),
            tag: try text(5), attempts: try text(8).map { Int($0) ?? -1 } ?? 0, lastError: try text(7), orderingKey: try text(6))
    }
    precondition(row.id == id, "the row lost its id")
    if let reason = row.quarantineReason {
        precondition(row.method.isEmpty && row.url.isEmpty && row.body == nil, "a quarantined row carries what it cannot send")
        precondition(reason.utf8.count <= QueuedRequest.maximumNoteSize + 6, "an unbounded reason")
        return
    }
    precondition(HTTPRequest.Method(row.method) != nil, "a row with no HTTP method passed")
    let scheme = URL(string: row.url)?.scheme?.lowercased()
    precondition(scheme == "http" || scheme == "https", "a row with no http(s) URL passed")
    precondition(row.attempts >= 0, "a negative attempt count passed")
    precondition(row.headers.fields.count <= Limits.default.maximumHeaderFieldCount)
    precondition((row.lastError?.utf8.count ?? 0) <= QueuedRequest.maximumNoteSize + 6, "an unbounded last error")
    _ = APIClient.replayCall(row)
}
