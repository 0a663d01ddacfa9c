public import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes of a request body, as a transport sends them.
///
/// A body is either *replayable* — in memory, a file, or a factory that makes a fresh stream
/// each time — so that redirects, retries and logging can send or read it again, or a *one-shot*
/// stream, which Callsign never sends twice (a 307 redirect or a retry that would need it again
/// fails with an ``APIError`` instead).
///
/// ```swift
/// let body = TransportBody.data(Data("hello".utf8))
/// let upload = TransportBody.file(URL(fileURLWithPath: "/tmp/log.txt"))
/// let generated = TransportBody.factory { AsyncStream { $0.yield(Data("x".utf8)); $0.finish() } }
/// let live = TransportBody.stream(microphoneChunks)        // one-shot
/// ```
public struct TransportBody: Sendable {
    private enum Storage: Sendable {
        case data(Data)
        case file(URL, report: (@Sendable (Int64) -> Void)?, limit: Int)
        case factory(@Sendable () -> ResponseBodyStream, length: Int?)
        case oneShot(OneShot, length: Int?)
    }

    private let storage: Storage

    /// A body from bytes in memory.
    public static func data(_ data: Data) -> TransportBody { TransportBody(storage: .data(data)) }

    /// A body read from a file each time it is sent.
    ///
    /// A regular file goes out with its size as the length, and exactly that many bytes are
    /// sent (a file that changes while it is sent fails the call). Anything else — a FIFO, a
    /// device, a `/proc` file, a shell's `<(command)` — has no length to know in advance: it is
    /// streamed (chunked transfer coding) until its end, at most
    /// ``Limits/maximumRequestBodySize`` bytes, and sent only once (never replayed by a retry or
    /// a 307 redirect).
    public static func file(_ url: URL) -> TransportBody {
        TransportBody(storage: .file(url, report: nil, limit: Limits.default.maximumRequestBodySize))
    }

    /// A replayable body: `makeChunks` is called for every send and must return the same bytes.
    public static func factory<Chunks: AsyncSequence & Sendable>(
        length: Int? = nil, _ makeChunks: @escaping @Sendable () -> Chunks
    ) -> TransportBody where Chunks.Element == Data {
        TransportBody(storage: .factory({ ResponseBodyStream(makeChunks()) }, length: length))
    }

    /// A one-shot body: the chunks are read once and never replayed.
    public static func stream<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, length: Int? = nil) -> TransportBody
    where Chunks.Element == Data {
        TransportBody(storage: .oneShot(OneShot(ResponseBodyStream(chunks)), length: length))
    }

    /// The length in bytes, when known in advance.
    public var count: Int? {
        switch storage {
        case .data(let data): data.count
        case .file(let url, _, _): if case .regular(let size)? = try? BodyFile.kind(of: url) { size } else { nil }
        case .factory(_, let length), .oneShot(_, let length): length
        }
    }

    /// Whether the body can be sent more than once (for a redirect, a retry or a log).
    public var isReplayable: Bool {
        switch storage {
        case .oneShot: return false
        // A FIFO or a process's output gives its bytes once.
        case .file(let url, _, _): return (try? BodyFile.kind(of: url)) != .unknownLength
        case .data, .factory: return true
        }
    }

    /// The whole body in memory.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/encoding``) when a file cannot be read, or when a
    ///   one-shot stream was already read.
    public func collect() async throws(APIError) -> Data {
        switch storage {
        case .data(let data):
            return data
        case .file(let url, _, let limit):
            return try BodyFile.readAll(url, limit: limit)
        case .factory(let make, _):
            return try await Self.drain(make())
        case .oneShot(let box, _):
            guard let chunks = box.take() else {
                throw APIError(.encoding, localized: "the one-shot body stream was already sent once and cannot be sent again")
            }
            return try await Self.drain(chunks)
        }
    }

    /// The bytes as a stream of chunks, for transports that send as they read: a file is read
    /// 256 KiB at a time, never whole.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/encoding``) when a one-shot stream was already read.
    public func chunks() throws(APIError) -> ResponseBodyStream {
        switch storage {
        case .data(let data):
            return ResponseBodyStream(data: data)
        case .file(let url, let report, let limit):
            guard let report else { return ResponseBodyStream(FileChunks(url: url, limit: limit)) }
            return ResponseBodyStream(CountingChunks(base: TransportBody(storage: .file(url, report: nil, limit: limit)), report: report))
        case .factory(let make, _):
            return make()
        case .oneShot(let box, _):
            guard let chunks = box.take() else {
                throw APIError(.encoding, localized: "the one-shot body stream was already sent once and cannot be sent again")
            }
            return chunks
        }
    }

    /// The same bytes, reporting how many have been handed to the transport as they go.
    func reportingProgress(_ report: @escaping @Sendable (Int64) -> Void) -> TransportBody {
        switch storage {
        case .data(let data):
            // Handed over in slices, each told as it is taken; a small body goes whole.
            guard data.count > FileChunks.chunkSize else { return self }
            return TransportBody(storage: .factory({ ResponseBodyStream(CountingChunks(slicing: data, report: report)) }, length: data.count))
        case .file(let url, let earlier, let limit):
            // A reporter given before (the transfer stage's) is told too, first.
            guard let earlier else { return TransportBody(storage: .file(url, report: report, limit: limit)) }
            let both: @Sendable (Int64) -> Void = { sent in
                earlier(sent)
                report(sent)
            }
            return TransportBody(storage: .file(url, report: both, limit: limit))
        case .factory:
            let source = self
            return TransportBody(storage: .factory({ ResponseBodyStream(CountingChunks(base: source, report: report)) }, length: count))
        case .oneShot(let box, let length):
            guard let chunks = box.take() else { return self }
            let counted = CountingChunks(base: TransportBody(storage: .oneShot(OneShot(chunks), length: length)), report: report)
            return TransportBody(storage: .oneShot(OneShot(ResponseBodyStream(counted)), length: length))
        }
    }

    /// The bytes, when the body is in memory; `nil` for a file or a stream, whose bytes are read
    /// only as they are sent (a ``WireMiddleware`` that must see them reads ``chunks()`` into a
    /// replayable body of its own).
    ///
    /// ```swift
    /// let digest = request.body?.inMemoryData.map { Data(SHA256.hash(data: $0)) }
    /// ```
    public var inMemoryData: Data? {
        if case .data(let data) = storage { return data }
        return nil
    }

    private static func drain(_ chunks: ResponseBodyStream) async throws(APIError) -> Data {
        do {
            var result = Data()
            for try await chunk in chunks { result.append(chunk) }
            return result
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(.encoding, localized: "the body stream failed: \(error)", underlyingError: error)
        }
    }

    /// The file's URL, if the body is a regular file of known size: a transport may hand it to a
    /// reader of its own. A FIFO, a device or a `/proc` file is not offered: only ``chunks()``
    /// and ``collect()`` read it, within the limit.
    var fileURL: URL? {
        if case .file(let url, _, _) = storage, case .regular? = try? BodyFile.kind(of: url) { return url }
        return nil
    }

    /// The same body, with `limit` as the most bytes read from a file of unknown length — the
    /// client's ``Limits/maximumRequestBodySize``.
    package func limitingUnknownLength(to limit: Int) -> TransportBody {
        guard case .file(let url, let report, _) = storage else { return self }
        return TransportBody(storage: .file(url, report: report, limit: limit))
    }

    /// Hands out its stream exactly once.
    final class OneShot: Sendable {
        private let chunks: Mutex<ResponseBodyStream?>
        init(_ chunks: ResponseBodyStream) { self.chunks = Mutex(chunks) }
        func take() -> ResponseBodyStream? { chunks.withLock { stream in defer { stream = nil }; return stream } }
    }
}

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

/// A body's chunks, counting the bytes handed on.
struct CountingChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let base: TransportBody
    let report: @Sendable (Int64) -> Void
    /// For a body in memory: the size of the slices it is handed over in.
    var sliceSize: Int? = nil

    init(base: TransportBody, report: @escaping @Sendable (Int64) -> Void) {
        self.base = base
        self.report = report
    }

    /// An in-memory body in slices of `FileChunks.chunkSize` bytes, a file's read size.
    init(slicing data: Data, report: @escaping @Sendable (Int64) -> Void) {
        self.init(base: .data(data), report: report)
        sliceSize = FileChunks.chunkSize
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var source: ResponseBodyStream.AsyncIterator?
        let base: TransportBody
        let report: @Sendable (Int64) -> Void
        var total: Int64 = 0

        let sliceSize: Int?

        mutating func next() async throws -> Data? {
            let chunk: Data
            if let sliceSize, let data = base.inMemoryData {
                let start = data.startIndex + Int(total)
                guard start < data.endIndex else { return nil }
                chunk = data[start..<Swift.min(data.endIndex, start + sliceSize)]
            } else {
                if source == nil { source = try base.chunks().makeAsyncIterator() }
                guard let next = try await source?.next() else { return nil }
                chunk = next
            }
            total += Int64(chunk.count)
            report(total)
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: nil, base: base, report: report, sliceSize: sliceSize) }
}
