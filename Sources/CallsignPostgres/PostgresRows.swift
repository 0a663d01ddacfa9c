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

    static func request(_ row: PostgresRow) throws -> QueuedRequest {
        let cells = row.makeRandomAccess()
        let key = try cells["ordering_key"].decode(String.self)
        return QueuedRequest(
            id: try cells["id"].decode(Int64.self), enqueuedAt: try cells["enqueued_at"].decode(Date.self),
            apiName: try cells["api_name"].decode(String?.self), method: try cells["method"].decode(String.self),
            url: try cells["url"].decode(String.self), headers: try StoredFields.decodeHeaders(try cells["headers"].decode(Data.self)),
            body: try cells["body"].decode(Data?.self), needsAuthorization: try cells["needs_authorization"].decode(Bool.self),
            tag: try cells["tag"].decode(String?.self), attempts: try cells["attempts"].decode(Int.self),
            lastError: try cells["last_error"].decode(String?.self), orderingKey: key.isEmpty ? nil : key)
    }

    /// A lease in whole milliseconds, at least 1, at most a day: never an overflow in SQL.
    static func milliseconds(_ duration: Duration) -> Int64 {
        min(max(1, duration.wholeMilliseconds), 86_400_000)
    }
}
