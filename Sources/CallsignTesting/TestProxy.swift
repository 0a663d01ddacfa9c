import Callsign
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A small HTTP proxy on 127.0.0.1 with an ephemeral port, for tests: it opens `CONNECT`
/// tunnels and forwards absolute-form requests (`GET http://host/path`), and records what went
/// through it so a test can check that traffic really took the proxy.
///
/// It only ever connects to loopback targets (127.0.0.1, ::1, localhost); anything else gets
/// `403`. With ``start(credentials:tunnelPorts:)`` it asks for Basic credentials (`407`) like a
/// corporate proxy, and it can open tunnels to some ports only (`403` for others), as Squid's
/// stock configuration allows `CONNECT` to port 443 alone. As a real proxy must, it consumes `Proxy-Authorization` and `Proxy-Connection`: they
/// are never forwarded to the origin. What a client sends inside a tunnel is passed on as is.
///
/// ```swift
/// try await TestProxy.withRunning { proxy in
///     let client = APIClient(configuration: .init { $0.proxy = ProxySettings(all: Proxy(host: "127.0.0.1", port: proxy.port)) })
///     _ = try await client.get(server.url("/get").absoluteString).send()
///     #expect(proxy.exchanges.count == 1)
/// }
/// ```
public final class TestProxy: StoppableServer {
    /// One request the proxy received.
    public struct Exchange: Sendable, Equatable {
        /// `CONNECT`, or the method of a forwarded request.
        public var method: String
        /// `host:port` for `CONNECT`, the absolute URL for a forwarded request.
        public var target: String
        /// The `Proxy-Authorization` value the client sent to the proxy, if any.
        public var proxyAuthorization: String?
        /// The status the proxy answered itself (`200` for an open tunnel, `407`, `403`, `502`),
        /// or `nil` when it forwarded the origin's answer.
        public var status: Int?
    }

    /// The port the operating system chose.
    public let port: Int
    /// The credentials the proxy asks for, if any.
    public let credentials: (username: String, password: String)?
    /// The ports it opens `CONNECT` tunnels to; `nil` for any port.
    public let tunnelPorts: Set<Int>?

    private let listener: LoopbackListener
    private let recorded = Mutex<[Exchange]>([])
    private let relayed = Mutex<Int>(0)

    /// Every request the proxy received, in order.
    public var exchanges: [Exchange] { recorded.withLock { $0 } }
    /// The bytes relayed between clients and origins, both ways, after each request's head.
    public var relayedBytes: Int { relayed.withLock { $0 } }
    /// `http://127.0.0.1:port`, as `HTTPS_PROXY` would name it.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// Starts a proxy; with `credentials` it answers `407` to requests without them, with
    /// `tunnelPorts` it answers `403` to a `CONNECT` to any other port (`[443]` is Squid's stock
    /// rule). Absolute-form requests are forwarded whatever their port.
    ///
    /// ```swift
    /// let proxy = try await TestProxy.start(tunnelPorts: [443])   // CONNECT to 443 only
    /// ```
    public static func start(
        credentials: (username: String, password: String)? = nil, tunnelPorts: Set<Int>? = nil
    ) async throws -> TestProxy {
        let proxy = TestProxy(listener: try await LoopbackListener(what: "proxy"), credentials: credentials, tunnelPorts: tunnelPorts)
        // On the event loops where it can: a tunnel must open within the client's connect
        // timeout even while CPU-heavy work fills the cooperative pool.
        proxy.listener.serve { [proxy] _, connection in
            await proxy.handle(connection)
        }
        return proxy
    }

    /// Starts a proxy, runs `body` with it, and stops it whether `body` returns or throws.
    public static func withRunning<T>(
        credentials: (username: String, password: String)? = nil, tunnelPorts: Set<Int>? = nil, _ body: (TestProxy) async throws -> T
    ) async throws -> T {
        try await runThenStop(try await start(credentials: credentials, tunnelPorts: tunnelPorts), body)
    }

    private init(listener: LoopbackListener, credentials: (username: String, password: String)?, tunnelPorts: Set<Int>?) {
        self.listener = listener
        self.port = listener.port
        self.credentials = credentials
        self.tunnelPorts = tunnelPorts
    }

    /// Stops accepting connections and ends the open ones.
    public func stop() async {
        await listener.stop()
    }

    /// The head of a request as the proxy reads it.
    struct Head {
        var method: String
        var target: String
        var version: String
        var fields: [(name: String, value: String)]
        /// Bytes that arrived after the blank line (the start of a body, or of a tunnel's TLS).
        var rest: [UInt8]

        func value(_ name: String) -> String? {
            fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    private func handle(_ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        do {
            try await client.executeThenClose { inbound, outbound in
                var reader = inbound.makeAsyncIterator()
                guard let head = try await Self.readHead(&reader) else { return }
                var exchange = Exchange(method: head.method, target: head.target, proxyAuthorization: head.value("Proxy-Authorization"))
                // An answer of the proxy's own; then the client closes when it has read it.
                func answer(_ status: Int, _ reason: String, _ extra: String = "") async throws {
                    exchange.status = status
                    recorded.withLock { $0.append(exchange) }
                    try await outbound.write(ByteBuffer(string: "HTTP/1.1 \(status) \(reason)\r\n\(extra)Content-Length: 0\r\nConnection: close\r\n\r\n"))
                    while try await reader.next() != nil {}
                }
                if let credentials {
                    let expected = "Basic " + Data("\(credentials.username):\(credentials.password)".utf8).base64EncodedString()
                    guard exchange.proxyAuthorization == expected else {
                        try await answer(407, "Proxy Authentication Required", "Proxy-Authenticate: Basic realm=\"callsign-test\"\r\n")
                        return
                    }
                }
                guard let (host, port, forwardedHead) = Self.route(head) else {
                    try await answer(400, "Bad Request")
                    return
                }
                guard ["127.0.0.1", "::1", "localhost"].contains(host.lowercased()) else {
                    try await answer(403, "Forbidden")  // tests never leave the machine
                    return
                }
                if head.method == "CONNECT", let tunnelPorts, !tunnelPorts.contains(port) {
                    try await answer(403, "Forbidden")
                    return
                }
                let origin: NIOAsyncChannel<ByteBuffer, ByteBuffer>
                do {
                    // A loopback connect is at once, unless the machine is busy: NIO's 10 s default
                    // has run out in the first minute of a full test run (a 502 the test did not ask for).
                    origin = try await ClientBootstrap(group: ServerThreads.group)
                        .connectTimeout(.seconds(120))
                        .connect(host: host == "localhost" ? "127.0.0.1" : host, port: port) { channel in
                            channel.eventLoop.makeCompletedFuture {
                                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                            }
                        }
                } catch {
                    try await answer(502, "Bad Gateway")
                    return
                }
                let tunnel = head.method == "CONNECT"
                if tunnel { exchange.status = 200 }
                recorded.withLock { $0.append(exchange) }
                try await relay(
                    opening: tunnel ? "HTTP/1.1 200 Connection Established\r\n\r\n" : nil, first: forwardedHead + head.rest,
                    from: &reader, to: outbound, closing: client.channel, origin: origin)
            }
        } catch {
            // A side closed or the proxy is stopping: nothing to report.
        }
    }

    /// Where a request goes, and the head to send the origin first (empty for a tunnel).
    private static func route(_ head: Head) -> (host: String, port: Int, head: [UInt8])? {
        if head.method == "CONNECT" {
            guard let (host, port) = hostAndPort(head.target, defaultPort: 443) else { return nil }
            return (host, port, [])
        }
        guard let url = URLComponents(string: head.target), url.scheme?.lowercased() == "http", let host = url.host else { return nil }
        let path = (url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath) + (url.percentEncodedQuery.map { "?" + $0 } ?? "")
        var text = "\(head.method) \(path) \(head.version)\r\n"
        for field in head.fields {
            let name = field.name.lowercased()
            // Hop-by-hop for the proxy: consumed here, never forwarded (RFC 9110 §11.7.1).
            if name == "proxy-authorization" || name == "proxy-connection" || name == "connection" { continue }
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "Connection: close\r\n\r\n"  // one request per forwarded connection keeps the relay simple
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        return (bare, url.port ?? 80, Array(text.utf8))
    }

    private static func hostAndPort(_ authority: String, defaultPort: Int) -> (String, Int)? {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            let host = String(authority[authority.index(after: authority.startIndex)..<close])
            let rest = authority[authority.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
            return (host, rest.isEmpty ? defaultPort : Int(rest.dropFirst()) ?? -1)
        }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, let host = parts.first, !host.isEmpty else { return nil }
        let port = parts.count == 2 ? Int(parts[1]) ?? -1 : defaultPort
        return (1...65_535).contains(port) ? (String(host), port) : nil
    }

    /// Tells the client the tunnel is open (`opening`), then copies bytes both ways until
    /// either side closes; then closes the other.
    private func relay(
        opening: String?, first: [UInt8], from reader: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator,
        to client: NIOAsyncChannelOutboundWriter<ByteBuffer>, closing clientChannel: any Channel,
        origin: NIOAsyncChannel<ByteBuffer, ByteBuffer>
    ) async throws {
        let originChannel = origin.channel
        // The origin channel is handed to executeThenClose before anything else can fail.
        try await origin.executeThenClose { originInbound, originOutbound in
            if let opening { try await client.write(ByteBuffer(string: opening)) }
            if !first.isEmpty { try await originOutbound.write(ByteBuffer(bytes: first)) }
            // The client's side is read here; the origin's side in a child task.
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [self] in
                    do {
                        for try await buffer in originInbound {
                            relayed.withLock { $0 += buffer.readableBytes }
                            try await client.write(buffer)
                        }
                    } catch {
                        // Either side went away.
                    }
                    try? await clientChannel.close()  // ends the read below
                }
                do {
                    while let buffer = try await reader.next() {
                        relayed.withLock { $0 += buffer.readableBytes }
                        try await originOutbound.write(buffer)
                    }
                } catch {
                    // Either side went away.
                }
                try? await originChannel.close()  // ends the child's read
                await group.waitForAll()
            }
        }
    }

    /// Reads a request head (at most 64 KiB) and whatever followed it in the same reads.
    private static func readHead(_ reader: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) async throws -> Head? {
        var bytes: [UInt8] = []
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while let buffer = try await reader.next() {
            bytes += buffer.readableBytesView
            if let range = firstRange(of: end, in: bytes) {
                let text = String(decoding: bytes[..<range.lowerBound], as: UTF8.self)
                var lines = text.components(separatedBy: "\r\n")
                let requestLine = lines.removeFirst().split(separator: " ")
                guard requestLine.count == 3 else { return nil }
                let fields = lines.compactMap { line -> (name: String, value: String)? in
                    guard let colon = line.firstIndex(of: ":") else { return nil }
                    return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                }
                return Head(
                    method: String(requestLine[0]), target: String(requestLine[1]), version: String(requestLine[2]), fields: fields,
                    rest: Array(bytes[range.upperBound...]))
            }
            if bytes.count > 65_536 { return nil }
        }
        return nil
    }

    private static func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start..<(start + needle.count)
        }
        return nil
    }
}
