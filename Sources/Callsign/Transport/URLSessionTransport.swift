public import Foundation
import HTTPTypes
import Synchronization

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A transport on `URLSession`: the default on Apple platforms; on Linux it runs on
/// FoundationNetworking.
///
/// A body read into memory is collected by the session delegate and handed over with the head
/// (the calling task resumes once); any other body is streamed as it arrives. Redirects are handed back
/// to Callsign instead of being followed, and cancelling the calling task cancels the
/// `URLSessionTask`.
///
/// ```swift
/// let client = APIClient(definitions: definitions, transport: URLSessionTransport())
/// ```
///
/// A ``WireRequest/proxy`` goes into a session of its own (`connectionProxyDictionary`,
/// and the proxy's credentials answer its authentication challenge); on Apple platforms the
/// system then sends `http://` requests to the proxy in absolute form and tunnels `https://`
/// ones, as curl does, and a ``Proxy/alwaysTunnels`` proxy for an `http://` request is refused
/// (the system offers no way to force a tunnel). FoundationNetworking on Linux ignores those
/// settings (its libcurl handle is never given a proxy), so there a request with a proxy fails
/// with ``APIError/Code/invalidRequest`` instead of connecting directly.
public final class URLSessionTransport: Transport {
    private let session: URLSession
    private let delegate: SessionDelegate
    /// One more session per proxy and TLS settings asked for (both are part of a session's
    /// configuration or delegate), made from the same configuration.
    private let proxied: Mutex<ProxiedSessions>
    /// Where a body made as it is read is spooled before it is sent (``SpooledBody``).
    private let spoolDirectory: URL
    /// The app's answers to what Callsign leaves open, given to every session's delegate.
    private let hooks: URLSessionHooks

    private struct ProxiedSessions {
        let configuration: URLSessionConfiguration
        var sessions: [SessionKey: (session: URLSession, delegate: SessionDelegate)] = [:]
    }

    /// What sets a session apart from the default one.
    private struct SessionKey: Hashable {
        var proxy: Proxy?
        var tls: TLSSettings
    }

    /// Creates a transport with its own ephemeral session: no cookies, cache or credentials on
    /// disk, and no `URLCache` (Callsign brings its own cache).
    public convenience init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        self.init(configuration: configuration)
    }

    /// Creates a transport with a session made from your configuration: its timeouts, headers,
    /// TLS and connection settings apply (Malibu's and APE's session options).
    ///
    /// Its `URLCache` is kept, and switched off for the requests of clients that use Callsign's
    /// own cache (``APIClient/Configuration/cache``), so that answers are never cached twice.
    /// Its cookie handling is switched off: Callsign's cookie jar is the only one.
    ///
    /// A body made as it is read and larger than 1 MiB — a multipart form with files, a FIFO, an
    /// app's stream — is written to a private file in `spoolDirectory` as it is made (URLSession
    /// cannot pull from a Swift sequence), sent from there, and removed once sent. The default is
    /// the temporary folder; an app may name its caches folder or an app group's.
    ///
    /// ```swift
    /// let configuration = URLSessionConfiguration.default
    /// configuration.urlCache = URLCache(memoryCapacity: 4 << 20, diskCapacity: 64 << 20)
    /// let client = APIClient(definitions: definitions, transport: URLSessionTransport(configuration: configuration))
    /// ```
    ///
    /// `hooks` answers what URLSession asks and Callsign leaves open: a client certificate, a
    /// challenge of the app's own, task metrics (see ``URLSessionHooks``).
    public init(
        configuration: URLSessionConfiguration, spoolDirectory: URL = FileManager.default.temporaryDirectory,
        hooks: URLSessionHooks = URLSessionHooks()
    ) {
        self.spoolDirectory = spoolDirectory
        self.hooks = hooks
        let configuration = configuration.copy() as? URLSessionConfiguration ?? configuration
        // One jar: Callsign's (configuration.cookies). URLSession neither sends nor stores cookies.
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        delegate = SessionDelegate(proxyCredentials: nil, tls: TLSSettings(), hooks: hooks)
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: Self.delegateQueue())
        proxied = Mutex(ProxiedSessions(configuration: configuration))
    }

    /// The session (and its delegate) for `proxy` and `tls`: the default one when both are the defaults.
    private func session(through proxy: Proxy?, tls: TLSSettings) -> (session: URLSession, delegate: SessionDelegate) {
        let key = SessionKey(proxy: proxy, tls: tls)
        guard proxy != nil || !tls.isDefault else { return (session, delegate) }
        return proxied.withLock { state in
            if let existing = state.sessions[key] { return existing }
            // URLSession copies its configuration: change it for this session only.
            let configuration = state.configuration
            let previousProxy = configuration.connectionProxyDictionary
            if let proxy {
                configuration.connectionProxyDictionary = [
                    "HTTPEnable": 1, "HTTPProxy": proxy.host, "HTTPPort": proxy.port,
                    "HTTPSEnable": 1, "HTTPSProxy": proxy.host, "HTTPSPort": proxy.port,
                ]
            }
            let restoreMinimumVersion = Self.setMinimumVersion(of: tls, in: configuration)
            let delegate = SessionDelegate(proxyCredentials: proxy?.credentials, tls: tls, hooks: hooks)
            let made = URLSession(configuration: configuration, delegate: delegate, delegateQueue: Self.delegateQueue())
            configuration.connectionProxyDictionary = previousProxy
            restoreMinimumVersion()
            state.sessions[key] = (made, delegate)
            return (made, delegate)
        }
    }

    /// URLSession decodes `gzip` and `deflate` itself (the `Content-Encoding` field stays in
    /// the headers); Callsign's decompression limits do not apply to it, the body cap does.
    public var decodesContentEncoding: Bool { true }

    /// This transport ends an attempt at ``WireRequest/attemptDeadline`` itself (the head, and a
    /// collected body) with an entry in the process's one table of timers: no timer task of its
    /// own per attempt.
    public var enforcesAttemptDeadlines: Bool { true }

    deinit {
        // A session holds its delegate until invalidated; without this both would leak.
        session.finishTasksAndInvalidate()
        for extra in proxied.withLock({ $0.sessions.values.map(\.session) }) { extra.finishTasksAndInvalidate() }
    }

    /// The largest body made as it is read that is collected in memory rather than spooled to a
    /// temporary file (``SpooledBody``).
    static let collectedBodySize = 1 << 20

    public func send(_ transportRequest: TransportRequest) async throws -> TransportResponse {
        let request = transportRequest.head
        let body = transportRequest.body
        guard let url = URL(string: request.urlString) else {
            throw APIError(.invalidRequest, localized: "the URL \"\(request.urlString)\" is not valid")
        }
        var urlRequest = URLRequest(url: url)
        urlRequest.cachePolicy = transportRequest.clientCaches ? .reloadIgnoringLocalCacheData : .useProtocolCachePolicy
        urlRequest.httpMethod = request.method.rawValue
        // Callsign enforces its own time limits; URLSession's idle timeout should not fire first.
        urlRequest.timeoutInterval = 3600
        for field in request.headerFields {
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
        // A body made as it is read, spooled to a private file; removed once the request is sent.
        var spooled: SpooledBody?
        defer { spooled?.remove() }
        if let body {
            if let file = body.fileURL, let stream = InputStream(url: file) {
                // Streamed from disk (URLSession sends it chunked: a Content-Length next to its
                // own Transfer-Encoding would make the request invalid).
                urlRequest.httpBodyStream = stream
            } else if let data = body.inMemoryData {
                urlRequest.httpBody = data
            } else if let count = body.count, count <= Self.collectedBodySize {
                urlRequest.httpBody = try await body.collect()
            } else {
                // A multipart form with files, a FIFO, an app's stream: URLSession cannot pull
                // from a Swift async sequence, so the bytes go to a private file as they are
                // made, and are streamed from there.
                let spool = try await SpooledBody.write(body, in: spoolDirectory)
                spooled = spool
                // The attempt's time limit covers the spooling too.
                if let deadline = transportRequest.attemptDeadline, ContinuousClock.now >= deadline { throw Deadline.Expired() }
                guard let stream = InputStream(url: spool.url) else {
                    throw APIError(.storage, localized: "the spooled request body at \(spool.url.path) cannot be read")
                }
                urlRequest.httpBodyStream = stream
            }
        }

        if URLScheme.isUnixSocket(transportRequest.head.scheme) {
            throw APIError.notSent(
                .invalidRequest, "URLSessionTransport cannot reach a Unix domain socket (\(transportRequest.head.authority ?? "")); use AsyncHTTPClientTransport")
        }
        // URLSession negotiates HTTP/2 by itself: `allowsHTTP2` changes nothing here.
        var tls = transportRequest.head.scheme?.lowercased() == "https" ? transportRequest.tls : TLSSettings()
        tls.allowsHTTP2 = true
        if let refusal = Self.platformRefusal(proxy: transportRequest.proxy, head: transportRequest.head, tls: tls) { throw refusal }
        let (session, delegate) = session(through: transportRequest.proxy, tls: tls)
        if let upgrade = transportRequest.webSocket {
            return try await Self.openWebSocket(urlRequest, upgrade: upgrade, in: session, delegate: delegate, until: transportRequest.attemptDeadline)
        }
        let taskBox = await TaskBox.make(urlRequest, in: session)
        let identifier = taskBox.task.taskIdentifier
        // Told by the delegate as the session writes the body, whatever kind it is.
        if let report = transportRequest.sendProgress { delegate.register(identifier, sendProgress: report) }
        if case .collect(let limit) = transportRequest.bodyReading {
            // Read whole on the session's queue: the calling task resumes once, with everything.
            let collected = try await Self.run(taskBox, on: delegate, until: transportRequest.attemptDeadline) { (whole: CheckedContinuation<SessionDelegate.Collected, any Error>) in
                delegate.register(identifier, collecting: whole, limit: limit, progress: transportRequest.receiveProgress)
            }
            let head = try Self.head(of: collected.head)
            let body: ResponseBodyStream
            switch collected.body {
            case .success(let data): body = ResponseBodyStream(data: data)
            case .failure(let failure): body = ResponseBodyStream(failing: failure)
            }
            var answer = TransportResponse(head: head, body: body, httpVersion: collected.httpVersion ?? "HTTP/1.1")
            answer.timings = collected.timings
            return answer
        }
        let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
        continuation.onTermination = { termination in
            if case .cancelled = termination { taskBox.cancelInBackground() }
        }
        let started = ContinuousClock.now
        let response = try await Self.run(taskBox, on: delegate, until: transportRequest.attemptDeadline) { (head: CheckedContinuation<HTTPURLResponse, any Error>) in
            delegate.register(identifier, head: head, body: continuation)
        }
        var answer = TransportResponse(head: try Self.head(of: response), body: ResponseBodyStream(stream))
        answer.timings.firstByte = started.duration(to: .now)
        return answer
    }

    /// Starts the task once `register` has filed its waiter with the delegate, and waits for
    /// what the delegate resumes it with.
    ///
    /// Cancellation (the caller's, a time limit's) returns at once: URLSession reports a
    /// cancelled task's end through its own queues, which FoundationNetworking can take seconds
    /// to reach under load. The task is torn down in the background.
    private static func run<T: Sendable>(
        _ taskBox: TaskBox, on delegate: SessionDelegate, until deadline: ContinuousClock.Instant?,
        register: (CheckedContinuation<T, any Error>) -> Void
    ) async throws -> T {
        let identifier = taskBox.task.taskIdentifier
        // In the process's one table of timers: no system timer set and torn down per attempt
        // (a dispatch timer source cost two wake-ups of dispatch's manager thread).
        let timer = deadline.map { deadline in
            ExpiryTimers.shared.schedule(at: deadline) {
                // A stream whose head came just as the timer fired keeps its task: its body is
                // still to be read.
                guard delegate.expire(identifier) else { return }
                taskBox.cancelInBackground()
            }
        }
        defer { timer?.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<T, any Error>) in
                register(waiter)
                // Cancelled before the registration: the handler found nothing to end.
                if Task.isCancelled {
                    delegate.abandon(identifier)
                    taskBox.cancelInBackground()
                } else {
                    taskBox.resumeInBackground()
                }
            }
        } onCancel: {
            delegate.abandon(identifier)
            taskBox.cancelInBackground()
        }
    }

    /// URLSession's response head as Callsign's.
    static func head(of response: HTTPURLResponse) throws -> HTTPResponse {
        var fields = HTTPFields()
        for (key, value) in response.allHeaderFields {
            guard let key = key as? String, let name = HTTPField.Name(key), let text = value as? String else { continue }
            // URLSession joins repeated fields with ", "; Set-Cookie is the one that cannot be
            // joined (RFC 9110 §5.3), so it is split again, or the jar would keep one garbled cookie.
            if name == .setCookie {
                for cookie in splitJoinedSetCookie(text) { fields.append(HTTPField(name: name, value: cookie)) }
            } else {
                fields.append(HTTPField(name: name, value: text))
            }
        }
        return HTTPResponse(status: try .checked(response.statusCode), headerFields: fields)
    }

    public func shutdown() async throws {
        let sessions = [session] + proxied.withLock { $0.sessions.values.map(\.session) }
        await TaskBox.offPool { for session in sessions { session.invalidateAndCancel() } }
    }
}

// The one place where this file differs by platform: what URLSession can do on Apple platforms
// and FoundationNetworking (libcurl) cannot on Linux.
#if canImport(FoundationNetworking)
extension URLSessionTransport {
    /// Why this request cannot be sent as configured, if it cannot: FoundationNetworking ignores
    /// `connectionProxyDictionary`, and offers no server-trust challenge and no client
    /// certificate. Refused rather than connected around a proxy, or with weaker checks than the
    /// ones configured. Its URL parsing also refuses IPv6 literal hosts (`http://[::1]/`) as a bad
    /// URL: said plainly, with the way out.
    static func platformRefusal(proxy: Proxy?, head: HTTPRequest, tls: TLSSettings) -> APIError? {
        if head.authority?.hasPrefix("[") == true {
            return APIError.notSent(
                .invalidRequest,
                "URLSessionTransport on Linux cannot reach an IPv6 literal host (FoundationNetworking refuses the URL); use AsyncHTTPClientTransport, the default on Linux")
        }
        if let proxy {
            return APIError.notSent(
                .invalidRequest,
                "URLSessionTransport on Linux cannot go through the proxy \(proxy) (FoundationNetworking ignores proxy settings); use AsyncHTTPClientTransport, the default on Linux")
        }
        if !tls.isDefault {
            return APIError.notSent(
                .invalidRequest,
                "URLSessionTransport does not apply configuration.tls (trust roots, client certificates, pins, minimum version) yet; use AsyncHTTPClientTransport")
        }
        return nil
    }

    /// Sets the lowest TLS version `tls` allows in `configuration`, and returns what puts the
    /// configuration back: nothing to set here (any non-default setting is refused above).
    static func setMinimumVersion(of tls: TLSSettings, in configuration: URLSessionConfiguration) -> () -> Void {
        {}
    }

    /// The queue a session's delegate is called on: here, none. FoundationNetworking makes each
    /// callback (a head, a chunk, the end) an `Operation` on the delegate queue, and each costs
    /// two hops through dispatch, locks and a thread woken; `SessionDelegate` only files what
    /// arrived and resumes a continuation, so it runs where FoundationNetworking calls from: the
    /// session's serial work queue, in the order the callbacks are made.
    static func delegateQueue() -> OperationQueue? { InlineOperationQueue() }

    /// FoundationNetworking opens WebSockets only through a libcurl built with them, which Linux
    /// distributions do not ship: refused, with the way out.
    static func openWebSocket(
        _ request: URLRequest, upgrade: WebSocketUpgrade, in session: URLSession, delegate: SessionDelegate, until deadline: ContinuousClock.Instant?
    ) async throws -> TransportResponse {
        throw APIError.notSent(.invalidRequest, "URLSessionTransport on Linux cannot open a WebSocket (FoundationNetworking has no WebSocket support without a libcurl built with it); use AsyncHTTPClientTransport, the default on Linux")
    }

    /// An operation queue that runs each block it is given at once, on the caller's thread.
    /// FoundationNetworking adds its delegate callbacks as blocks (`addOperation(_:)`) from its
    /// work queue, so the delegate must never wait on that queue: a task's `cancel()` and a
    /// challenge's answer (which cancels, or suspends and resumes the task) both do, and
    /// `SessionDelegate` makes them from another thread. `@unchecked Sendable` restates
    /// `OperationQueue`'s own conformance; this subclass adds no state.
    final class InlineOperationQueue: OperationQueue, @unchecked Sendable {
        override func addOperation(_ block: @escaping @Sendable () -> Void) {
            block()
        }
    }
}
#else
extension URLSessionTransport {
    /// Why this request cannot be sent as configured, if it cannot: URLSession cannot tunnel a
    /// plain http request through a proxy (`Proxy.alwaysTunnels`), and takes a client
    /// certificate as an identity (PKCS#12, or the keychain's through the app's hook), never as
    /// a PEM key.
    static func platformRefusal(proxy: Proxy?, head: HTTPRequest, tls: TLSSettings) -> APIError? {
        if let proxy, proxy.alwaysTunnels, head.scheme?.lowercased() == "http" {
            return APIError.notSent(
                .invalidRequest,
                "URLSessionTransport cannot tunnel a plain http request through the proxy \(proxy) (Proxy.alwaysTunnels); use AsyncHTTPClientTransport")
        }
        if case .pem? = tls.clientIdentity?.material {
            return APIError.notSent(
                .invalidRequest,
                "URLSessionTransport cannot send a client certificate from PEM text (configuration.tls.clientIdentity): give it as PKCS#12 (TLSClientIdentity(pkcs12:password:)), or answer NSURLAuthenticationMethodClientCertificate with a keychain identity in URLSessionHooks.challenge")
        }
        return nil
    }

    /// Sets the lowest TLS version `tls` allows in `configuration` (TLS 1.3 when asked), and
    /// returns what puts the shared configuration back once the session is made.
    static func setMinimumVersion(of tls: TLSSettings, in configuration: URLSessionConfiguration) -> () -> Void {
        let previous = configuration.tlsMinimumSupportedProtocolVersion
        if tls.minimumVersion == .tls13 {
            configuration.tlsMinimumSupportedProtocolVersion = .TLSv13
        } else if previous.rawValue < tls_protocol_version_t.TLSv12.rawValue {
            // An app's configuration that allows TLS 1.0 or 1.1 still gets Callsign's floor.
            configuration.tlsMinimumSupportedProtocolVersion = .TLSv12
        }
        return { configuration.tlsMinimumSupportedProtocolVersion = previous }
    }

    /// The queue a session's delegate is called on: URLSession's own serial queue.
    static func delegateQueue() -> OperationQueue? { nil }
}
#endif
