public import Foundation
import Synchronization

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
