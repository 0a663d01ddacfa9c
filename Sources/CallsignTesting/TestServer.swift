import Callsign
public import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization

/// A real HTTP/1.1 server, in-process on 127.0.0.1 with an ephemeral port, for tests and demos.
///
/// It answers httpbin-style routes (`/get`, `/anything/…`, `/status/{code}`, `/headers`,
/// `/json`, `/delay/{s}`, `/redirect/{n}`, `/basic-auth/{user}/{password}`, `/bytes/{n}`,
/// `/envelope/…`), scripted misbehaviour under `/misbehave/…`, the demo API under `/demo/…`,
/// and any route you add. It records what it receives, so a test can check what was sent.
///
/// ```swift
/// try await TestServer.withRunning { server in
///     let client = APIClient(configuration: .init { $0.baseURL = server.baseURL })
///     let echo = try await client.get("/anything/x").query(["q": "a&b"]).send().json()
///     #expect(server.requests.last?.rawQuery == "q=a%26b")
/// }
/// ```
///
/// With ``TLS`` settings it serves HTTPS instead, speaking HTTP/2 or HTTP/1.1 as the client's ALPN
/// chooses, with a certificate from ``TestCertificates``.
///
/// ``withRunning(host:tls:_:)`` stops the server on every path; if you call
/// ``start(host:port:tls:)`` yourself, call ``stop()``.
public final class TestServer: Sendable {
    /// The route handler type: gets the request, returns the response.
    public typealias Handler = @Sendable (ServerRequest) async -> ServerResponse

    /// The host the server listens on.
    public let host: String
    /// The port the operating system chose.
    public let port: Int
    /// `http://host:port/`, or `https://…` for a TLS server.
    public let baseURL: URL


    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    /// What a plain connection became after its first request: HTTP, or a WebSocket.
    enum Accepted: Sendable {
        case http(Connection)
        case webSocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, HTTPRequestHead)
    }

    /// The WebSocket routes (``webSocketRoute(_:protocols:accepts:_:)``).
    let webSockets: WebSocketRoutes

    /// The listening socket.
    private let listener: any Channel
    let state: Mutex<State>
    private let serving: Mutex<Task<Void, Never>?>
    /// Accepted connections the serving loop has not taken yet (see ``PendingConnections``).
    private let pending: PendingConnections

    struct State {
        var requests: [ServerRequest] = []
        var hits: [String: Int] = [:]
        var statuses: [String: [Int: Int]] = [:]
        var routes: [(prefix: String, handler: Handler)] = []
        var inFlight = 0
        var maxInFlight = 0
        var connections = 0
        var stopped = false
        /// Bytes received so far on `/upload/…`, and who waits for a count (``waitForUploadedBytes(atLeast:)``).
        var uploaded = 0
        var uploadWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// Starts a server.
    ///
    /// - Parameters:
    ///   - host: a loopback address. Default `127.0.0.1`.
    ///   - port: the port; `0` (the default) lets the system choose a free one.
    ///   - tls: serve HTTPS with these settings; `nil` (the default) for plain HTTP.
    public static func start(host: String = "127.0.0.1", port: Int = 0, tls: TLS? = nil) async throws -> TestServer {
        let bootstrap = ServerBootstrap(group: ServerThreads.group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // A test can hold its port with a bound, non-listening socket that refuses connections
            // until this server starts, so that no parallel test takes the port in between.
            .serverChannelOption(.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
        let server: TestServer
        let pending = PendingConnections()
        if let tls {
            let context = try tls.context()
            let channel = try await bootstrap.bind(host: host, port: port) { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }.flatMap {
                    child.configureAsyncHTTPServerPipeline(
                        // NIOHTTP2 has already added the HTTP/1.1 handlers.
                        http1ConnectionInitializer: { connection in
                            connection.eventLoop.makeCompletedFuture { try Connection(wrappingChannelSynchronously: connection) }
                        },
                        http2ConnectionInitializer: { connection in connection.eventLoop.makeSucceededFuture(connection) },
                        http2StreamInitializer: { stream in
                            stream.eventLoop.makeCompletedFuture {
                                try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                                return pending.hold(try Connection(wrappingChannelSynchronously: stream))
                            }
                        })
                }
            }
            // The HTTP/1.1 connection is made after the handshake, once its channel is active: its
            // writer is finished when the channel closes, held or not. An HTTP/2 stream becomes
            // active after it is made, so streams are held like plain connections.
            server = try TestServer(host: host, listener: channel.channel, scheme: "https", pending: pending)
            server.serve(channel) { negotiation, group in
                switch try await negotiation.get() {
                case .http1_1(let connection):
                    await server.handle(connection)
                case .http2((_, let multiplexer)):
                    for try await stream in multiplexer.inbound { group.addTask { await server.handle(stream) } }
                }
            }
        } else {
            // A connection whose first request asks for a WebSocket that a route accepts is
            // upgraded; any other goes on as HTTP/1.1.
            let webSockets = WebSocketRoutes()
            let address = Mutex<URL?>(nil)
            let channel = try await bootstrap.bind(host: host, port: port) { child in
                child.eventLoop.makeCompletedFuture {
                    let upgrader = NIOTypedWebSocketServerUpgrader<Accepted>(
                        maxFrameSize: 1 << 24,
                        shouldUpgrade: { channel, head in
                            channel.eventLoop.makeSucceededFuture(
                                address.withLock { $0 }.flatMap { webSockets.upgradeHeaders(for: head, serverURL: $0) })
                        },
                        upgradePipelineHandler: { channel, head in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(
                                    NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1 << 16, maxAccumulatedFrameSize: 1 << 26))
                                return .webSocket(try NIOAsyncChannel(wrappingChannelSynchronously: channel), head)
                            }
                        })
                    let configuration = NIOUpgradableHTTPServerPipelineConfiguration<Accepted>(
                        upgradeConfiguration: .init(
                            upgraders: [upgrader],
                            notUpgradingCompletionHandler: { channel in
                                channel.eventLoop.makeCompletedFuture { .http(pending.hold(try Connection(wrappingChannelSynchronously: channel))) }
                            }))
                    let accepted = try child.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
                    let upgrades = try child.pipeline.syncOperations.handler(type: NIOTypedHTTPServerUpgradeHandler<Accepted>.self)
                    try child.pipeline.syncOperations.addHandler(
                        PlainUnlessRouted { head in address.withLock { $0 }.flatMap { webSockets.upgradeHeaders(for: head, serverURL: $0) } != nil },
                        position: .before(upgrades))
                    return accepted
                }
            }
            server = try TestServer(host: host, listener: channel.channel, scheme: "http", pending: pending, webSockets: webSockets)
            address.withLock { $0 = server.baseURL }
            server.serve(channel) { accepted, _ in
                switch try await accepted.get() {
                case .http(let connection): await server.handle(connection)
                case .webSocket(let socket, let head): await server.serveWebSocket(socket, head: head)
                }
            }
        }
        return server
    }

    /// Starts a server, runs `body` with it, and stops it whether `body` returns or throws.
    public static func withRunning<T>(
        host: String = "127.0.0.1", tls: TLS? = nil, _ body: (TestServer) async throws -> T
    ) async throws -> T {
        try await runThenStop(try await start(host: host, tls: tls), body)
    }

    /// Starts a plain HTTP server on a Unix domain socket at `path` (which must not exist);
    /// its ``baseURL`` is `http+unix://<percent-encoded path>/`, and ``port`` is `0`.
    ///
    /// ```swift
    /// let server = try await TestServer.start(unixSocketPath: folder.appendingPathComponent("api.sock").path)
    /// ```
    public static func start(unixSocketPath path: String) async throws -> TestServer {
        let pending = PendingConnections()
        let channel = try await ServerBootstrap(group: ServerThreads.group)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: false) { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    return pending.hold(try Connection(wrappingChannelSynchronously: child))
                }
            }
        let encoded = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? path
        let server = try TestServer(host: path, listener: channel.channel, baseURL: "http+unix://\(encoded)/", pending: pending)
        server.serve(channel) { connection, _ in await server.handle(connection) }
        return server
    }

    private convenience init(host: String, listener: any Channel, scheme: String, pending: PendingConnections, webSockets: WebSocketRoutes = WebSocketRoutes()) throws {
        guard let port = listener.localAddress?.port else {
            listener.close(promise: nil)
            throw TestServerError("the server did not report its port")
        }
        let printableHost = host.contains(":") ? "[\(host)]" : host
        try self.init(host: host, listener: listener, baseURL: "\(scheme)://\(printableHost):\(port)/", port: port, pending: pending, webSockets: webSockets)
    }

    private init(
        host: String, listener: any Channel, baseURL: String, port: Int = 0, pending: PendingConnections, webSockets: WebSocketRoutes = WebSocketRoutes()
    ) throws {
        self.pending = pending
        self.webSockets = webSockets
        self.host = host
        self.port = port
        guard let url = URL(string: baseURL) else {
            listener.close(promise: nil)
            throw TestServerError("the server's address \(baseURL) is not a URL")
        }
        self.baseURL = url
        self.listener = listener
        self.state = Mutex(State())
        self.serving = Mutex(nil)
    }

    /// Accepts connections until the listener closes, each handled in a child task by `handle`.
    private func serve<Accepted: Sendable>(
        _ channel: NIOAsyncChannel<Accepted, Never>,
        handle: @escaping @Sendable (Accepted, inout DiscardingTaskGroup) async throws -> Void
    ) {
        // On the servers' own threads, as every test server: see ``ServerThreads``.
        let task = ServerThreads.serve(channel, pending: pending) { [self] connection in
            state.withLock { $0.connections += 1 }
            return {
                await withDiscardingTaskGroup { streams in
                    try? await handle(connection, &streams)
                }
            }
        }
        serving.withLock { $0 = task }
    }

    /// Stops accepting, closes every connection and waits until the server has wound down.
    public func stop() async {
        let alreadyStopped = state.withLock { state in
            defer { state.stopped = true }
            return state.stopped
        }
        guard !alreadyStopped else { return }
        releaseUploadWaiters()
        try? await listener.close()
        let task = serving.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    /// Adds a route: requests whose path starts with `prefix` go to `handler`. Later routes win
    /// over earlier ones and over the built-in routes.
    ///
    /// ```swift
    /// server.route("/token") { _ in .json(["access_token": "t1"]) }
    /// ```
    public func route(_ prefix: String, _ handler: @escaping Handler) {
        state.withLock { $0.routes.insert((prefix, handler), at: 0) }
    }

    /// A URL on this server: `server.url("/get")`.
    public func url(_ path: String) -> URL {
        // Joined as text, so a test can send any path exactly (dot segments, `//`, escapes).
        URL(string: baseURL.absoluteString.dropLast() + (path.hasPrefix("/") ? path : "/" + path)) ?? baseURL
    }

    // MARK: - Connections

    private func handle(_ connection: Connection) async {
        // Every connection and stream is taken here, held or not (see ``PendingConnections``).
        pending.take(connection.channel)
        do {
            let closure = ConnectionClosure(connection.channel.closeFuture)
            try await connection.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                var body = ByteBuffer()
                var upload: UploadDigest?
                for try await part in inbound {
                    switch part {
                    case .head(let received):
                        head = received
                        body.clear()
                        upload = received.uri.hasPrefix("/upload/") ? UploadDigest() : nil
                    case .body(var chunk):
                        if upload != nil {
                            upload?.add(chunk.readableBytesView)
                            noteUploaded(chunk.readableBytes)
                        } else {
                            body.writeBuffer(&chunk)
                        }
                    case .end:
                        guard let received = head else { continue }
                        var request = makeRequest(received, body: body)
                        request.httpVersion = received.version.major == 2 ? "HTTP/2" : "HTTP/\(received.version.major).\(received.version.minor)"
                        request.streamedBody = upload.map { ($0.count, $0.crc) }
                        request.connectionClosure = closure
                        let keepGoing = try await respond(to: request, keepAlive: received.isKeepAlive, connection: connection, outbound: outbound)
                        head = nil
                        if !keepGoing { return }
                    }
                }
            }
        } catch {
            // A client that went away or a scripted reset: nothing to do.
        }
    }

    func makeRequest(_ head: HTTPRequestHead, body: ByteBuffer) -> ServerRequest {
        let parts = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return ServerRequest(
            method: head.method.rawValue, uri: head.uri, rawPath: String(parts.first ?? "/"),
            rawQuery: parts.count > 1 ? String(parts[1]) : nil,
            headers: head.headers.map { (name: $0.name, value: $0.value) },
            body: Data(body.readableBytesView), serverURL: baseURL)
    }

    private func respond(
        to request: ServerRequest, keepAlive: Bool,
        connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>,
        outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws -> Bool {
        let handler = state.withLock { state -> Handler? in
            // Keep the last 10,000: trim in batches, so a long benchmark does not move the array each time.
            if state.requests.count >= 11_000 { state.requests.removeFirst(state.requests.count - 10_000) }
            state.requests.append(request)
            state.hits[request.rawPath, default: 0] += 1
            state.inFlight += 1
            state.maxInFlight = max(state.maxInFlight, state.inFlight)
            return state.routes.first { request.rawPath.hasPrefix($0.prefix) }?.handler
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        let response: ServerResponse
        if let handler {
            response = await handler(request)
        } else {
            response = await BuiltInRoutes.respond(to: request)
        }
        state.withLock { $0.statuses[request.rawPath, default: [:]][response.status, default: 0] += 1 }
        return try await write(response, keepAlive: keepAlive, isHead: request.method == "HEAD", connection: connection, outbound: outbound)
    }

    private func write(
        _ response: ServerResponse, keepAlive: Bool, isHead: Bool,
        connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>,
        outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws -> Bool {
        switch response.behaviour.kind {
        case .closeWithoutResponse:
            return false
        case .delayHead(let duration):
            try await Task.sleep(for: duration)
        default:
            break
        }
        var headers = HTTPHeaders(response.headers.map { ($0.name, $0.value) })
        if !headers.contains(name: "Content-Length") {
            headers.add(name: "Content-Length", value: String(response.body.count))
        }
        let closing: Bool
        switch response.behaviour.kind {
        case .resetAfter, .truncateAfter: closing = true
        default: closing = !keepAlive
        }
        if closing { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        try await outbound.write(.head(head))

        let total = isHead ? 0 : response.body.count
        var limit = total
        var chunkSize = 64 * 1024
        var interval: Duration?
        switch response.behaviour.kind {
        case .resetAfter(let bytes), .truncateAfter(let bytes): limit = min(bytes, total)
        case .drip(let chunk, let every):
            chunkSize = chunk
            interval = every
        default: break
        }
        var sent = 0
        var generator = BodyGenerator()
        if case .generatedRange(let offset, _) = response.body { generator = BodyGenerator(offset: UInt64(offset)) }
        while sent < limit {
            let size = min(chunkSize, limit - sent)
            let chunk: ByteBuffer
            switch response.body {
            case .data(let data):
                chunk = ByteBuffer(bytes: data[data.startIndex + sent..<data.startIndex + sent + size])
            case .generated, .generatedRange:
                chunk = ByteBuffer(bytes: generator.next(size))
            }
            try await outbound.write(.body(.byteBuffer(chunk)))
            sent += size
            if let interval, sent < limit { try await Task.sleep(for: interval) }
        }
        switch response.behaviour.kind {
        case .resetAfter:
            // SO_LINGER with a zero timeout makes close() send a TCP RST instead of a FIN.
            if let provider = connection.channel as? any SocketOptionProvider {
                try? await provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
            }
            try? await connection.channel.close()
            return false
        case .truncateAfter:
            try? await connection.channel.close()
            return false
        default:
            try await outbound.write(.end(nil))
            return !closing
        }
    }
}
