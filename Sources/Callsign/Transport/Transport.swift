public import Foundation
public import HTTPTypes

/// Sends one HTTP request and returns the response head with a body stream.
///
/// A transport knows nothing of definitions, middlewares or decoding: it gets a fully built
/// `HTTPRequest` (scheme, authority, path and query, header fields) and a body, and must not
/// follow redirects itself. Callsign ships ``AsyncHTTPClientTransport`` (the default on Linux),
/// ``URLSessionTransport`` (the default on Apple platforms, also on Linux), and you can write
/// your own:
///
/// ```swift
/// struct LoggingTransport: Transport {
///     let base: any Transport
///     func send(_ request: HTTPRequest, body: HTTPBody?) async throws -> TransportResponse {
///         print(request.method, request.path ?? "")
///         return try await base.send(request, body: body)
///     }
/// }
/// ```
///
/// A transport must honour task cancellation: when the calling task is cancelled it stops the
/// exchange and throws.
public protocol Transport: Sendable {
    /// Sends the request and returns as soon as the response head has arrived.
    func send(_ request: HTTPRequest, body: HTTPBody?) async throws -> TransportResponse

    /// Releases the transport's resources. Calls after this fail. The default does nothing.
    func shutdown() async throws

    /// Whether the transport itself decodes `gzip`/`deflate` bodies (URLSession does); when it
    /// does, Callsign leaves the body alone. The default is `false`. A client reads it once,
    /// when it is created.
    var decodesContentEncoding: Bool { get }

    /// Where a task that mostly waits on this transport runs best: the threads that do its I/O,
    /// so a response resumes the waiting task without waking another thread. `nil` (the
    /// default) when the transport has no such threads.
    ///
    /// ```swift
    /// try await withTaskExecutorPreference(client.transport.preferredTaskExecutor) {
    ///     for id in ids { _ = try await client.call("User", parameters: ["id": .int(id)]) }
    /// }
    /// ```
    var preferredTaskExecutor: (any TaskExecutor)? { get }
}

extension Transport {
    public func shutdown() async throws {}

    public var decodesContentEncoding: Bool { false }

    public var preferredTaskExecutor: (any TaskExecutor)? { nil }
}

/// A transport that can send a request and read its whole, in-memory body in one step, under one
/// time limit it enforces itself. The client uses it when nobody watches progress and the body
/// goes to memory: no task or timer of Callsign's own per attempt.
///
/// Not public API: the benchmarks reach it through `@_spi(Benchmarks)` to time the pipeline
/// with a transport that costs nothing.
@_spi(Benchmarks)
public protocol CollectingTransport: Transport {
    /// Sends `request` and returns its head and body. Throws ``Deadline/Expired`` when `timeout`
    /// passes, ``ResponseBodyStream/tooLarge(_:)`` past `limit`, and an ``APIError`` with
    /// `responseStarted` set when the connection breaks after the head arrived.
    ///
    /// `progress`, when given, is told the body bytes received so far and the expected total
    /// (`Content-Length`), from the head on, on whatever thread the transport reads on.
    func sendAndCollect(
        _ request: HTTPRequest, body: Data?, limit: Int, timeout: Duration,
        progress: (@Sendable (_ received: Int64, _ expected: Int64?) -> Void)?
    ) async throws -> (HTTPResponse, Data)
}

/// The head of a response and its body, as a transport delivers them.
public struct TransportResponse: Sendable {
    /// Status and header fields.
    public var head: HTTPResponse
    /// The body, read as it arrives.
    public var body: ResponseBodyStream

    /// Creates a response.
    public init(head: HTTPResponse, body: ResponseBodyStream) {
        self.head = head
        self.body = body
    }
}

/// A response body as a sequence of chunks, readable once.
///
/// ```swift
/// for try await chunk in response.body { file.write(chunk) }
/// ```
public struct ResponseBodyStream: AsyncSequence, Sendable {
    public typealias Element = Data
    public typealias Failure = any Error

    private let makeNext: @Sendable () -> NextChunk
    private let collector: (@Sendable (Int) async throws -> Data)?

    /// A function that produces the next chunk, or `nil` at the end.
    public typealias NextChunk = () async throws -> Data?

    /// Wraps any sendable sequence of chunks.
    public init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) where Chunks.Element == Data {
        makeNext = {
            let box = IteratorBox(chunks.makeAsyncIterator())
            return { try await box.next() }
        }
        collector = nil
    }

    /// Wraps a sequence with a faster way of collecting it whole (for example NIO's
    /// `collect(upTo:)`, which avoids a copy per chunk). The collector must throw
    /// ``APIError/Code/responseTooLarge`` past the limit.
    public init<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, collect: @escaping @Sendable (_ limit: Int) async throws -> Data
    ) where Chunks.Element == Data {
        self.init(chunks)
        self = ResponseBodyStream(makeNext: makeNext, collector: collect)
    }

    private init(makeNext: @escaping @Sendable () -> NextChunk, collector: (@Sendable (Int) async throws -> Data)?) {
        self.makeNext = makeNext
        self.collector = collector
    }

    /// A body that is already in memory.
    public init(data: Data) {
        makeNext = {
            let box = IteratorBox([data].filter { !$0.isEmpty }.async.makeAsyncIterator())
            return { try await box.next() }
        }
        collector = { limit in
            guard data.count <= limit else { throw ResponseBodyStream.tooLarge(limit) }
            return data
        }
    }

    /// An empty body.
    public static var empty: ResponseBodyStream { ResponseBodyStream(data: Data()) }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let nextChunk: NextChunk
        public mutating func next() async throws -> Data? { try await nextChunk() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(nextChunk: makeNext()) }

    /// Reads the whole body into memory, failing with ``APIError/Code/responseTooLarge`` as soon
    /// as more than `limit` bytes have arrived, so memory stays bounded.
    public func collect(upTo limit: Int) async throws -> Data {
        if let collector { return try await collector(limit) }
        var result = Data()
        for try await chunk in self {
            guard result.count + chunk.count <= limit else { throw Self.tooLarge(limit) }
            result.append(chunk)
        }
        return result
    }

    static func tooLarge(_ limit: Int) -> APIError {
        APIError(.responseTooLarge, "the response body is larger than the limit of \(limit) bytes")
    }
}

/// Holds an async iterator so a non-mutating closure can advance it. Not `Sendable`: it lives
/// inside the one iterator closure that reads the body.
private final class IteratorBox<Base: AsyncIteratorProtocol> where Base.Element == Data {
    private var base: Base
    init(_ base: Base) { self.base = base }
    func next() async throws -> Data? { try await base.next() }
}

/// A sequence over an array, for in-memory bodies.
struct ArrayAsyncSequence<Element: Sendable>: AsyncSequence, Sendable {
    let elements: [Element]
    struct AsyncIterator: AsyncIteratorProtocol {
        var index = 0
        let elements: [Element]
        mutating func next() async throws -> Element? {
            guard index < elements.count else { return nil }
            defer { index += 1 }
            return elements[index]
        }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(elements: elements) }
}

extension Array where Element: Sendable {
    var async: ArrayAsyncSequence<Element> { ArrayAsyncSequence(elements: self) }
}

extension HTTPRequest {
    /// The full URL text of the request (scheme, authority, path and query).
    var urlString: String {
        "\(scheme ?? "http")://\(authority ?? "")\(path ?? "/")"
    }
}
