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

/// Ends a message the server began in fragments and did not finish within its time
/// (``WebSocketUpgrade/maximumMessageDuration``): memory is bounded by the aggregator, time by this.
private final class UnfinishedMessageClock: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    private let limit: Duration
    private var timer: Scheduled<Void>?

    /// The error the bridge reports.
    struct Unfinished: Error {
        var limit: Duration
    }

    init(limit: Duration) { self.limit = limit }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = Self.unwrapInboundIn(data)
        switch frame.opcode {
        case .text where !frame.fin, .binary where !frame.fin:
            if timer == nil {
                let limit = self.limit
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                timer = context.eventLoop.scheduleTask(in: .milliseconds(max(1, limit.wholeMilliseconds))) {
                    loopBound.value.fireErrorCaught(Unfinished(limit: limit))
                }
            }
        case .continuation where frame.fin:
            timer?.cancel()
            timer = nil
        default:
            break
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }
}

/// The last handler of an upgraded channel: whole messages to the reader, pongs to pings,
/// close frames answered, and the protocol's rules enforced.
private final class Bridge: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame
    private let shared: NIOWebSocketConnection.Shared
    private let upgrade: WebSocketUpgrade

    init(shared: NIOWebSocketConnection.Shared, upgrade: WebSocketUpgrade) {
        self.shared = shared
        self.upgrade = upgrade
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = Self.unwrapInboundIn(data)
        // Any frame shows the server alive: it answers the pings waiting, as their pong would.
        for waiter in shared.state.withLock({ $0.takePongWaiters() }) { waiter.resume() }
        // No extension was agreed, and a server never masks (RFC 6455 §5.1, §5.2).
        guard !frame.rsv1, !frame.rsv2, !frame.rsv3, frame.maskKey == nil else {
            return failing(context: context, .protocolError, "the server sent a frame with reserved bits set, or masked")
        }
        switch frame.opcode {
        case .text:
            guard let text = String(validating: frame.data.readableBytesView, as: UTF8.self) else {
                return failing(context: context, .invalidData, "the server sent a text message that is not UTF-8")
            }
            deliver(.text(text))
        case .binary:
            deliver(.binary(Data(frame.data.readableBytesView)))
        case .ping:
            let closing = shared.state.withLock { $0.closeSent }
            if !closing {
                context.writeAndFlush(
                    Self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.data)), promise: nil)
            }
        case .pong:
            break  // answered above, with every other frame
        case .connectionClose:
            closed(by: frame, context: context)
        default:
            failing(context: context, .protocolError, "the server sent a frame of an unknown kind")
        }
    }

    /// The server's close: echoed (when this side has not sent one), and the connection ended.
    private func closed(by frame: WebSocketFrame, context: ChannelHandlerContext) {
        var payload = frame.data
        let close: WebSocketClose
        if let code = payload.readInteger(as: UInt16.self) {
            let reason = payload.readableBytes <= 123 ? String(validating: payload.readableBytesView, as: UTF8.self) : nil
            close = WebSocketClose(WebSocketClose.Code(code), reason: reason ?? "")
        } else {
            close = WebSocketClose(.noStatusReceived)
        }
        end(context: context, recording: close, answer: WebSocketClose(close.code.maySend ? close.code : .normalClosure))
    }

    /// Ends the server's messages with `close` (kept unless one was recorded first) and the
    /// failure, if any; sends `answer` when this side has sent no close yet; then closes the
    /// connection. The reader is told at once, after what came before.
    private func end(context: ChannelHandlerContext, recording close: WebSocketClose, answer: WebSocketClose, failure: APIError? = nil) {
        let (sends, reader) = shared.state.withLock { state in
            if state.failure == nil { state.failure = failure }
            let sends = !state.closeSent
            state.closeSent = true
            state.ended = true
            if state.closeReason == nil { state.closeReason = close }
            return (sends, state.takeReader())
        }
        reader?.resume()
        guard sends else { return context.close(promise: nil) }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let frame = NIOWebSocketConnection.closeFrame(answer, allocator: context.channel.allocator)
        context.writeAndFlush(Self.wrapOutboundOut(frame)).whenComplete { _ in loopBound.value.close(promise: nil) }
    }

    private func deliver(_ message: WebSocketMessage) {
        let reader = shared.state.withLock { state -> CheckedContinuation<Void, Never>? in
            // Once the server broke a rule, what it sends is not read; after this side's close,
            // what it sent before its answer still is.
            guard state.failure == nil else { return nil }
            state.messages.append(message)
            state.bufferedBytes += message.count
            if state.bufferedBytes >= NIOWebSocketConnection.State.holdBytes || state.messages.count >= NIOWebSocketConnection.State.holdCount {
                state.readsHeld = true
            }
            return state.takeReader()
        }
        reader?.resume()
    }

    /// Ends the connection because the server broke a rule: a close frame with `code`, and the
    /// reader told why once it has read what came before.
    private func failing(context: ChannelHandlerContext, _ code: WebSocketClose.Code, _ message: LocalizedMessage, errorCode: APIError.Code = .webSocketClosed) {
        let close = WebSocketClose(code)
        end(context: context, recording: close, answer: close, failure: .webSocket(close, message, code: errorCode))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case NIOWebSocketFrameAggregator.Error.accumulatedFrameSizeIsTooLarge:
            failing(
                context: context, .messageTooBig, "the server sent a WebSocket message larger than \(upgrade.maximumMessageSize) bytes",
                errorCode: .responseTooLarge)
        case NIOWebSocketFrameAggregator.Error.tooManyFragments:
            failing(
                context: context, .messageTooBig, "the server sent a WebSocket message in more than \(NIOWebSocketConnection.maximumFragments) fragments",
                errorCode: .responseTooLarge)
        case is NIOWebSocketFrameAggregator.Error:
            failing(context: context, .protocolError, "the server sent the fragments of a WebSocket message out of order")
        case NIOWebSocketError.invalidFrameLength:
            failing(
                context: context, .messageTooBig, "the server sent a WebSocket frame larger than \(upgrade.maximumFrameSize) bytes",
                errorCode: .responseTooLarge)
        case is NIOWebSocketError:
            failing(context: context, .protocolError, "the server sent a malformed WebSocket control frame")
        case let unfinished as UnfinishedMessageClock.Unfinished:
            failing(context: context, .policyViolation, "the server began a WebSocket message and did not finish it within \(unfinished.limit)")
        default:
            // The connection broke: the reader sees it closed, abnormally unless a close came first.
            context.close(promise: nil)
        }
    }

    /// A connection can close while it is being upgraded, before this handler joins the
    /// pipeline (a server that sends one message and drops): its end is told then too — on the
    /// loop's next turn, after the upgrader has handed on the frames that came with the `101`.
    func handlerAdded(context: ChannelHandlerContext) {
        let shared = self.shared
        let loop = context.eventLoop
        context.channel.closeFuture.whenComplete { _ in loop.execute { Self.connectionEnded(shared) } }
    }

    func channelInactive(context: ChannelHandlerContext) {
        Self.connectionEnded(shared)
        context.fireChannelInactive()
    }

    /// The connection is gone: the reader told (after the messages that came), pings failed.
    /// Told once or more; the first time counts.
    private static func connectionEnded(_ shared: NIOWebSocketConnection.Shared) {
        let (reader, pongs) = shared.state.withLock { state in
            if state.closeReason == nil { state.closeReason = WebSocketClose(.abnormalClosure) }
            state.closeSent = true
            state.ended = true
            return (state.takeReader(), state.takePongWaiters())
        }
        reader?.resume()
        let refusal = APIError.webSocket(WebSocketClose(.abnormalClosure), "the WebSocket connection closed before the pong came")
        for pong in pongs { pong.resume(throwing: refusal) }
    }

    /// Holds the channel's reads while the reader has enough waiting.
    func read(context: ChannelHandlerContext) {
        let holds = shared.state.withLock { state -> Bool in
            if state.readsHeld { state.readPending = true }
            return state.readsHeld
        }
        if !holds { context.read() }
    }
}
#endif
