public import Callsign
public import Foundation
import NIOCore
import NIOHTTP1
import NIOWebSocket
import Synchronization

/// A WebSocket the ``TestServer`` accepted, as its route handler sees it: the handshake
/// request, the client's messages, and ways to answer — well, or as a hostile server would.
///
/// ```swift
/// server.webSocketRoute("/ws/chat") { socket in
///     while let message = try await socket.receive() {
///         try await socket.send(.text("you said \(message.text ?? "")"))
///     }
/// }
/// ```
///
/// Built-in routes: `/ws/echo` sends every message back; `/ws/close/{code}?reason=…` closes at
/// once with that code; `/ws/broadcast` sends each message to every socket connected there.
public struct TestWebSocket: ~Copyable {
    /// The handshake request.
    public let request: ServerRequest
    /// Whether ``receive()`` answers the client's pings. Default `true`; `false` for a server
    /// whose pongs never come.
    public var answersPings = true
    /// A message ``receive()`` sends in place of each pong while ``answersPings`` is `false`:
    /// a server that is alive but busy, whose pong would come late. Default `nil`.
    public var sendsInsteadOfPong: WebSocketMessage?
    /// How many pings the client sent so far.
    public private(set) var pings = 0
    /// The client's close, once it came.
    public private(set) var clientClose: WebSocketClose?
    private var frames: NIOAsyncChannelInboundStream<WebSocketFrame>.AsyncIterator
    private let channel: any Channel

    init(
        request: ServerRequest, frames: NIOAsyncChannelInboundStream<WebSocketFrame>.AsyncIterator, channel: any Channel
    ) {
        self.request = request
        self.frames = frames
        self.channel = channel
    }

    /// The client's next message (fragments joined); `nil` once it closed — its close is echoed
    /// and kept in ``clientClose`` — or the connection ended.
    public mutating func receive() async throws -> WebSocketMessage? {
        while let frame = try await frames.next() {
            switch frame.opcode {
            case .text:
                return .text(String(decoding: frame.unmaskedData.readableBytesView, as: UTF8.self))
            case .binary:
                return .binary(Data(frame.unmaskedData.readableBytesView))
            case .ping:
                pings += 1
                if answersPings {
                    try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)).get()
                } else if let busy = sendsInsteadOfPong {
                    try await send(busy)
                }
            case .connectionClose:
                var payload = frame.unmaskedData
                let code = payload.readInteger(as: UInt16.self).map { WebSocketClose.Code($0) } ?? .noStatusReceived
                clientClose = WebSocketClose(code, reason: payload.readString(length: payload.readableBytes) ?? "")
                try? await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: frame.unmaskedData)).get()
                return nil
            default:
                continue
            }
        }
        return nil
    }

    /// Sends a message.
    public func send(_ message: WebSocketMessage) async throws {
        switch message {
        case .text(let text): try await sendFrame(opcode: 0x1, payload: Data(text.utf8))
        case .binary(let data): try await sendFrame(opcode: 0x2, payload: data)
        }
    }

    /// Sends one frame exactly as given — a fragment (`fin: false`, then opcode 0 for the rest),
    /// a text frame that is not UTF-8, a reserved bit or opcode — for hostile cases.
    ///
    /// ```swift
    /// try await socket.sendFrame(fin: false, opcode: 0x1, payload: Data("never fin".utf8))
    /// ```
    public func sendFrame(fin: Bool = true, rsv1: Bool = false, opcode: UInt8, payload: Data) async throws {
        var buffer = channel.allocator.buffer(capacity: payload.count)
        buffer.writeBytes(payload)
        let code = WebSocketOpcode(encodedWebSocketOpcode: opcode & 0x0F) ?? .binary
        // Written and flushed before this returns: a ``drop()`` right after loses nothing sent.
        try await channel.writeAndFlush(WebSocketFrame(fin: fin, rsv1: rsv1, opcode: code, data: buffer)).get()
    }

    /// Sends a close frame with `close`; the client's answer comes from ``receive()``.
    public func close(_ close: WebSocketClose) async throws {
        var payload = Data()
        payload.append(UInt8(close.code.rawValue >> 8))
        payload.append(UInt8(close.code.rawValue & 0xFF))
        payload.append(contentsOf: close.reason.utf8)
        try await sendFrame(opcode: 0x8, payload: payload)
    }

    /// Ends the connection without a close frame, as a server that crashed or a network that
    /// dropped would.
    public func drop() async {
        try? await channel.close()
    }
}

extension TestServer {
    /// A WebSocket route handler: runs while the connection is open; returning closes it.
    public typealias WebSocketHandler = @Sendable (inout TestWebSocket) async throws -> Void

    /// Adds a WebSocket route: an upgrade request whose path starts with `prefix` — and that
    /// `accepts`, when given — is answered `101` (choosing the first of `protocols` the client
    /// offers) and handed to `handler`. One that is not accepted goes on as a plain request, to
    /// the HTTP routes (a `401` route at the same path, say). Later routes win.
    ///
    /// ```swift
    /// server.webSocketRoute("/ws/secure", accepts: { $0.header("Authorization") == "Bearer t2" }) { socket in
    ///     try await socket.send(.text("welcome"))
    /// }
    /// server.route("/ws/secure") { _ in .status(401) }
    /// ```
    public func webSocketRoute(
        _ prefix: String, protocols: [String] = [], accepts: (@Sendable (ServerRequest) -> Bool)? = nil, _ handler: @escaping WebSocketHandler
    ) {
        webSockets.routes.withLock { $0.insert(WebSocketRoutes.Route(prefix: prefix, protocols: protocols, accepts: accepts, handler: handler), at: 0) }
    }

    /// Serves an upgraded connection with its route.
    func serveWebSocket(_ channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, head: HTTPRequestHead) async {
        let request = makeRequest(head, body: ByteBuffer())
        state.withLock { state in
            state.requests.append(request)
            state.hits[request.rawPath, default: 0] += 1
        }
        guard let route = webSockets.route(for: request) else {
            try? await channel.channel.close()
            return
        }
        let broadcastID = route.prefix == "/ws/broadcast" ? UUID() : nil
        do {
            try await channel.executeThenClose { inbound, _ in
                if let broadcastID { webSockets.listeners.withLock { $0[broadcastID] = channel.channel } }
                defer { if let broadcastID { _ = webSockets.listeners.withLock { $0.removeValue(forKey: broadcastID) } } }
                var socket = TestWebSocket(request: request, frames: inbound.makeAsyncIterator(), channel: channel.channel)
                try await route.handler(&socket)
            }
        } catch {
            // The client went away, or the handler dropped the connection: nothing to do.
        }
    }
}

/// The WebSocket routes of a ``TestServer``, known before it starts accepting (its upgrader
/// asks them whether to upgrade).
final class WebSocketRoutes: Sendable {
    struct Route: Sendable {
        var prefix: String
        var protocols: [String]
        var accepts: (@Sendable (ServerRequest) -> Bool)?
        var handler: TestServer.WebSocketHandler
    }

    let routes = Mutex<[Route]>([])
    /// The sockets connected to `/ws/broadcast`.
    let listeners = Mutex<[UUID: any Channel]>([:])

    /// The route for `request`: yours first, then the built-in ones.
    func route(for request: ServerRequest) -> Route? {
        let own = routes.withLock { routes in routes.first { request.rawPath.hasPrefix($0.prefix) } }
        if let own { return (own.accepts?(request) ?? true) ? own : nil }
        return builtIn.first { request.rawPath.hasPrefix($0.prefix) }
    }

    /// The header fields of the `101` answer to `head`, or `nil` to leave it a plain request.
    func upgradeHeaders(for head: HTTPRequestHead, serverURL: URL) -> HTTPHeaders? {
        let parts = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let request = ServerRequest(
            method: head.method.rawValue, uri: head.uri, rawPath: String(parts.first ?? "/"), rawQuery: parts.count > 1 ? String(parts[1]) : nil,
            headers: head.headers.map { (name: $0.name, value: $0.value) }, body: Data(), serverURL: serverURL)
        guard let route = route(for: request) else { return nil }
        var headers = HTTPHeaders()
        let offered = head.headers["Sec-WebSocket-Protocol"].flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        if let chosen = route.protocols.first(where: offered.contains) { headers.add(name: "Sec-WebSocket-Protocol", value: chosen) }
        return headers
    }

    /// `/ws/echo`, `/ws/close/{code}` and `/ws/broadcast`.
    private var builtIn: [Route] {
        [
            Route(prefix: "/ws/echo", protocols: ["echo", "chat"]) { socket in
                while let message = try await socket.receive() { try await socket.send(message) }
            },
            Route(prefix: "/ws/close/", protocols: []) { socket in
                let code = socket.request.pathSegments.last.flatMap { UInt16($0) } ?? 1000
                try await socket.close(WebSocketClose(WebSocketClose.Code(code), reason: socket.request.query("reason") ?? ""))
                while try await socket.receive() != nil {}
            },
            Route(prefix: "/ws/broadcast", protocols: []) { [self] socket in
                while let message = try await socket.receive() {
                    let everyone = listeners.withLock { Array($0.values) }
                    let frame = WebSocketFrame(
                        fin: true, opcode: message.text == nil ? .binary : .text, data: ByteBuffer(bytes: message.data))
                    for listener in everyone { try? await listener.writeAndFlush(frame).get() }
                }
            },
        ]
    }
}

/// Makes an upgrade request that no WebSocket route takes a plain request, before SwiftNIO's
/// upgrader sees it: the HTTP routes answer it (a `401`, a `404`), as a real server's would.
final class PlainUnlessRouted: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    private let routed: @Sendable (HTTPRequestHead) -> Bool

    init(routed: @escaping @Sendable (HTTPRequestHead) -> Bool) { self.routed = routed }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = Self.unwrapInboundIn(data), head.headers.contains(name: "upgrade") else {
            context.fireChannelRead(data)
            return
        }
        if routed(head) {
            // The connection becomes a WebSocket: what follows is not HTTP, and not for this.
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        head.headers.remove(name: "upgrade")
        let connection = head.headers[canonicalForm: "connection"].filter { $0.lowercased() != "upgrade" }.joined(separator: ", ")
        head.headers.remove(name: "connection")
        if !connection.isEmpty { head.headers.add(name: "Connection", value: connection) }
        context.fireChannelRead(Self.wrapInboundOut(.head(head)))
    }
}
