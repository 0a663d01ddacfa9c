import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one door through which Callsign reads a file as a request body: ``TransportBody/file(_:)``,
/// the file parts of ``MultipartFormData``, and so the command line's `--body @FILE` and
/// `-F name=@FILE`.
///
/// `stat` alone cannot be trusted for a length: a FIFO, a device, a `/proc` file or a shell's
/// `<(command)` reports 0 or nothing useful. So a **regular file** with a size is sent as exactly
/// that many bytes — a file that ends early or keeps growing while it is sent fails the call
/// rather than sending a body that contradicts its `Content-Length` — and **anything else** is
/// read to its end with no length announced (chunked transfer coding), bounded by
/// ``Limits/maximumRequestBodySize``: past it, an ``APIError`` (``APIError/Code/encoding``) that
/// names the file and the limit. Reads that can block (a FIFO waiting for its writer) run on
/// Dispatch's threads, never on the cooperative pool.
enum BodyFile {
    /// What a body file is, for sending.
    enum Kind: Equatable, Sendable {
        /// A regular file of this many bytes (more than zero).
        case regular(size: Int)
        /// Anything whose length cannot be known in advance: a FIFO, a character device, a
        /// socket, or a regular file that reports size 0 (`/proc`, `/sys` and empty files).
        case unknownLength
    }

    /// What `url` is, following symbolic links (`/dev/fd/63` from `<(command)` is a link to a pipe).
    ///
    /// - Throws: ``APIError`` (``APIError/Code/encoding``) when it does not exist or is a folder.
    static func kind(of url: URL) throws(APIError) -> Kind {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            throw unreadable(url, POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO))
        }
        switch info.st_mode & S_IFMT {
        case S_IFDIR:
            throw APIError(.encoding, localized: "the body file \"\(url.lastPathComponent)\" is a folder")
        case S_IFREG where info.st_size > 0:
            return .regular(size: Int(clamping: info.st_size))
        default:
            return .unknownLength
        }
    }

    /// The whole file in memory, by the rules above.
    static func readAll(_ url: URL, limit: Int) throws(APIError) -> Data {
        let reader = try Reader(url: url, limit: limit)
        var result = Data()
        while let chunk = try reader.next() { result.append(chunk) }
        return result
    }

    static func unreadable(_ url: URL, _ error: (any Error)?) -> APIError {
        APIError(.encoding, localized: "the body file \"\(url.lastPathComponent)\" cannot be read", underlyingError: error)
    }

    /// Reads one body file in chunks: exactly its size, or up to the limit.
    final class Reader {
        let url: URL
        let kind: Kind
        private let limit: Int
        private let handle: FileHandle
        private var total = 0
        private var done = false

        /// Opens the file. For a FIFO this waits for a writer: call it off the cooperative pool.
        init(url: URL, limit: Int) throws(APIError) {
            self.url = url
            self.limit = max(0, limit)
            kind = try BodyFile.kind(of: url)
            do {
                handle = try FileHandle(forReadingFrom: url)
            } catch {
                throw BodyFile.unreadable(url, error)
            }
        }

        deinit { try? handle.close() }

        /// The next chunk, at most 256 KiB; `nil` at the end.
        func next() throws(APIError) -> Data? {
            guard !done else { return nil }
            switch kind {
            case .regular(let size):
                let wanted = min(FileChunks.chunkSize, size - total)
                guard wanted > 0 else {
                    done = true
                    // One byte more would mean the file grew after its size was sent.
                    guard try read(1).isEmpty else {
                        throw APIError(
                            .encoding,
                            localized: "the body file \"\(url.lastPathComponent)\" grew while it was being sent (it had \(size) bytes)")
                    }
                    return nil
                }
                let chunk = try read(wanted)
                guard !chunk.isEmpty else {
                    done = true
                    throw APIError(
                        .encoding,
                        localized: "the body file \"\(url.lastPathComponent)\" ended after \(total) of its \(size) bytes (it changed while it was being sent)")
                }
                total += chunk.count
                return chunk
            case .unknownLength:
                let chunk = try read(FileChunks.chunkSize)
                guard !chunk.isEmpty else {
                    done = true
                    return nil
                }
                total += chunk.count
                guard total <= limit else {
                    done = true
                    throw APIError(
                        .encoding,
                        localized: "the body file \"\(url.lastPathComponent)\" is not a regular file and gave more than \(limit) bytes (Limits.maximumRequestBodySize); send a regular file or standard input, or raise the limit")
                }
                return chunk
            }
        }

        private func read(_ count: Int) throws(APIError) -> Data {
            do {
                return try handle.read(upToCount: count) ?? Data()
            } catch {
                throw BodyFile.unreadable(url, error)
            }
        }
    }
}

/// A file's bytes in chunks, read as they are asked for, through ``BodyFile/Reader``. A file of
/// unknown length (a FIFO may block until its writer writes) is opened and read on Dispatch's
/// threads, so a slow writer never holds a thread of the cooperative pool.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let url: URL
    var limit: Int = Limits.default.maximumRequestBodySize
    static let chunkSize = 256 * 1024

    static func unreadable(_ url: URL, _ error: (any Error)?) -> APIError { BodyFile.unreadable(url, error) }

    struct AsyncIterator: AsyncIteratorProtocol {
        let url: URL
        let limit: Int
        var reader: ReaderBox?

        mutating func next() async throws -> Data? {
            if reader == nil {
                let (url, limit) = (url, limit)
                if try BodyFile.kind(of: url) == .unknownLength {
                    reader = try await ReaderBox.offPool { () throws(APIError) -> ReaderBox in ReaderBox(try BodyFile.Reader(url: url, limit: limit)) }
                } else {
                    reader = ReaderBox(try BodyFile.Reader(url: url, limit: limit))
                }
            }
            guard let reader else { return nil }
            guard reader.reader.kind == .unknownLength else { return try reader.reader.next() }
            return try await ReaderBox.offPool { () throws(APIError) -> Data? in try reader.reader.next() }
        }
    }

    /// Hands a reader to a Dispatch thread and back: one iterator uses it at a time.
    final class ReaderBox: @unchecked Sendable {
        let reader: BodyFile.Reader
        init(_ reader: BodyFile.Reader) { self.reader = reader }

        static func offPool<T>(_ work: @escaping @Sendable () throws(APIError) -> T) async throws -> T {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<UncheckedBox<T>, any Error>) in
                DispatchQueue.global().async {
                    do {
                        continuation.resume(returning: UncheckedBox(value: try work()))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }.value
        }
    }

    /// A value carried across the Dispatch hop above, used by one task at a time.
    struct UncheckedBox<T>: @unchecked Sendable {
        let value: T
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(url: url, limit: limit) }
}
