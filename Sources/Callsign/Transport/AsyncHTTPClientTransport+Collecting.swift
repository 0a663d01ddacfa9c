#if AsyncHTTPClient && (os(Linux) || os(Android) || os(Windows))
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

// How ``AsyncHTTPClientTransport`` reads a body whole: the request handed to an event loop, and
// the delegate that collects the answer there.

/// A request handed to an event loop to start, and its caller's cancellation: whichever comes
/// first wins. A request cancelled before it started never starts.
final class Submission: Sendable {
    private enum State {
        case waiting
        case started(HTTPClient.Task<CollectingDelegate.Response>)
        case cancelled
    }

    private let state = Mutex(State.waiting)

    /// Starts the request with `execute` unless the caller cancelled first (then `nil`).
    func start(_ execute: () -> HTTPClient.Task<CollectingDelegate.Response>) -> HTTPClient.Task<CollectingDelegate.Response>? {
        state.withLock { state in
            guard case .waiting = state else { return nil }
            let task = execute()
            state = .started(task)
            return task
        }
    }

    /// Cancels the request: now if it started, before it starts otherwise.
    func cancel() {
        let started = state.withLock { state -> HTTPClient.Task<CollectingDelegate.Response>? in
            switch state {
            case .waiting:
                state = .cancelled
                return nil
            case .started(let task):
                return task
            case .cancelled:
                return nil
            }
        }
        started?.cancel()
    }
}

/// Collects a response in memory, failing past a size limit, and notes when each step of the
/// exchange AsyncHTTPClient reports happened (``PhaseTimings``).
final class CollectingDelegate: HTTPClientResponseDelegate, Sendable {
    typealias Response = (head: HTTPResponseHead, body: ByteBuffer, timings: PhaseTimings)

    private struct State {
        var head: HTTPResponseHead?
        var body = ByteBuffer()
        var expected: Int64?
        var timings = PhaseTimings()
    }

    private let limit: Int
    private let progress: (@Sendable (_ received: Int64, _ expected: Int64?) -> Void)?
    /// When the exchange started: every timing is measured from here.
    private let started = ContinuousClock.now
    private let state = Mutex(State())

    init(limit: Int, progress: (@Sendable (_ received: Int64, _ expected: Int64?) -> Void)?) {
        self.limit = limit
        self.progress = progress
    }

    /// The response head, once it has arrived, and the timings so far.
    var arrived: (head: HTTPResponseHead, timings: PhaseTimings)? {
        state.withLock { state in state.head.map { ($0, state.timings) } }
    }

    func didSendRequestHead(task: HTTPClient.Task<Response>, _ head: HTTPRequestHead) {
        // Written once a connection was ready: the name lookup, connect and handshake (or the
        // wait for a pooled connection) are behind it.
        let now = started.duration(to: .now)
        state.withLock { $0.timings.connectionReady = now }
    }

    func didSendRequest(task: HTTPClient.Task<Response>) {
        let now = started.duration(to: .now)
        state.withLock { $0.timings.requestSent = now }
    }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let now = started.duration(to: .now)
        // Conflicting or malformed lengths are refused later, by the client's head check.
        let length = head.headers.first(name: "Content-Length").flatMap { ContentLength.digits($0) }
        state.withLock {
            $0.head = head
            $0.expected = length
            $0.timings.firstByte = now
        }
        if let length, length > limit {
            return task.eventLoop.makeFailedFuture(ResponseBodyStream.tooLarge(limit))
        }
        progress?(0, length)
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let counts = state.withLock { state -> (received: Int64, expected: Int64?)? in
            guard state.body.readableBytes + buffer.readableBytes <= limit else { return nil }
            if state.body.readableBytes == 0, buffer.readableBytes <= 256 * 1024 {
                // The usual small answer in one part: kept as it came, copied once, into `Data`.
                state.body = buffer
            } else {
                var buffer = buffer
                state.body.writeBuffer(&buffer)
            }
            return (Int64(state.body.readableBytes), state.expected)
        }
        guard let counts else { return task.eventLoop.makeFailedFuture(ResponseBodyStream.tooLarge(limit)) }
        progress?(counts.received, counts.expected)
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response {
        let now = started.duration(to: .now)
        return try state.withLock { state in
            guard let head = state.head else { throw APIError(.invalidResponse, localized: "the response ended without a head") }
            state.timings.complete = now
            return (head, state.body, state.timings)
        }
    }
}

#endif
