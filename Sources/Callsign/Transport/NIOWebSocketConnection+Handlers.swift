#if AsyncHTTPClient && (os(Linux) || os(Android) || os(Windows))
import Foundation
import NIOCore
import NIOWebSocket
import Synchronization

// The channel handlers ``NIOWebSocketConnection/install(on:upgrade:response:)`` adds after NIO's
// frame codec and aggregator: where the protocol's rules and the bounds are enforced, and what
// the server sends is handed to the connection's one reader.

/// Ends a message the server began in fragments and did not finish within its time
/// (``WebSocketUpgrade/maximumMessageDuration``): memory is bounded by the aggregator, time by this.
final class UnfinishedMessageClock: ChannelInboundHandler {
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
final class Bridge: ChannelDuplexHandler {
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
