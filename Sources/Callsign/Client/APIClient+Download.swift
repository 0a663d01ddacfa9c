public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension APIClient {
    /// Downloads a response body to a file as it arrives, without holding it in memory.
    ///
    /// The bytes go to a temporary file next to `destination` (readable only by this user), which
    /// replaces `destination` in one atomic rename once the byte count matches the announced
    /// length. Progress is reported on a ``CallTask`` from ``startDownload(_:to:)``. A download
    /// has no per-attempt time limit unless the request sets one; use ``Request/deadline``.
    ///
    /// ```swift
    /// let response = try await client.download(.get("files/archive.zip"), to: URL(fileURLWithPath: "archive.zip"))
    /// print(response.fileURL!.path)
    /// ```
    /// - Throws: ``APIError``; a short body is ``APIError/Code/transport``, and the destination is
    ///   left untouched.
    public func download(_ request: Request, to destination: URL) async throws(APIError) -> Response {
        var request = request
        request.downloadDestination = destination
        return try await perform(request).validate()
    }

    /// Starts a download and returns a handle with its progress (see ``download(_:to:)``).
    public func startDownload(_ request: Request, to destination: URL) -> CallTask {
        var request = request
        request.downloadDestination = destination
        return start(request)
    }
}

/// Writes a body to a file: temporary file, then an atomic rename.
enum FileDownload {
    static func write(_ body: ResponseBodyStream, to destination: URL, expectedLength: Int?, progress: ProgressSink?) async throws {
        let folder = destination.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(".\(destination.lastPathComponent).\(UUID().uuidString).part")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw APIError(.invalidRequest, "cannot create a file in \(folder.path) for the download")
        }
        var keep = false
        defer { if !keep { try? FileManager.default.removeItem(at: temporary) } }
        let handle = try FileHandle(forWritingTo: temporary)
        defer { try? handle.close() }
        let total = expectedLength.map(Int64.init)
        var written: Int64 = 0
        progress?.report(TransferProgress(direction: .download, completedBytes: 0, totalBytes: total))
        for try await chunk in body {
            try handle.write(contentsOf: chunk)
            written += Int64(chunk.count)
            progress?.report(TransferProgress(direction: .download, completedBytes: written, totalBytes: total))
        }
        if let total, written != total {
            throw APIError(.transport, "the download ended after \(written) of \(total) bytes")
        }
        // No fsync: it would cost more than the transfer; the rename is still atomic for readers.
        if total == nil {
            progress?.report(TransferProgress(direction: .download, completedBytes: written, totalBytes: written))
        }
        // rename(2) replaces an existing destination atomically (FileManager.replaceItemAt does not
        // work on every platform's Foundation).
        guard rename(temporary.path, destination.path) == 0 else {
            throw APIError(.invalidRequest, "the download could not be moved to \(destination.path) (error \(errno))")
        }
        keep = true
    }
}
