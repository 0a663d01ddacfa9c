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
        case file(URL, report: (@Sendable (Int64) -> Void)?)
        case factory(@Sendable () -> ResponseBodyStream, length: Int?)
        case oneShot(OneShot, length: Int?)
    }

    private let storage: Storage

    /// A body from bytes in memory.
    public static func data(_ data: Data) -> TransportBody { TransportBody(storage: .data(data)) }

    /// A body read from a file each time it is sent.
    public static func file(_ url: URL) -> TransportBody { TransportBody(storage: .file(url, report: nil)) }

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
        case .file(let url, _): (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? nil
        case .factory(_, let length), .oneShot(_, let length): length
        }
    }

    /// Whether the body can be sent more than once (for a redirect, a retry or a log).
    public var isReplayable: Bool {
        if case .oneShot = storage { return false }
        return true
    }

    /// The whole body in memory.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/encoding``) when a file cannot be read, or when a
    ///   one-shot stream was already read.
    public func collect() async throws(APIError) -> Data {
        switch storage {
        case .data(let data):
            return data
        case .file(let url, _):
            do {
                return try Data(contentsOf: url, options: .mappedIfSafe)
            } catch {
                throw FileChunks.unreadable(url, error)
            }
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
        case .file(let url, let report):
            guard let report else { return ResponseBodyStream(FileChunks(url: url)) }
            return ResponseBodyStream(CountingChunks(base: .file(url), report: report))
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
        case .data:
            return self
        case .file(let url, _):
            return TransportBody(storage: .file(url, report: report))
        case .factory:
            let source = self
            return TransportBody(storage: .factory({ ResponseBodyStream(CountingChunks(base: source, report: report)) }, length: count))
        case .oneShot(let box, let length):
            guard let chunks = box.take() else { return self }
            let counted = CountingChunks(base: TransportBody(storage: .oneShot(OneShot(chunks), length: length)), report: report)
            return TransportBody(storage: .oneShot(OneShot(ResponseBodyStream(counted)), length: length))
        }
    }

    /// The in-memory bytes, if the body is in memory.
    var inMemoryData: Data? {
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

    /// The file's URL, if the body is a file.
    var fileURL: URL? {
        if case .file(let url, _) = storage { return url }
        return nil
    }

    /// Hands out its stream exactly once.
    final class OneShot: Sendable {
        private let chunks: Mutex<ResponseBodyStream?>
        init(_ chunks: ResponseBodyStream) { self.chunks = Mutex(chunks) }
        func take() -> ResponseBodyStream? { chunks.withLock { stream in defer { stream = nil }; return stream } }
    }
}

/// A file's bytes in chunks, read as they are asked for.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let url: URL
    static let chunkSize = 256 * 1024

    static func unreadable(_ url: URL, _ error: (any Error)?) -> APIError {
        APIError(.encoding, localized: "the body file \"\(url.lastPathComponent)\" cannot be read", underlyingError: error)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let url: URL
        var handle: FileHandle?
        var done = false

        mutating func next() async throws -> Data? {
            guard !done else { return nil }
            if handle == nil {
                do {
                    handle = try FileHandle(forReadingFrom: url)
                } catch {
                    throw FileChunks.unreadable(url, error)
                }
            }
            let chunk: Data?
            do {
                chunk = try handle?.read(upToCount: FileChunks.chunkSize)
            } catch {
                throw FileChunks.unreadable(url, error)
            }
            guard let chunk, !chunk.isEmpty else {
                done = true
                try? handle?.close()
                return nil
            }
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(url: url) }
}

/// A body's chunks, counting the bytes handed on.
struct CountingChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let base: TransportBody
    let report: @Sendable (Int64) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        var source: ResponseBodyStream.AsyncIterator?
        let base: TransportBody
        let report: @Sendable (Int64) -> Void
        var total: Int64 = 0

        mutating func next() async throws -> Data? {
            if source == nil { source = try base.chunks().makeAsyncIterator() }
            guard let chunk = try await source?.next() else { return nil }
            total += Int64(chunk.count)
            report(total)
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: nil, base: base, report: report) }
}
