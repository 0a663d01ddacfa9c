#if AsyncHTTPClient && (os(Linux) || os(Android) || os(Windows))
public import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOFoundationEssentialsCompat
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A transport on AsyncHTTPClient (SwiftNIO): the default on Linux.
///
/// It either owns its `HTTPClient` (and shuts it down in ``shutdown()``, or when the transport
/// is released) or borrows one you manage:
///
/// ```swift
/// let transport = AsyncHTTPClientTransport()               // owns a client
/// defer { Task { try await transport.shutdown() } }
/// let client = APIClient(definitions: definitions, transport: transport)
///
/// let shared = AsyncHTTPClientTransport(client: myHTTPClient)   // borrows; you shut it down
/// ```
///
/// The client it creates never follows redirects and never decompresses (Callsign does both
/// itself, under its own rules), does not retry failed connection attempts behind Callsign's
/// back (the retry policy does that), emits no spans of its own (Callsign traces each attempt),
/// and uses the shared singleton event loop group.
public final class AsyncHTTPClientTransport: Transport {
    private let owner: ClientOwner

    /// The `HTTPClient` underneath (for tests of its settings).
    var httpClient: HTTPClient { owner.client }

    /// The process-wide transport every ``APIClient`` uses unless given another. It lives as
    /// long as the process and is never shut down.
    public static let shared = AsyncHTTPClientTransport()

    /// Creates a transport that owns a new `HTTPClient` with Callsign's settings.
    ///
    /// ```swift
    /// // A server that accepts only a few connections per client:
    /// let transport = AsyncHTTPClientTransport(maximumConnectionsPerHost: 4)
    /// ```
    ///
    /// - Parameters:
    ///   - connectTimeout: how long to wait for a connection. Default 10 seconds.
    ///   - maximumConnectionsPerHost: how many HTTP/1.1 connections may be open to one host at
    ///     once; they are opened as requests need them, and requests beyond the limit wait for a
    ///     free one (see ``APIClient/Configuration/Tasks/concurrency``). Default 64: 32 and 64
    ///     concurrent calls to one host then run as fast as with a tuned pool (AsyncHTTPClient's
    ///     own default of 8 gave 0.70× and 0.61× of raw AsyncHTTPClient with a pool of 32, 64
    ///     gave 0.78× at both). HTTP/2 servers get one connection.
    public init(connectTimeout: Duration = .seconds(10), maximumConnectionsPerHost: Int = 64) {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(1, maximumConnectionsPerHost)
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        configuration.timeout = HTTPClient.Configuration.Timeout(
            connect: .nanoseconds(connectTimeout.nanoseconds))
        configuration.httpVersion = .automatic
        // A refused or unreachable host fails at once instead of being retried silently until
        // the connect timeout: Callsign's own retry policy (visible, with back-off and a
        // deadline) handles flaky connections, and the offline store learns quickly that the
        // server cannot be reached.
        configuration.connectionPool.retryConnectionEstablishment = false
        // Callsign traces each attempt itself (configuration.tracer, or the bootstrapped one):
        // AsyncHTTPClient's own spans would duplicate them.
        configuration.tracing.tracer = nil
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        owner = ClientOwner(client: client, owned: true, configuration: configuration)
    }

    /// Creates a transport that borrows `client`; you remain responsible for shutting it down.
    /// Configure it not to follow redirects, so Callsign's redirect policy applies.
    public init(client: HTTPClient) {
        owner = ClientOwner(client: client, owned: false)
    }

    /// Sends a request. A body read whole (``WireRequest/BodyReading/collect(limit:)``) is
    /// read on the event loop with the head, under the attempt's deadline, through
    /// AsyncHTTPClient's delegate API: the calling task resumes once, with everything. A streamed
    /// body is handed over as it arrives, and the deadline covers the wait for the head.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var counted = request
        if let report = request.sendProgress {
            // Told as AsyncHTTPClient takes each chunk (a body in memory goes in slices then).
            counted.body = request.body?.reportingProgress(report)
        }
        let request = counted
        if let upgrade = request.webSocket {
            return try await openWebSocket(request, upgrade: upgrade)
        }
        if case .collect(let limit) = request.bodyReading, request.body?.inMemoryData != nil || request.body == nil {
            return try await sendAndCollect(request, limit: limit)
        }
        guard let deadline = request.attemptDeadline else { return try await stream(request) }
        return try await Deadline.run(until: deadline) { try await self.stream(request) }
    }

    /// A WebSocket handshake (``WireRequest/webSocket``): AsyncHTTPClient has no upgrade, so
    /// ``WebSocketConnector`` makes the connection on the client's event loops, under the
    /// attempt's deadline, its failures told as the client's are.
    private func openWebSocket(_ request: TransportRequest, upgrade: WebSocketUpgrade) async throws -> TransportResponse {
        do {
            let group = owner.client.eventLoopGroup
            guard let deadline = request.attemptDeadline else {
                return try await WebSocketConnector.connect(request, upgrade: upgrade, group: group)
            }
            return try await Deadline.run(until: deadline) { try await WebSocketConnector.connect(request, upgrade: upgrade, group: group) }
        } catch let error as APIError {
            throw error
        } catch is Deadline.Expired {
            throw Deadline.Expired()
        } catch {
            throw await failure(error, request: request)
        }
    }

    /// This transport enforces ``WireRequest/attemptDeadline``: no timer task of Callsign's per attempt.
    public var enforcesAttemptDeadlines: Bool { true }

    private func stream(_ request: TransportRequest) async throws -> TransportResponse {
        let head = request.head
        let (url, headers) = Self.outbound(request)
        var outbound = HTTPClientRequest(url: url)
        outbound.method = NIOHTTP1.HTTPMethod(rawValue: head.method.rawValue)
        outbound.headers = headers
        if let body = request.body {
            if let data = body.inMemoryData {
                outbound.body = .bytes(ByteBuffer(bytes: data))
            } else {
                // Files, multipart forms with files and streams go out as they are read.
                let length: HTTPClientRequest.Body.Length = body.count.map { .known(Int64($0)) } ?? .unknown
                outbound.body = .stream(try body.chunks().map { ByteBuffer(bytes: $0) }, length: length)
            }
        }
        let response: HTTPClientResponse
        let started = ContinuousClock.now
        do {
            response = try await owner.client(for: request).execute(outbound, deadline: .distantFuture)
        } catch {
            throw await failure(error, request: request)
        }
        let firstByte = started.duration(to: .now)
        try Self.checkForwardingProxy(response.status, request: request)
        var answer = TransportResponse(
            head: Self.responseHead(response.status, response.headers), body: ResponseBodyStream(response.body.map { Data($0.readableBytesView) }),
            httpVersion: Self.harVersion(response.version))
        answer.timings.firstByte = firstByte
        return answer
    }

    /// Reads head and body in one step on the event loop, under the deadline.
    ///
    /// The request is handed to AsyncHTTPClient on one of its event loops, in one hop: the
    /// deadline's timer and the callbacks on the answer are then set up on the loop where they
    /// run. Handed over from the calling thread instead, each of the three would wake the loop on
    /// its own (a write to its wake-up descriptor, and on a busy core a thread switch).
    private func sendAndCollect(_ request: TransportRequest, limit: Int) async throws -> TransportResponse {
        let head = request.head
        let (url, headers) = Self.outbound(request)
        let outbound = try HTTPClient.Request(
            url: url, method: NIOHTTP1.HTTPMethod(rawValue: head.method.rawValue),
            headers: headers,
            body: request.body?.inMemoryData.map { .byteBuffer(ByteBuffer(bytes: $0)) })
        let delegate = CollectingDelegate(limit: limit, progress: request.receiveProgress)
        let client = try owner.client(for: request)
        // No deadline, no timer: AsyncHTTPClient schedules one for any deadline it is given.
        let deadline = request.attemptDeadline.map(Self.nioDeadline)
        let submission = Submission()
        let (responseHead, buffer, timings): CollectingDelegate.Response
        do {
            (responseHead, buffer, timings) = try await owner.handOff { loop in
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { (answer: CheckedContinuation<CollectingDelegate.Response, any Error>) in
                        loop.execute {
                            // On the loop, AsyncHTTPClient keeps the request on it where it can,
                            // so the answer arrives where its callbacks are.
                            guard let task = submission.start({ client.execute(request: outbound, delegate: delegate, deadline: deadline) }) else {
                                answer.resume(throwing: CancellationError())
                                return
                            }
                            task.futureResult.whenComplete { answer.resume(with: $0) }
                        }
                    }
                } onCancel: {
                    submission.cancel()
                }
            }
        } catch let error as HTTPClientError where error == .deadlineExceeded {
            throw Deadline.Expired()
        } catch let error as HTTPClientError where error == .cancelled {
            throw CancellationError()
        } catch {
            // Once the head is in, a failure belongs to the body: the head is handed back with a
            // body that fails as it did, so the caller's error still holds status and headers.
            guard let (arrived, timings) = delegate.arrived else {
                if error is APIError { throw error }
                throw await failure(error, request: request)
            }
            var answer = TransportResponse(
                head: Self.responseHead(arrived.status, arrived.headers), body: ResponseBodyStream(failing: ResponseBodyStream.failureAfterHead(error)),
                httpVersion: Self.harVersion(arrived.version))
            answer.timings = timings
            return answer
        }
        try Self.checkForwardingProxy(responseHead.status, request: request)
        // A large body is handed over where it lies (the buffer the delegate collected it into,
        // never a read buffer of NIO's); a small one is copied, as AsyncHTTPClient decides.
        let body = buffer.getData(at: buffer.readerIndex, length: buffer.readableBytes, byteTransferStrategy: .automatic) ?? Data()
        var answer = TransportResponse(
            head: Self.responseHead(responseHead.status, responseHead.headers), body: ResponseBodyStream(data: body),
            httpVersion: Self.harVersion(responseHead.version))
        answer.timings = timings
        return answer
    }

    /// The URL and header fields AsyncHTTPClient is given for `request`: its own, or — for a plain
    /// `http://` request that goes to a forward proxy in absolute form (``Proxy/forwards(scheme:)``)
    /// — the proxy's address with the request's path, the origin in `Host` (from which
    /// ``AbsoluteFormWriter`` writes the request line) and the proxy's credentials in
    /// `Proxy-Authorization`, which the proxy consumes: they reach the proxy only.
    static func outbound(_ request: TransportRequest) -> (url: String, headers: NIOHTTP1.HTTPHeaders) {
        let head = request.head
        var headers = nioHeaders(head.headerFields)
        guard let proxy = request.proxy, proxy.forwards(scheme: head.scheme), let authority = head.authority else {
            return (head.urlString, headers)
        }
        headers.replaceOrAdd(name: "Host", value: authority)
        if let authorization = proxy.authorizationValue { headers.replaceOrAdd(name: "Proxy-Authorization", value: authorization) }
        return ("http://\(proxy.authority)\(head.path ?? "/")", headers)
    }

    /// A forward proxy's `407` is the proxy's refusal, not the origin's answer: the same error as
    /// when it refuses a tunnel, and the request never reached the origin.
    static func checkForwardingProxy(_ status: HTTPResponseStatus, request: TransportRequest) throws(APIError) {
        guard status == .proxyAuthenticationRequired, let proxy = request.proxy, proxy.forwards(scheme: request.head.scheme) else { return }
        let host = "the proxy \(proxy) for \(request.head.authority ?? "unknown host")"
        throw .notSent(.transport, "\(host) asks for credentials (407 Proxy Authentication Required)")
    }

    /// A continuous-clock instant as NIO's deadline, clamped so that no arithmetic can overflow.
    static func nioDeadline(_ deadline: ContinuousClock.Instant) -> NIODeadline {
        .now() + .nanoseconds(deadline.nanosecondsFromNow)
    }

    static func nioHeaders(_ fields: HTTPFields) -> NIOHTTP1.HTTPHeaders {
        var headers = NIOHTTP1.HTTPHeaders()
        headers.reserveCapacity(fields.count)
        for field in fields { headers.add(name: field.name.rawName, value: field.value) }
        return headers
    }

    static func responseHead(_ status: HTTPResponseStatus, _ headers: NIOHTTP1.HTTPHeaders) -> HTTPResponse {
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count)
        for (name, value) in headers {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        return HTTPResponse(status: HTTPResponse.Status(code: Int(status.code), reasonPhrase: status.reasonPhrase), headerFields: fields)
    }

    /// A protocol version as HAR writes it.
    static func harVersion(_ version: HTTPVersion) -> String {
        // The usual versions as constants: no text is built per response.
        switch (version.major, version.minor) {
        case (1, 1): "HTTP/1.1"
        case (2, _): "HTTP/2"
        case (1, 0): "HTTP/1.0"
        case (let major, let minor): major >= 2 ? "HTTP/\(major)" : "HTTP/\(major).\(minor)"
        }
    }

    /// ``classify(_:authority:proxy:)``, and for a chain that did not verify, a look at why: a
    /// second handshake that only reads the server's certificates tells an expired certificate
    /// from an untrusted one (AsyncHTTPClient does not say which check failed).
    private func failure(_ error: any Error, request: TransportRequest) async -> any Error {
        guard var classified = Self.classify(error, authority: request.head.authority, proxy: request.proxy) else { return error }
        if classified.code == .certificateUntrusted, request.proxy == nil, let authority = request.head.authority,
            let (host, port) = ConnectionOptions.hostAndPort(of: authority, defaultPort: 443),
            await CertificateDiagnosis.presentsCertificateOutsideValidity(
                host: host, port: port, group: owner.client.eventLoopGroup,
                within: request.attemptDeadline.map { ContinuousClock.now.duration(to: $0) } ?? .seconds(60))
        {
            classified.code = .certificateExpired
            classified.text = "the certificate of \(authority) has expired or is not valid yet" as LocalizedMessage
        }
        return classified
    }

    /// AsyncHTTPClient's failures in words, with what is known of delivery: a refused or
    /// unreachable connection and a failed TLS handshake sent nothing; TLS trust failures are
    /// ``APIError/Code/tls``. `nil` for anything else (mapped later as a transport failure that
    /// may have been sent).
    static func classify(_ error: any Error, authority: String?, proxy: Proxy? = nil) -> APIError? {
        // Through a proxy, a connection failure is the proxy's: name it (credentials redacted).
        let host = proxy.map { "the proxy \($0) for \(authority ?? "unknown host")" } ?? authority ?? "unknown host"
        switch error {
        case let error as HTTPClientError where error == .proxyAuthenticationRequired:
            return .notSent(.transport, "\(host) asks for credentials (407 Proxy Authentication Required)", underlyingError: error)
        case let error as HTTPClientError where error == .invalidProxyResponse:
            return .notSent(.transport, "\(host) did not open a tunnel to the server", underlyingError: error)
        case let error as HTTPClientError where error == .httpProxyHandshakeTimeout:
            return .notSent(.transport, "\(host) did not answer CONNECT in time", underlyingError: error)
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return .notSent(.transport, "the server refused the connection (\(host))", underlyingError: error)
            case EHOSTUNREACH: return .notSent(.transport, "no route to the host (\(host))", underlyingError: error)
            case ENETUNREACH: return .notSent(.transport, "the network is unreachable (\(host))", underlyingError: error)
            case ECONNRESET: return APIError(.transport, localized: "the server reset the connection (\(host))", underlyingError: error)
            case ETIMEDOUT: return APIError(.transport, localized: "the connection timed out (\(host))", underlyingError: error)
            default:
                return APIError(.transport, localized: "the connection failed (\(String(cString: strerror(error.errnoCode)))) (\(host))", underlyingError: error)
            }
        case let error as PinMismatch:
            return .notSent(
                .certificatePinMismatch, "the certificate of \(host) has none of the public keys pinned for it (configuration.tls.pins)",
                underlyingError: error)
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return .notSent(.certificateHostMismatch, "the certificate of \(host) is valid, but for another host name", underlyingError: error)
        case let error as NIOSSLError:
            if case .handshakeFailed(let reason) = error, "\(reason)".contains("CERTIFICATE_VERIFY_FAILED") {
                return .notSent(
                    .certificateUntrusted, "the certificate of \(host) does not lead to a trusted root (configuration.tls.trustRoots)",
                    underlyingError: error)
            }
            return .notSent(.tls, "TLS with \(host) failed: \(error); the server's certificate or handshake was refused", underlyingError: error)
        case let error as NIOSSLExtraError:
            return .notSent(.tls, "TLS with \(host) failed: \(error)", underlyingError: error)
        case let error as HTTPClientError where error == .connectTimeout:
            return .notSent(.transport, "the connection to \(host) timed out", underlyingError: error)
        case let error as HTTPClientError where error == .tlsHandshakeTimeout:
            return .notSent(.transport, "the TLS handshake with \(host) timed out", underlyingError: error)
        case let error as NIOConnectionError:
            return .notSent(.transport, "the server could not be reached (\(host))", underlyingError: error)
        default:
            return nil
        }
    }

    /// The client's event loops as a task executor. A task that prefers it runs on the loop
    /// where its response arrives: no hop to a pool thread and back per response. The client
    /// starts its own tasks on it (``APIClient/Configuration/Tasks/usesTransportExecutor``); use it for
    /// your calling tasks too, when they mostly wait on calls:
    ///
    /// ```swift
    /// let transport = AsyncHTTPClientTransport.shared
    /// try await withTaskExecutorPreference(transport.preferredTaskExecutor) {
    ///     for id in ids { _ = try await client.call("User", parameters: ["id": .int(id)]) }
    /// }
    /// ```
    ///
    /// Keep heavy work out of such tasks: while it runs, the loop serves no other connection.
    /// With a borrowed `HTTPClient` on an event loop group of your own, the executor works while
    /// that group runs.
    public var preferredTaskExecutor: (any TaskExecutor)? { owner.executor }

    /// Shuts down the owned `HTTPClient`; does nothing for a borrowed one or the shared transport.
    public func shutdown() async throws {
        guard owner.owned, self !== Self.shared else { return }
        try await owner.shutdown()
    }
}

#endif
