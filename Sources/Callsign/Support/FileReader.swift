package import Foundation

/// The one way Callsign reads a file that a user or an app names — definitions, an OpenAPI
/// document, a HAR archive, a mock's body, a cookie file, a strings table, the command line's
/// files: at most `limit` bytes, whatever the file is.
///
/// One byte more than the limit is read to tell a larger file, which then fails without being
/// read whole — a FIFO, `/dev/zero` or a growing log included — so a hostile or mistaken path
/// costs at most `limit + 1` bytes of memory. Links are followed: the path is the user's own.
/// (Files Callsign writes itself and reads back are read by `FileWriter.readPrivate(_:limit:)`,
/// which also refuses links and other users' files.)
///
/// ```swift
/// let data = try FileReader.read(url, limit: limits.maximumDocumentSize) { error in
///     APIError(.invalidDefinition, localized: "the definitions file \"\(url.path)\" cannot be read", underlyingError: error)
/// } tooLarge: {
///     APIError(.invalidDefinition, localized: "the definitions file \"\(url.path)\" is larger than \($0) bytes")
/// }
/// ```
package enum FileReader {
    /// The bytes of `url`, at most `limit`; `unreadable` makes the error for a file that cannot be
    /// opened or read (missing, a folder, no permission), `tooLarge` the one for a larger file
    /// (it is handed the limit).
    package static func read(
        _ url: URL, limit: Int, unreadable: (any Error) -> APIError, tooLarge: (Int) -> APIError
    ) throws(APIError) -> Data {
        let limit = max(0, limit)
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            data = try handle.read(upToCount: limit == Int.max ? limit : limit + 1) ?? Data()
        } catch {
            throw unreadable(error)
        }
        guard data.count <= limit else { throw tooLarge(limit) }
        return data
    }

    /// A definitions file or an OpenAPI document: at most ``Limits/maximumDocumentSize`` bytes.
    package static func readDocument(_ url: URL, limits: Limits, unreadable: (any Error) -> APIError) throws(APIError) -> Data {
        try read(url, limit: limits.maximumDocumentSize, unreadable: unreadable) { limit in
            APIError(
                .invalidDefinition,
                localized: "the file \"\(url.lastPathComponent)\" is larger than \(limit) bytes (Limits.maximumDocumentSize)")
        }
    }
}
