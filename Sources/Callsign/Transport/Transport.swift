public import Foundation
public import HTTPTypes

/// Sends one HTTP request and returns the response head with a body stream: the last stage of
/// every call's chain.
///
/// A transport knows nothing of definitions, middlewares or decoding: it gets a fully built
/// ``TransportRequest`` (the wire head, a body, and how the body will be read) and must not
/// follow redirects itself. Callsign ships ``AsyncHTTPClientTransport`` (the default on Linux),
/// ``URLSessionTransport`` (the default on Apple platforms, also on Linux), and you can write
/// your own:
///
/// ```swift
/// struct PrintingTransport: Transport {
///     let base: any Transport
///     func send(_ request: TransportRequest) async throws -> TransportResponse {
///         print(request.head.method, request.head.path ?? "")
///         return try await base.send(request)
///     }
/// }
/// ```
///
/// A transport must honour task cancellation: when the calling task is cancelled it stops the
/// exchange and throws, at once — waiting for the head and reading the body alike. Callsign's
/// time limits (``APIClient/Configuration/Timeouts``) end an attempt by cancelling it, so they
/// hold only as well as the transport lets go; tear the connection down in the background if
/// it takes longer. A body that ends quietly when its reader is cancelled is reported as
/// cancelled, never as complete.
public protocol Transport: Sendable {
    /// Sends the request and returns once the response head has arrived (or, when the request
    /// asks for ``WireRequest/BodyReading/collect(limit:)``, once the whole body has too).
    func send(_ request: TransportRequest) async throws -> TransportResponse

    /// Releases the transport's resources. Calls after this fail. The default does nothing.
    func shutdown() async throws

    /// Whether the transport itself decodes `gzip`/`deflate` bodies (URLSession does); when it
    /// does, Callsign leaves the body alone. The default is `false`. A client reads it once,
    /// when it is created.
    var decodesContentEncoding: Bool { get }

    /// Whether the transport enforces ``WireRequest/attemptDeadline`` itself, throwing an
    /// ``APIError`` with code ``APIError/Code/timedOut`` once it passes (over the head and, for a
    /// collected body, the body too). When `false` (the default), the timeout stage races the
    /// attempt against a timer instead. A client reads it once, when it is created.
    var enforcesAttemptDeadlines: Bool { get }

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

    public var enforcesAttemptDeadlines: Bool { false }

    public var preferredTaskExecutor: (any TaskExecutor)? { nil }
}

/// What a ``Transport`` sends: the request on the wire (``WireRequest``) — one type from the
/// encoding stage to the transport, the name kept for transports written against it.
///
/// ```swift
/// let request = TransportRequest(head: HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:8080", path: "/"))
/// let response = try await transport.send(request)
/// let body = try await response.body.collect(upTo: 1 << 20)
/// ```
public typealias TransportRequest = WireRequest

/// The head of a response and its body, as a transport delivers them: what the wire seam
/// (``WireMiddleware``) returns.
public struct TransportResponse: Sendable {
    /// Status and header fields.
    public var head: HTTPResponse
    /// The body, read as it arrives.
    public var body: ResponseBodyStream
    /// The protocol the response came over, as HAR writes it: `HTTP/1.1` or `HTTP/2`.
    public var httpVersion: String
    /// The request this answers, exactly as it was sent: set by the stage that sent it (the
    /// ``WireStage/transport`` or ``WireStage/mocks`` stage); `nil` from a transport itself.
    public var request: WireRequest?
    /// What the transport measured of the exchange, from when its `send` began: Callsign fills
    /// in ``PhaseTimings/firstByte`` and ``PhaseTimings/complete`` when a transport leaves them out.
    ///
    /// ```swift
    /// var response = TransportResponse(head: head, body: body)
    /// response.timings.firstByte = started.duration(to: .now)
    /// ```
    public var timings = PhaseTimings()
    /// The open WebSocket, when the request asked for one (``WireRequest/webSocket``) and the
    /// server agreed (`101 Switching Protocols`); `nil` otherwise.
    public var webSocket: (any WebSocketConnection)? = nil

    /// Creates a response.
    public init(head: HTTPResponse, body: ResponseBodyStream, httpVersion: String = "HTTP/1.1") {
        self.head = head
        self.body = body
        self.httpVersion = httpVersion
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
    /// The whole body, when it is already in memory.
    let inMemoryData: Data?

    /// A function that produces the next chunk, or `nil` at the end.
    public typealias NextChunk = () async throws -> Data?

    /// Wraps any sendable sequence of chunks.
    public init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) where Chunks.Element == Data {
        makeNext = {
            let box = IteratorBox(chunks.makeAsyncIterator())
            return { try await box.next() }
        }
        inMemoryData = nil
    }

    /// A body that is already in memory.
    public init(data: Data) {
        makeNext = {
            let box = IteratorBox([data].filter { !$0.isEmpty }.async.makeAsyncIterator())
            return { try await box.next() }
        }
        inMemoryData = data
    }

    /// An empty body.
    public static var empty: ResponseBodyStream { ResponseBodyStream(data: Data()) }

    /// A body whose reading fails with `error`: for a transport whose head arrived but whose
    /// body then failed (too large, cut short), so the caller's error keeps status and headers.
    ///
    /// ```swift
    /// return TransportResponse(head: head, body: ResponseBodyStream(failing: error))
    /// ```
    public init(failing error: any Error) {
        makeNext = { { throw error } }
        inMemoryData = nil
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let nextChunk: NextChunk
        public mutating func next() async throws -> Data? { try await nextChunk() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(nextChunk: makeNext()) }

    /// Reads the whole body into memory, failing with ``APIError/Code/responseTooLarge`` as soon
    /// as more than `limit` bytes have arrived, so memory stays bounded.
    public func collect(upTo limit: Int) async throws -> Data {
        if let inMemoryData {
            guard inMemoryData.count <= limit else { throw Self.tooLarge(limit) }
            return inMemoryData
        }
        var result = Data()
        for try await chunk in self {
            guard result.count + chunk.count <= limit else { throw Self.tooLarge(limit) }
            result.append(chunk)
        }
        return result
    }

    /// Why a body broke off after its head arrived, as a transport hands it on in a failing body
    /// (the head is returned, so the caller's error still holds status and headers).
    static func failureAfterHead(_ error: any Error) -> APIError {
        var failure = APIError.wrap(error, request: nil)
        if failure.code == .transport, !(error is APIError) { failure.text = "the connection broke while the body arrived: \(error)" }
        failure.responseStarted = true
        return failure
    }

    package static func tooLarge(_ limit: Int) -> APIError {
        APIError(.responseTooLarge, localized: "the response body is larger than the limit of \(limit) bytes")
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

extension ResponseBodyStream {
    /// The same chunks, each restarting `watch` (the attempt's idle watch, read by the timer of
    /// the timeout stage). A body already in memory is returned as it is.
    ///
    /// An end that comes only because the reading task was cancelled is not the end of the body:
    /// `AsyncThrowingStream` (URLSession's body) and others end quietly on cancellation, and a
    /// cancelled download would otherwise look complete. It throws `CancellationError` instead.
    func watched(by watch: IdleWatch?) -> ResponseBodyStream {
        guard inMemoryData == nil else { return self }
        return ResponseBodyStream(WatchedChunks(base: self, watch: watch))
    }

    /// The same chunks, each awaited under time limits: `idle` from when the reader asks for it,
    /// and the instant `end`. For a body read outside the pipeline (``APIClient/stream(_:)``),
    /// where no attempt's timer runs any more. `failure` turns ``Deadline/Expired`` and
    /// ``Deadline/Idle`` into the caller's error. A body already in memory is returned as it is.
    func timed(
        idle: Duration?, until end: ContinuousClock.Instant?, failure: @escaping @Sendable (any Error) -> any Error
    ) -> ResponseBodyStream {
        guard inMemoryData == nil, idle != nil || end != nil else { return self }
        return ResponseBodyStream(TimedChunks(base: self, idle: idle, end: end, failure: failure))
    }
}

/// See ``ResponseBodyStream/watched(by:)``.
private struct WatchedChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let base: ResponseBodyStream
    let watch: IdleWatch?

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: ResponseBodyStream.AsyncIterator
        let watch: IdleWatch?

        mutating func next() async throws -> Data? {
            guard let chunk = try await base.next() else {
                try Task.checkCancellation()
                return nil
            }
            watch?.touch()
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), watch: watch) }
}

/// See ``ResponseBodyStream/timed(idle:until:failure:)``.
private struct TimedChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let base: ResponseBodyStream
    let idle: Duration?
    let end: ContinuousClock.Instant?
    let failure: @Sendable (any Error) -> any Error

    /// The base iterator, moved into each chunk's race. Safe to share: one chunk is read at a
    /// time — each `next()` awaits its race, both of its tasks included, before it returns, and
    /// an iterator is never advanced by two callers at once.
    final class Source: @unchecked Sendable {
        private var iterator: ResponseBodyStream.AsyncIterator
        init(_ iterator: ResponseBodyStream.AsyncIterator) { self.iterator = iterator }
        func next() async throws -> Data? { try await iterator.next() }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let source: Source
        let sequence: TimedChunks

        mutating func next() async throws -> Data? {
            let source = source
            do {
                let watch = sequence.idle.map { IdleWatch(limit: $0) }
                guard let chunk = try await Deadline.run(until: sequence.end, idle: watch, { try await source.next() }) else {
                    try Task.checkCancellation()
                    return nil
                }
                return chunk
            } catch let error as Deadline.Idle {
                throw sequence.failure(error)
            } catch let error as Deadline.Expired {
                throw sequence.failure(error)
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: Source(base.makeAsyncIterator()), sequence: self) }
}
