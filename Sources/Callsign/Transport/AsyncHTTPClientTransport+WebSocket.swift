#if AsyncHTTPClient && (os(Linux) || os(Android) || os(Windows))
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import NIOWebSocket
import Synchronization

/// Opens WebSockets for ``AsyncHTTPClientTransport``, which has no upgrade of its own: a
/// connection on the same event loops and with the same TLS translation, the handshake by
/// SwiftNIO's HTTP client upgrader and its WebSocket frame codec, fragments joined by its
/// frame aggregator. Callsign adds only the bounds and the hand-over (``NIOWebSocketConnection``).
enum WebSocketConnector {
    /// What the handshake's connection turned into.
    enum Outcome: Sendable {
        /// `101 Switching Protocols`, the accept key checked: the open connection.
        case upgraded(NIOWebSocketConnection, HTTPResponseHead)
        /// Any other answer: its head and the start of its body, once read.
        case refused(EventLoopFuture<RefusedAnswer>)
    }

    /// Sends the handshake of `request` and returns the server's answer: with the open
    /// connection on `101`, as it came otherwise (a 401 goes back up to the authentication stage).
    static func connect(_ request: TransportRequest, upgrade: WebSocketUpgrade, group: any EventLoopGroup) async throws -> TransportResponse {
        let upgrade = bounded(upgrade)
        if let proxy = request.proxy {
            throw APIError.notSent(
                .invalidRequest, "AsyncHTTPClientTransport does not open WebSockets through a proxy (\(proxy)) yet; connect directly (configuration.proxy's bypass)")
        }
        if request.body != nil {
            throw APIError.notSent(.invalidRequest, "a WebSocket handshake carries no body")
        }
        let head = request.head
        guard let authority = head.authority, let scheme = head.scheme?.lowercased() else {
            throw APIError.notSent(.invalidRequest, "the WebSocket request has no server to go to")
        }
        let secure = scheme.hasPrefix("https")
        let unixSocket = URLScheme.isUnixSocket(scheme)
        let host = ConnectionOptions.host(of: authority)
        let sslContext: NIOSSLContext?
        do {
            sslContext = secure ? try NIOSSLContext(configuration: try ConnectionOptions.tlsConfiguration(request.tls)) : nil
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError.notSent(.invalidRequest, "configuration.tls cannot be used for TLS: \(error)", underlyingError: error)
        }
        let pins = secure ? request.tls.pins?.activeDigests(for: host) : nil
        let serverName = unixSocket || URLScheme.isAddressLiteral(host) ? nil : host
        // Kept here, not looked up later: it may be gone from the pipeline by then.
        let gate = secure ? HandshakeGate() : nil
        let remaining = request.attemptDeadline.map { ContinuousClock.now.duration(to: $0) } ?? .seconds(30)
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(.milliseconds(max(1, remaining.wholeMilliseconds)))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        let handler = try NIOSSLClientHandler(context: sslContext, serverHostname: serverName)
                        try channel.pipeline.syncOperations.addHandler(handler)
                        if let gate { try channel.pipeline.syncOperations.addHandler(gate) }
                    }
                    try channel.pipeline.syncOperations.addHandler(EndAfterUpgrade())
                }
            }
        let channel: any Channel
        if unixSocket {
            let path = (authority.removingPercentEncoding ?? authority)
            channel = try await bootstrap.connect(unixDomainSocketPath: path).get()
        } else {
            guard let (_, port) = ConnectionOptions.hostAndPort(of: authority, defaultPort: secure ? 443 : 80) else {
                throw APIError.notSent(.invalidRequest, "the WebSocket URL's port is not valid (\(authority))")
            }
            let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            channel = try await bootstrap.connect(host: bare, port: port).get()
        }
        return try await withTaskCancellationHandler {
            do {
                return try await handshake(on: channel, gate: gate, request: request, upgrade: upgrade, authority: unixSocket ? "localhost" : authority, pins: pins)
            } catch {
                channel.close(promise: nil)
                throw error
            }
        } onCancel: {
            channel.close(promise: nil)
        }
    }

    /// TLS finished (and the key pinned, if pins apply), then the upgrade request and its answer.
    private static func handshake(
        on channel: any Channel, gate: HandshakeGate?, request: TransportRequest, upgrade: WebSocketUpgrade, authority: String, pins: Set<String>?
    ) async throws -> TransportResponse {
        if let gate {
            try await gate.finished(on: channel.eventLoop).get()
            if let pins {
                let certificate = try await channel.eventLoop.submit {
                    try channel.pipeline.syncOperations.handler(type: NIOSSLHandler.self).peerCertificate?.toDERBytes()
                }.get()
                guard let certificate, ServerTrust.isPinned([Data(certificate)], digests: pins) else { throw PinMismatch() }
            }
        }
        var headers = AsyncHTTPClientTransport.nioHeaders(request.head.headerFields)
        // The upgrader writes these itself; a copy from the request would be sent twice.
        for name in ["connection", "upgrade", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "content-length", "transfer-encoding"] {
            headers.remove(name: name)
        }
        if !headers.contains(name: "host") { headers.add(name: "Host", value: authority) }
        if upgrade.protocols.isEmpty {
            headers.remove(name: "sec-websocket-protocol")
        } else {
            headers.replaceOrAdd(name: "Sec-WebSocket-Protocol", value: upgrade.protocols.joined(separator: ", "))
        }
        let requestHead = HTTPRequestHead(version: .http1_1, method: .GET, uri: request.head.path ?? "/", headers: headers)
        let started = ContinuousClock.now
        let answer = try await channel.eventLoop.submit { () throws -> EventLoopFuture<Outcome> in
            // The bridge answers a frame the decoder refuses (with the code it calls for); NIO's
            // own answer would be a second close frame, and could close the connection before the
            // bridge has seen why.
            let upgrader = NIOTypedWebSocketClientUpgrader<Outcome>(
                maxFrameSize: upgrade.maximumFrameSize, enableAutomaticErrorHandling: false
            ) { channel, responseHead in
                channel.eventLoop.makeCompletedFuture {
                    let connection = try NIOWebSocketConnection.install(on: channel, upgrade: upgrade, response: responseHead)
                    EndAfterUpgrade.release(on: channel)
                    return .upgraded(connection, responseHead)
                }
            }
            let configuration = NIOTypedHTTPClientUpgradeConfiguration<Outcome>(
                upgradeRequestHead: requestHead, upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let collector = RefusedAnswer.Collector(promise: channel.eventLoop.makePromise())
                        try channel.pipeline.syncOperations.addHandler(collector)
                        EndAfterUpgrade.release(on: channel)
                        return .refused(collector.promise.futureResult)
                    }
                })
            var pipeline = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: configuration)
            // Frames the server sends right behind its 101 arrive with it: handed on to the
            // WebSocket decoder, not dropped with the HTTP one (NIO's default).
            pipeline.leftOverBytesStrategy = .forwardBytes
            return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: pipeline)
        }.get().get()
        switch answer {
        case .upgraded(let connection, let responseHead):
            if let problem = Self.problem(with: responseHead, offered: upgrade.protocols) {
                await connection.close(WebSocketClose(.protocolError))
                throw APIError.notSent(.invalidResponse, problem)
            }
            var response = TransportResponse(head: AsyncHTTPClientTransport.responseHead(responseHead.status, responseHead.headers), body: .empty)
            response.webSocket = connection
            response.timings.firstByte = started.duration(to: .now)
            return response
        case .refused(let refused):
            let refusal = try await refused.get()
            channel.close(promise: nil)
            var response = TransportResponse(
                head: AsyncHTTPClientTransport.responseHead(refusal.head.status, refusal.head.headers), body: ResponseBodyStream(data: refusal.body))
            response.timings.firstByte = started.duration(to: .now)
            return response
        }
    }

    /// `upgrade`'s limits as this transport enforces them. They are public variables a custom
    /// transport or an app may set to anything: a message limit of at least 125 bytes; a frame
    /// limit no larger than the message limit (NIO's aggregator checks only fragmented messages,
    /// so a message in one frame meets the frame limit) and than 4 GiB (NIO's decoder traps past it).
    static func bounded(_ upgrade: WebSocketUpgrade) -> WebSocketUpgrade {
        var bounded = upgrade
        bounded.maximumMessageSize = Swift.max(125, upgrade.maximumMessageSize)
        bounded.maximumFrameSize = Swift.min(Swift.max(125, upgrade.maximumFrameSize), bounded.maximumMessageSize, Int(clamping: UInt32.max))
        return bounded
    }

    /// Why a `101` answer cannot be used: a subprotocol that was not offered, or an extension
    /// that was not asked for (RFC 6455 §4.1).
    static func problem(with head: HTTPResponseHead, offered: [String]) -> LocalizedMessage? {
        let chosen = head.headers["Sec-WebSocket-Protocol"]
        if chosen.count > 1 { return "the server chose more than one WebSocket subprotocol" as LocalizedMessage }
        if let chosen = chosen.first, !offered.contains(chosen) {
            return "the server chose the WebSocket subprotocol \"\(String(chosen.unicodeScalars.prefix(80).filter { $0.isASCII && $0.value >= 0x20 }.map(Character.init)))\", which was not offered" as LocalizedMessage
        }
        if !head.headers["Sec-WebSocket-Extensions"].isEmpty { return "the server turned on a WebSocket extension that was not offered" as LocalizedMessage }
        return nil
    }
}

/// A server's answer to a WebSocket handshake that is not `101`: its head and at most
/// ``WebSocketUpgrade/refusalBodyLimit`` bytes of its body (what a `401` or a problem document says).
struct RefusedAnswer: Sendable {
    var head: HTTPResponseHead
    var body: Data

    /// Reads the answer the upgrader passed on, then closes the connection.
    final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPClientResponsePart
        let promise: EventLoopPromise<RefusedAnswer>
        private let answer = Mutex<RefusedAnswer?>(nil)

        init(promise: EventLoopPromise<RefusedAnswer>) { self.promise = promise }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch Self.unwrapInboundIn(data) {
            case .head(let head):
                answer.withLock { $0 = RefusedAnswer(head: head, body: Data()) }
            case .body(let chunk):
                answer.withLock { answer in
                    guard let count = answer?.body.count, count < WebSocketUpgrade.refusalBodyLimit else { return }
                    answer?.body.append(contentsOf: chunk.readableBytesView.prefix(WebSocketUpgrade.refusalBodyLimit - count))
                }
            case .end:
                finish(context: context)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            finish(context: context)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            promise.fail(error)
            context.close(promise: nil)
        }

        /// A promise left open would be a leak NIO reports: it always ends (a second end is ignored).
        func handlerRemoved(context: ChannelHandlerContext) {
            promise.fail(ChannelError.ioOnClosedChannel)
        }

        private func finish(context: ChannelHandlerContext) {
            if let answer = answer.withLock({ $0 }) {
                promise.succeed(answer)
            } else {
                promise.fail(ChannelError.eof)
            }
            context.close(promise: nil)
        }
    }
}

/// Holds the connection's end back from the HTTP decoder while the upgrade replaces it.
///
/// A server may send its first messages right behind its `101` and close at once (a greeting and
/// goodbye, a "server full"). Those bytes wait in NIO's HTTP decoder until the upgrade removes it,
/// a turn of the event loop later; a decoder that sees the end of the connection first drops what
/// it holds (its rule after an upgrade). Held here, in front of it, the end never reaches it: the
/// decoder hands the bytes on when it is removed, and the upgrade gives them to the WebSocket's
/// handlers. The end is then told in one of two ways, both after those messages: when the
/// connection's handlers are removed (the usual way when the end came in the same turn as the
/// `101`: the ``Bridge`` watches the close, and this handler drops what it held), or by
/// ``release(on:)``, which lets it through once the outcome is known — to the WebSocket's handlers,
/// or to the reader of a refused answer, whose body may end with the connection.
///
/// A TLS server that hangs up without `close_notify` is reported by NIO's TLS handler as an
/// error just before the end; until the release that error is only the end, and is held back with
/// it (reaching the upgrade handler, it would fail the upgrade that brought the messages). The
/// remote half-closure event is not held: the channel does not allow half-closure, so an end is
/// always `channelInactive`.
final class EndAfterUpgrade: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    /// The end, while it waits for the upgrade.
    private var held: ChannelHandlerContext?
    private var released = false

    func channelInactive(context: ChannelHandlerContext) {
        if released {
            context.fireChannelInactive()
        } else {
            held = context
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !released, let tls = error as? NIOSSLError, case .uncleanShutdown = tls { return }
        context.fireErrorCaught(error)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        held = nil
        released = true
    }

    /// Lets the end through on the loop's next turn: after the upgrade handler has handed on
    /// what came with the `101`. Called on the channel's event loop, once the outcome is known.
    static func release(on channel: any Channel) {
        guard let gate = try? channel.pipeline.syncOperations.handler(type: EndAfterUpgrade.self) else { return }
        let bound = NIOLoopBound(gate, eventLoop: channel.eventLoop)
        channel.eventLoop.execute {
            let gate = bound.value
            gate.released = true
            if let context = gate.held {
                gate.held = nil
                context.fireChannelInactive()
            }
        }
    }
}

/// Tells when the TLS handshake is over (or failed), so that pins are checked before a byte of
/// the request is written.
final class HandshakeGate: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny
    /// Made when the handler joins the pipeline, so that it is always ended (NIO reports a
    /// promise dropped unended).
    private let promise = Mutex<EventLoopPromise<Void>?>(nil)

    /// Succeeds once the handshake is over; fails if it failed or the connection closed first.
    func finished(on loop: any EventLoop) -> EventLoopFuture<Void> {
        promise.withLock { $0?.futureResult } ?? loop.makeFailedFuture(ChannelError.ioOnClosedChannel)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        promise.withLock { $0 = context.eventLoop.makePromise() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        promise.withLock { $0 }?.fail(ChannelError.ioOnClosedChannel)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent {
            promise.withLock { $0 }?.succeed(())
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.withLock { $0 }?.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.withLock { $0 }?.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}
#endif
