import Callsign
import Foundation
import PostgresNIO

/// Rows of the outbox as ``QueuedRequest``s, read with bounds: a row is outside data.
enum PostgresRows {
    /// The columns both outbox tables share, in the order the queries list them.
    static let columns =
        "id, enqueued_at, ordering_key, api_name, method, url, headers, body, needs_authorization, tag, attempts, last_error, idempotency_key"

    /// The most header fields a stored row may hold, and the longest header text.
    static let maximumHeaderFields = 500
    static let maximumHeaderText = 1 << 20

    static func encode(_ headers: Headers) throws -> String {
        let pairs = headers.fields.map { [$0.name, $0.value] }
        return String(decoding: try JSONEncoder().encode(pairs), as: UTF8.self)
    }

    static func headers(_ text: String) throws(APIError) -> Headers {
        guard text.utf8.count <= maximumHeaderText, let data = text.data(using: .utf8),
            let pairs = try? JSONDecoder().decode([[String]].self, from: data), pairs.count <= maximumHeaderFields,
            pairs.allSatisfy({ $0.count == 2 })
        else {
            throw APIError(.storage, localized: "a stored request's headers are not the list of name and value pairs Callsign writes")
        }
        return Headers(pairs.map { Headers.Field(name: $0[0], value: $0[1]) })
    }

    static func request(_ row: PostgresRow) throws -> QueuedRequest {
        let cells = row.makeRandomAccess()
        let key = try cells["ordering_key"].decode(String.self)
        return QueuedRequest(
            id: try cells["id"].decode(Int64.self), enqueuedAt: try cells["enqueued_at"].decode(Date.self),
            apiName: try cells["api_name"].decode(String?.self), method: try cells["method"].decode(String.self),
            url: try cells["url"].decode(String.self), headers: try headers(try cells["headers"].decode(String.self)),
            body: try cells["body"].decode(Data?.self), needsAuthorization: try cells["needs_authorization"].decode(Bool.self),
            tag: try cells["tag"].decode(String?.self), attempts: try cells["attempts"].decode(Int.self),
            lastError: try cells["last_error"].decode(String?.self), orderingKey: key.isEmpty ? nil : key)
    }

    /// A lease in whole milliseconds, at least 1, at most a day: never an overflow in SQL.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 1 }
        guard seconds < 86_400 else { return 86_400_000 }
        return max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
