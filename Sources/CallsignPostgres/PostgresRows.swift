import Callsign
import Foundation
import PostgresNIO

/// Rows of the outbox as ``QueuedRequest``s, read with bounds: a row is outside data.
enum PostgresRows {
    /// The columns both outbox tables share, in the order the queries list them.
    static let columns =
        "id, enqueued_at, ordering_key, api_name, method, url, headers, body, needs_authorization, tag, attempts, last_error, idempotency_key"

    /// Header fields as every Callsign storage writes them (``StoredFields``).
    static func encode(_ headers: Headers) -> Data { StoredFields.encode(headers) }

    /// A row through the queue's one door (``QueuedRequest/reading(storedRow:limits:_:)``): a
    /// row edited or damaged in the database comes back as a placeholder with its id and the
    /// reason, never as an error for the whole queue nor a trap (a missing column included).
    static func request(_ row: PostgresRow) -> QueuedRequest {
        let cells = row.makeRandomAccess()
        let id = (try? cell(cells, "id", as: Int64.self)) ?? 0
        return QueuedRequest.reading(storedRow: id) {
            let key = try cell(cells, "ordering_key", as: String.self)
            return QueuedRequest(
                id: id, enqueuedAt: try cell(cells, "enqueued_at", as: Date.self),
                apiName: try cell(cells, "api_name", as: String?.self), method: try cell(cells, "method", as: String.self),
                url: try cell(cells, "url", as: String.self),
                headers: try StoredFields.decodeHeaders(try cell(cells, "headers", as: Data.self)),
                body: try cell(cells, "body", as: Data?.self), needsAuthorization: try cell(cells, "needs_authorization", as: Bool.self),
                tag: try cell(cells, "tag", as: String?.self), attempts: try cell(cells, "attempts", as: Int.self),
                lastError: try cell(cells, "last_error", as: String?.self), orderingKey: key.isEmpty ? nil : key)
        }
    }

    /// One cell, or an error that names its column; a missing column is an error too (the
    /// driver's subscript would trap).
    static func cell<Value: PostgresDecodable>(_ cells: PostgresRandomAccessRow, _ column: String, as type: Value.Type) throws -> Value {
        guard cells.contains(column) else { throw APIError(.storage, localized: "the row has no column \(column)") }
        do {
            return try cells[column].decode(Value.self)
        } catch {
            throw APIError(.storage, localized: "the column \(column) does not hold a value of its type")
        }
    }

    /// A lease in whole milliseconds, at least 1, at most a day: never an overflow in SQL.
    static func milliseconds(_ duration: Duration) -> Int64 {
        min(max(1, duration.wholeMilliseconds), 86_400_000)
    }
}
