import Foundation

/// A request body written to a private temporary file as it is made, for a transport that can
/// send a file but cannot pull from a Swift async sequence (`URLSession`): a multipart form with
/// files, a FIFO or an app's stream is streamed twice — into the file, then from it — and never
/// held whole in memory.
///
/// The file is created owner-only with `O_EXCL | O_NOFOLLOW` through the one file writer, and
/// removed by ``remove()`` once the request is sent (the transport's open descriptor keeps
/// reading a removed file, as POSIX promises).
struct SpooledBody: Sendable {
    /// Where the bytes are.
    let url: URL

    /// Writes every chunk of `body` to a new private file in `directory`.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/encoding``) when the body cannot be read, and
    ///   ``APIError/Code/storage`` when the file cannot be written; the file is removed.
    static func write(_ body: TransportBody, in directory: URL) async throws(APIError) -> SpooledBody {
        let url = directory.appendingPathComponent(".callsign-upload-\(UUID().uuidString)")
        guard let writer = try FileWriter.createPrivate(url) else {
            throw APIError(.storage, localized: "a temporary file for the request body could not be created at \(url.path)")
        }
        let spooled = SpooledBody(url: url)
        do throws(APIError) {
            let chunks = try body.chunks()
            do {
                for try await chunk in chunks { try writer.write(chunk) }
            } catch let error as APIError {
                throw error
            } catch {
                throw APIError(.encoding, localized: "the request body could not be read: \(error)", underlyingError: error)
            }
            try writer.close()
        } catch {
            spooled.remove()
            throw error
        }
        return spooled
    }

    /// Removes the file; nothing when it is gone already.
    func remove() {
        try? FileWriter.removePrivate(url)
    }
}
