#if AsyncHTTPClient && (os(Linux) || os(Android) || os(Windows))
import Foundation
import NIOCore
import NIOHTTP1
import NIOWebSocket
import Synchronization

/// An open WebSocket on a SwiftNIO channel (``WebSocketConnector``): NIO's codec reads the
/// frames and its aggregator joins fragments, within the ``WebSocketUpgrade`` bounds; this
/// hands whole messages to one reader, answers pings, and closes with the right code when the
/// server breaks the protocol.
///
/// Reading is paced by the reader: past a few messages or a megabyte waiting, the channel stops
/// reading from the socket until the reader catches up, so a server that floods costs bounded
/// memory.
final class NIOWebSocketConnection: WebSocketConnection {
    let subprotocol: String?
    private let channel: any Channel
    private let shared: Shared
    /// How long a close waits for the server's answer.
    private let closeTimeout: Duration

    private init(channel: any Channel, subprotocol: String?, shared: Shared, closeTimeout: Duration) {
        self.channel = channel
        self.closeTimeout = closeTimeout
        self.subprotocol = subprotocol
        self.shared = shared
    }

    deinit {
        channel.close(promise: nil)
    }

    /// Adds the aggregator, the unfinished-message clock and the bridge to an upgraded
    /// channel's pipeline (on its event loop).
    static func install(on channel: any Channel, upgrade: WebSocketUpgrade, response: HTTPResponseHead) throws -> NIOWebSocketConnection {
        let shared = Shared()
        let operations = channel.pipeline.syncOperations
        try operations.addHandler(UnfinishedMessageClock(limit: upgrade.maximumMessageDuration))
        try operations.addHandler(
            NIOWebSocketFrameAggregator(
                minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: Self.maximumFragments,
                maxAccumulatedFrameSize: upgrade.maximumMessageSize))
        try operations.addHandler(Bridge(shared: shared, upgrade: upgrade))
        return NIOWebSocketConnection(
            channel: channel, subprotocol: response.headers["Sec-WebSocket-Protocol"].first, shared: shared, closeTimeout: upgrade.closeTimeout)
    }

    /// The most fragments one message may come in.
    static let maximumFragments = 4_096

    var closeReason: WebSocketClose? { shared.state.withLock { $0.closeReason } }

    func receive() async throws -> WebSocketMessage? {
        while true {
            try Task.checkCancellation()
            let step = shared.state.withLock { $0.take() }
            switch step {
            case .message(let message, let resumeReading):
                if resumeReading { channel.read() }
                return message
            case .failed(let failure):
                throw failure
            case .closed:
                return nil
            case .wait:
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                        let now = shared.state.withLock { state -> Bool in
                            guard state.isIdle, !Task.isCancelled else { return true }
                            state.reader = waiter
                            return false
                        }
                        if now { waiter.resume() }
                    }
                } onCancel: {
                    shared.state.withLock { $0.takeReader() }?.resume()
                }
            }
        }
    }

    func send(_ message: WebSocketMessage) async throws {
        if let closed = shared.state.withLock({ $0.sendRefusal }) { throw closed }
        var buffer = channel.allocator.buffer(capacity: message.count)
        let opcode: WebSocketOpcode
        switch message {
        case .text(let text):
            buffer.writeString(text)
            opcode = .text
        case .binary(let data):
            buffer.writeBytes(data)
            opcode = .binary
        }
        do {
            try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: opcode, maskKey: .random(), data: buffer)).get()
        } catch {
            throw shared.state.withLock { $0.sendRefusal } ?? APIError(.transport, localized: "the WebSocket connection broke while a message was sent", underlyingError: error)
        }
    }

    func ping() async throws {
        let id = shared.state.withLock { $0.nextPing() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (pong: CheckedContinuation<Void, any Error>) in
                let outcome = shared.state.withLock { state -> Result<Void, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if let refusal = state.sendRefusal { return .failure(refusal) }
                    // The reader is behind and reading from the socket waits for it: what the
                    // server sent is waiting here, and its pong would wait behind it.
                    if state.readsHeld { return .success(()) }
                    state.pongWaiters[id] = pong
                    return nil
                }
                if let outcome {
                    pong.resume(with: outcome)
                    return
                }
                var payload = channel.allocator.buffer(capacity: 8)
                payload.writeInteger(id)
                channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .ping, maskKey: .random(), data: payload), promise: nil)
            }
        } onCancel: {
            shared.state.withLock { $0.pongWaiters.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }

    func close(_ close: WebSocketClose) async {
        let sends = shared.state.withLock { state -> Bool in
            guard state.closeReason == nil, !state.closeSent else { return false }
            state.closeSent = true
            state.closeReason = close
            return true
        }
        if sends {
            channel.writeAndFlush(Self.closeFrame(close, allocator: channel.allocator), promise: nil)
        }
        // The server answers with its close frame and ends the connection; one that does not
        // is cut off.
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: .milliseconds(closeTimeout.wholeMilliseconds)) { channel.close(promise: nil) }
        try? await channel.closeFuture.get()
    }

    /// A close frame from this side (masked, as a client's frames are).
    static func closeFrame(_ close: WebSocketClose, allocator: ByteBufferAllocator) -> WebSocketFrame {
        var payload = allocator.buffer(capacity: 2 + 123)
        let code = close.code.maySend ? close.code : .normalClosure
        payload.writeInteger(code.rawValue)
        payload.writeString(close.wireReason)
        return WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload)
    }
}

/// What the reader and the channel's handlers share.
extension NIOWebSocketConnection {
    final class Shared: Sendable {
        let state = Mutex(State())
    }

    /// What a reader's turn finds.
    enum Step {
        case message(WebSocketMessage, resumeReading: Bool)
        case failed(APIError)
        case closed
        case wait
    }

    struct State {
        var messages = CircularBuffer<WebSocketMessage>()
        var bufferedBytes = 0
        /// Why the server's messages stopped, when it broke the protocol or a bound.
        var failure: APIError?
        var closeReason: WebSocketClose?
        var closeSent = false
        /// Whether the server's messages are over: its close frame came, the connection closed, or
        /// it broke a rule. A close this side sent does not end them: what the server sent
        /// before its answer is still read.
        var ended = false
        var reader: CheckedContinuation<Void, Never>?
        var pongWaiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var pings: UInt64 = 0
        /// Whether the channel holds its reads until the reader catches up, and whether one is held.
        var readsHeld = false
        var readPending = false

        /// Past these, reading from the socket waits for the reader.
        static let holdBytes = 1 << 20
        static let holdCount = 256

        var isIdle: Bool { messages.isEmpty && failure == nil && !ended }

        mutating func take() -> Step {
            if let message = messages.popFirst() {
                bufferedBytes -= message.count
                var resume = false
                if readsHeld, bufferedBytes < Self.holdBytes / 2, messages.count < Self.holdCount / 2 {
                    readsHeld = false
                    resume = readPending
                    readPending = false
                }
                return .message(message, resumeReading: resume)
            }
            if let failure { return .failed(failure) }
            if ended { return .closed }
            return .wait
        }

        mutating func takeReader() -> CheckedContinuation<Void, Never>? {
            defer { reader = nil }
            return reader
        }

        /// The pings waiting for an answer, removed.
        mutating func takePongWaiters() -> [CheckedContinuation<Void, any Error>] {
            guard !pongWaiters.isEmpty else { return [] }
            defer { pongWaiters = [:] }
            return Array(pongWaiters.values)
        }

        mutating func nextPing() -> UInt64 {
            pings &+= 1
            return pings
        }

        /// Why nothing more can be sent, once the connection is closing or closed.
        var sendRefusal: APIError? {
            guard closeSent || closeReason != nil else { return nil }
            let close = closeReason ?? WebSocketClose(.abnormalClosure)
            return .webSocket(close, "the WebSocket is closed (\(close))")
        }
    }
}
#endif
