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
/// let body = HTTPBody.data(Data("hello".utf8))
/// let upload = HTTPBody.file(URL(fileURLWithPath: "/tmp/log.txt"))
/// let generated = HTTPBody.factory { AsyncStream { $0.yield(Data("x".utf8)); $0.finish() } }
/// let live = HTTPBody.stream(microphoneChunks)        // one-shot
/// ```
public struct HTTPBody: Sendable {
    private enum Storage: Sendable {
        case data(Data)
        case file(URL)
        case factory(@Sendable () -> ResponseBodyStream, length: Int?)
        case oneShot(OneShot, length: Int?)
    }

    private let storage: Storage

    /// A body from bytes in memory.
    public static func data(_ data: Data) -> HTTPBody { HTTPBody(storage: .data(data)) }

    /// A body read from a file each time it is sent.
    public static func file(_ url: URL) -> HTTPBody { HTTPBody(storage: .file(url)) }

    /// A replayable body: `makeChunks` is called for every send and must return the same bytes.
    public static func factory<Chunks: AsyncSequence & Sendable>(
        length: Int? = nil, _ makeChunks: @escaping @Sendable () -> Chunks
    ) -> HTTPBody where Chunks.Element == Data {
        HTTPBody(storage: .factory({ ResponseBodyStream(makeChunks()) }, length: length))
    }

    /// A one-shot body: the chunks are read once and never replayed.
    public static func stream<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, length: Int? = nil) -> HTTPBody
    where Chunks.Element == Data {
        HTTPBody(storage: .oneShot(OneShot(ResponseBodyStream(chunks)), length: length))
    }

    /// The length in bytes, when known in advance.
    public var count: Int? {
        switch storage {
        case .data(let data): data.count
        case .file(let url): (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? nil
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
        case .file(let url):
            do {
                return try Data(contentsOf: url, options: .mappedIfSafe)
            } catch {
                throw APIError(.encoding, "the body file \"\(url.lastPathComponent)\" cannot be read", underlyingError: error)
            }
        case .factory(let make, _):
            return try await Self.drain(make())
        case .oneShot(let box, _):
            guard let chunks = box.take() else {
                throw APIError(.encoding, "the one-shot body stream was already sent once and cannot be sent again")
            }
            return try await Self.drain(chunks)
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
            throw APIError(.encoding, "the body stream failed: \(error)", underlyingError: error)
        }
    }

    /// Hands out its stream exactly once.
    final class OneShot: Sendable {
        private let chunks: Mutex<ResponseBodyStream?>
        init(_ chunks: ResponseBodyStream) { self.chunks = Mutex(chunks) }
        func take() -> ResponseBodyStream? { chunks.withLock { stream in defer { stream = nil }; return stream } }
    }
}
