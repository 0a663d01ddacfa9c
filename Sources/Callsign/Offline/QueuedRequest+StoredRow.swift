import Foundation
import HTTPTypes

extension QueuedRequest {
    /// The one door for a stored offline-queue row: every storage reads its rows through it.
    ///
    /// A row is outside data: a file or a database that another program, a person or a damaged
    /// disk may have changed. `columns` reads the row's cells (which only the storage knows
    /// how to do) and may throw; the request it builds is then checked against bounds every
    /// storage shares — an HTTP method token, an absolute http(s) URL no longer than a request
    /// head may be, a body within ``Limits/maximumRequestBodySize``, short names and a
    /// non-negative attempt count. A row that fails any of it is not an error for the whole
    /// queue: it comes back as a placeholder with its `id` and a ``quarantineReason``, so the
    /// rest of the queue lists and replays.
    ///
    /// ```swift
    /// let request = QueuedRequest.reading(storedRow: id) {
    ///     QueuedRequest(id: id, method: try row.text("method"), url: try row.text("url"), headers: try headers(row))
    /// }
    /// if let reason = request.quarantineReason { print("#\(request.id) cannot be read: \(reason)") }
    /// ```
    /// - Parameters:
    ///   - id: the row's id, read on its own (a primary key, always there).
    ///   - limits: the bounds. Default ``Limits/default``.
    ///   - columns: builds the request from the row's cells.
    public static func reading(storedRow id: Int64, limits: Limits = .default, _ columns: () throws -> QueuedRequest) -> QueuedRequest {
        do {
            var request = try columns()
            try check(request, limits: limits)
            request.id = id
            request.quarantineReason = nil
            // The last error is a note for people, written by Callsign: shortened, never a reason to refuse.
            if let error = request.lastError, error.utf8.count > maximumNoteSize {
                request.lastError = String(decoding: error.utf8.prefix(maximumNoteSize), as: UTF8.self) + "…"
            }
            return request
        } catch {
            let reason = (error as? APIError)?.message ?? String(describing: error)
            var placeholder = QueuedRequest(id: id, method: "", url: "", headers: Headers())
            // A driver's description may quote the row at length: a line is enough to act on.
            placeholder.quarantineReason =
                reason.utf8.count > maximumNoteSize ? String(decoding: reason.utf8.prefix(maximumNoteSize), as: UTF8.self) + "…" : reason
            return placeholder
        }
    }

    /// The longest note kept from a row (its last error, a quarantine reason), in bytes.
    static let maximumNoteSize = 4096

    /// The bounds a request read back from storage must keep to be sent.
    private static func check(_ request: QueuedRequest, limits: Limits) throws(APIError) {
        guard !request.method.isEmpty, request.method.utf8.count <= 64, HTTPRequest.Method(request.method) != nil else {
            throw APIError(.storage, localized: "the stored method is not an HTTP method")
        }
        guard request.url.utf8.count <= limits.maximumRequestHeadSize else {
            throw APIError(.storage, localized: "the stored URL is longer than \(limits.maximumRequestHeadSize) bytes (Limits.maximumRequestHeadSize)")
        }
        guard let url = URL(string: request.url), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            url.host?.isEmpty == false
        else {
            throw APIError(.storage, localized: "the stored URL is not an absolute http(s) URL")
        }
        if let body = request.body, body.count > limits.maximumRequestBodySize {
            throw APIError(
                .storage, localized: "the stored body is larger than \(limits.maximumRequestBodySize) bytes (Limits.maximumRequestBodySize)")
        }
        for (name, text) in [("api_name", request.apiName), ("tag", request.tag), ("ordering_key", request.orderingKey)] {
            if let text, text.utf8.count > limits.maximumRequestHeadSize {
                throw APIError(.storage, localized: "the stored \(name) is longer than \(limits.maximumRequestHeadSize) bytes")
            }
        }
        guard request.attempts >= 0 else { throw APIError(.storage, localized: "the stored attempt count is negative") }
    }
}

extension OfflineQueueStorage {
    /// Sets aside a claimed request whose stored row cannot be read: it moves to the dead-letter
    /// list with its reason, unsent, and the replay goes on (see ``QueuedRequest/quarantineReason``).
    func quarantine(_ entry: QueuedRequest, owner: String) async throws -> APIError {
        let failure = APIError(
            .storage,
            localized: "the queued request #\(entry.id) cannot be read from the queue (\(entry.quarantineReason ?? "")); it was moved to the dead-letter list unsent")
        try await moveToDeadLetter(entry.id, owner: owner, error: failure.message)
        return failure
    }
}
