#if AsyncHTTPClient && (os(Linux) || os(Android) || os(Windows))
import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// Owns the `HTTPClient` and guarantees it is shut down exactly once — by ``shutdown()`` or,
/// failing that, when the last reference goes — so the client's "not shut down" check can never fire.
///
/// AsyncHTTPClient sets a proxy and TLS per client, so an owned transport keeps one more client
/// per ``ConnectionOptions`` it is asked for (a proxy, TLS settings, a pinned host's keys), made
/// from the same settings on the same event loops, and shuts them down with the first.
final class ClientOwner: Sendable {
    let client: HTTPClient
    let owned: Bool
    let executor: EventLoopGroupTaskExecutor
    /// The settings `client` was made with, when the transport made it.
    private let configuration: HTTPClient.Configuration?
    private let others = Mutex<[ConnectionOptions: HTTPClient]>([:])
    private let isShutDown = Mutex(false)
    /// Collected requests under way, and the loop the last one was handed to (``handOff(_:)``).
    private let loops = Mutex<(inFlight: Int, last: (any EventLoop)?)>((0, nil))

    init(client: HTTPClient, owned: Bool, configuration: HTTPClient.Configuration? = nil) {
        self.client = client
        self.owned = owned
        self.configuration = configuration
        self.executor = EventLoopGroupTaskExecutor(group: client.eventLoopGroup)
    }

    /// The client for `request`: the first one for the defaults, else the one made for its
    /// proxy, TLS settings and pins.
    func client(for request: TransportRequest) throws(APIError) -> HTTPClient {
        if request.proxy == nil, request.tls.isDefault { return client }  // most requests: nothing to look up
        let options = ConnectionOptions(request)
        guard !options.isDefault else { return client }
        guard owned, let configuration else {
            if let proxy = options.proxy {
                throw APIError(
                    .invalidRequest,
                    localized: "this AsyncHTTPClientTransport borrows its HTTPClient, so it cannot go through the proxy \(proxy): set the proxy in that HTTPClient's configuration, or let the transport make its own client")
            }
            throw APIError(
                .invalidRequest,
                localized: "this AsyncHTTPClientTransport borrows its HTTPClient, so it cannot apply configuration.tls: set TLS in that HTTPClient's configuration, or let the transport make its own client")
        }
        return try others.withLock { (clients: inout [ConnectionOptions: HTTPClient]) throws(APIError) -> HTTPClient in
            if let existing = clients[options] { return existing }
            guard !isShutDown.withLock({ $0 }) else { throw APIError(.cancelled, localized: "the transport has been shut down") }
            let made = HTTPClient(eventLoopGroup: client.eventLoopGroup, configuration: try options.applied(to: configuration))
            clients[options] = made
            return made
        }
    }

    /// Runs `body` on the event loop a collected request is handed to AsyncHTTPClient on, and
    /// returns what it returns once the request is over.
    ///
    /// AsyncHTTPClient calls a request's delegate on that loop, and prefers a connection there.
    /// Calls made one at a time go to the loop the previous one went to, where its connection
    /// is: taking turns, every other answer crossed from the connection's loop to the other (a
    /// wake-up and a thread switch each way). Calls made while others are under way take turns,
    /// so that their connections spread over the loops; a call already on one of the loops stays
    /// there.
    func handOff<T>(_ body: (any EventLoop) async throws -> T) async throws -> T {
        let group = client.eventLoopGroup
        let loop = loops.withLock { state -> any EventLoop in
            defer { state.inFlight += 1 }
            let here = group.any()
            if here.inEventLoop { return here }
            if state.inFlight == 0, let last = state.last { return last }
            state.last = here
            return here
        }
        defer { loops.withLock { $0.inFlight -= 1 } }
        return try await body(loop)
    }

    func shutdown() async throws {
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        let extra = others.withLock { Array($0.values) }
        for client in extra { try await client.shutdown() }
        try await client.shutdown()
    }

    deinit {
        guard owned, !isShutDown.withLock({ $0 }) else { return }
        // Non-blocking: the returned future keeps the client alive until it is shut down,
        // and it is safe to call from any thread, including an event loop.
        for extra in others.withLock({ Array($0.values) }) { _ = extra.shutdown() }
        _ = client.shutdown()
    }
}

/// What sets a request's connection apart from the transport's default one: its proxy (and
/// whether the request goes to it in absolute form or through a tunnel), its TLS settings (for
/// https only) and, for a pinned host, the public keys its certificate must have.
struct ConnectionOptions: Hashable {
    var proxy: Proxy?
    /// A plain `http://` request sent to the proxy itself in absolute form
    /// (``Proxy/forwards(scheme:)``): AsyncHTTPClient, which only tunnels, connects to the proxy
    /// as if it were the origin, and ``AbsoluteFormWriter`` writes the request line.
    var forwardsToProxy: Bool
    /// Without pins: those that apply are in `pinnedDigests`.
    var tls: TLSSettings
    var pinnedDigests: Set<String>?

    init(_ request: TransportRequest) {
        proxy = request.proxy
        forwardsToProxy = request.proxy?.forwards(scheme: request.head.scheme) ?? false
        let secure = request.head.scheme?.lowercased() == "https"
        var tls = secure ? request.tls : TLSSettings()
        pinnedDigests = secure ? tls.pins?.activeDigests(for: Self.host(of: request.head.authority ?? "")) : nil
        tls.pins = nil
        self.tls = tls
    }

    var isDefault: Bool { proxy == nil && tls.isDefault && pinnedDigests == nil }

    /// `authority` without its port.
    static func host(of authority: String) -> String {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        return String(authority.split(separator: ":", maxSplits: 1).first ?? "")
    }

    /// `authority` as host and port (`defaultPort` when it names none); `nil` for a bad port.
    static func hostAndPort(of authority: String, defaultPort: Int) -> (String, Int)? {
        let host = host(of: authority)
        let rest = authority.hasPrefix("[") ? authority.drop { $0 != "]" }.dropFirst() : authority.drop { $0 != ":" }
        guard rest.hasPrefix(":") else { return (host, defaultPort) }
        guard let port = Int(rest.dropFirst()), (1...65_535).contains(port) else { return nil }
        return (host, port)
    }

    /// `base` with these options.
    func applied(to base: HTTPClient.Configuration) throws(APIError) -> HTTPClient.Configuration {
        var settings = base
        if forwardsToProxy {
            // Plain http, so no TLS settings or pins apply: the connection goes to the proxy.
            settings.http1_1ConnectionDebugInitializer = AbsoluteFormWriter.install
            return settings
        }
        if let proxy {
            settings.proxy = .server(
                host: proxy.host, port: proxy.port,
                authorization: proxy.credentials.map { .basic(username: $0.username, password: $0.password) })
        }
        guard !tls.isDefault || pinnedDigests != nil else { return settings }
        let configuration = try Self.tlsConfiguration(tls)
        settings.tlsConfiguration = configuration
        settings.httpVersion = tls.allowsHTTP2 ? .automatic : .http1Only
        if let pinnedDigests {
            // AsyncHTTPClient's only hook between the handshake and the first request: a
            // connection whose key is not pinned never carries a byte of a request.
            let check: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
                channel.pipeline.handler(type: NIOSSLHandler.self).flatMapThrowing { handler in
                    // The certificate the TLS library verified (it hands over no more of the
                    // chain), checked by the rule URLSession's chain is checked by.
                    guard let der = try? handler.peerCertificate?.toDERBytes(), ServerTrust.isPinned([Data(der)], digests: pinnedDigests)
                    else { throw PinMismatch() }
                }
            }
            settings.http1_1ConnectionDebugInitializer = check
            settings.http2ConnectionDebugInitializer = check
        }
        return settings
    }

    /// NIOSSL's client configuration for `tls` (trust roots, client identity, lowest version):
    /// the one translation, for AsyncHTTPClient's connections and the WebSocket connector's.
    static func tlsConfiguration(_ tls: TLSSettings) throws(APIError) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        do {
            switch tls.trustRoots {
            case .system: break
            case .adding(let roots): configuration.additionalTrustRoots = [.certificates(try roots.map(Self.certificate))]
            case .only(let roots): configuration.trustRoots = .certificates(try roots.map(Self.certificate))
            }
            switch tls.clientIdentity.map({ ($0.certificateChain, $0.material) }) {
            case nil: break
            case (let chain, .pem(let key))?:
                configuration.certificateChain = try chain.map { .certificate(try Self.certificate($0)) }
                configuration.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(key.utf8), format: .pem))
            case (_, .pkcs12(let data, let password))?:
                let bundle: NIOSSLPKCS12Bundle
                do {
                    bundle = try NIOSSLPKCS12Bundle(buffer: Array(data), passphrase: Array(password.utf8))
                } catch {
                    throw APIError(
                        .invalidRequest, localized: "the PKCS#12 identity (configuration.tls.clientIdentity) cannot be opened: a wrong password, or not a PKCS#12 file",
                        underlyingError: error)
                }
                configuration.certificateChain = bundle.certificateChain.map { .certificate($0) }
                configuration.privateKey = .privateKey(bundle.privateKey)
            }
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(.invalidRequest, localized: "configuration.tls holds a certificate or key that TLS cannot use: \(error)", underlyingError: error)
        }
        configuration.minimumTLSVersion = tls.minimumVersion == .tls13 ? .tlsv13 : .tlsv12
        return configuration
    }

    private static func certificate(_ certificate: TLSCertificate) throws -> NIOSSLCertificate {
        try NIOSSLCertificate(bytes: Array(certificate.der), format: .der)
    }
}

/// Writes a request on a connection to a forward proxy in absolute form (RFC 9112 §3.2.2):
/// `GET http://host/path HTTP/1.1`, the origin taken from the `Host` field the transport set.
/// AsyncHTTPClient only ever writes origin form, and only tunnels through a proxy; this handler
/// sits between its request handler and the request encoder of such a connection.
final class AbsoluteFormWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// Puts the writer before the encoder of a new HTTP/1.1 connection (an AsyncHTTPClient
    /// connection initializer).
    @Sendable static func install(on channel: any Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.submit {
            let operations = channel.pipeline.syncOperations
            let encoder = try operations.handler(type: HTTPRequestEncoder.self)
            try operations.addHandler(AbsoluteFormWriter(), position: .after(encoder))
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data), head.uri.hasPrefix("/"), let host = head.headers.first(name: "host") else {
            context.write(data, promise: promise)
            return
        }
        head.uri = "http://" + host + head.uri
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }
}

/// The server's certificate has none of the keys pinned for its host.
struct PinMismatch: Error {}

/// Why a server's certificate did not verify, found by looking at what it presents.
enum CertificateDiagnosis {
    /// Connects to `host`, reads the certificates the server presents and ends the handshake
    /// before anything is sent; `true` when one of them is outside its validity period. Gives up
    /// (`false`) after `limit` — the call's own remaining time, so a busy machine does not turn
    /// an expired certificate into an untrusted one by giving up early.
    static func presentsCertificateOutsideValidity(host: String, port: Int, group: any EventLoopGroup, within limit: Duration) async -> Bool {
        // A look that read no certificate (its connection failed, or closed before the server's
        // certificates came) knows nothing: one more is made, within what is left of the time.
        let started = ContinuousClock.now
        if let outside = await certificatesOutsideValidity(host: host, port: port, group: group, within: limit) { return outside }
        let left = limit - started.duration(to: .now)
        guard left > .zero else { return false }
        return await certificatesOutsideValidity(host: host, port: port, group: group, within: left) ?? false
    }

    /// One look: whether a certificate the server presents is outside its validity period; `nil`
    /// when none was read.
    private static func certificatesOutsideValidity(host: String, port: Int, group: any EventLoopGroup, within limit: Duration) async -> Bool? {
        // Whole milliseconds between 1 ms and a minute: no overflow in NIO's time amount.
        let milliseconds = min(max(limit.components.seconds, 0), 60) * 1000 + limit.components.attoseconds / 1_000_000_000_000_000
        let timeout = TimeAmount.milliseconds(max(1, min(milliseconds, 60_000)))
        let presented = NIOLockedValueBox<[NIOSSLCertificate]>([])
        guard let context = try? NIOSSLContext(configuration: .makeClientConfiguration()) else { return nil }
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(
                        context: context, serverHostname: URLScheme.isAddressLiteral(host) ? nil : host,
                        customVerificationCallback: { certificates, promise in
                            presented.withLockedValue { $0 = certificates }
                            promise.succeed(.failed)
                        })
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        do {
            let channel = try await bootstrap.connect(host: host, port: port).get()
            let timer = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
            try? await channel.closeFuture.get()
            timer.cancel()
        } catch {
            return nil
        }
        let now = time_t(Date().timeIntervalSince1970.rounded(.down))
        return presented.withLockedValue { certificates in
            certificates.isEmpty ? nil : certificates.contains { $0.notValidAfter < now || $0.notValidBefore > now }
        }
    }
}

/// A task executor on an event loop group: a job enqueued on one of the group's loops (a task
/// resumed by the response that just arrived there) stays on that loop; any other goes to the
/// group's next loop. A task that prefers it therefore runs on the thread doing its I/O and
/// follows its connection, instead of hopping to a pool thread and back for every response.
final class EventLoopGroupTaskExecutor: TaskExecutor {
    private let group: any EventLoopGroup
    /// The group's loops, to tell whether the current thread is one of them.
    private let loops: [any EventLoop]

    init(group: any EventLoopGroup) {
        self.group = group
        self.loops = Array(group.makeIterator())
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let loop = loops.first(where: { $0.inEventLoop }) ?? group.next()
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
#endif
