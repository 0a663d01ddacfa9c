import Foundation
import HTTPTypes
import Synchronization

// The stages at the bottom of every chain, from the per-attempt time limit down to the
// transport. Each does one thing; together they are the one way a request is sent.

/// The per-attempt time limits (``MiddlewareStage/timeout``): a request's own ``Request/Fields/timeout``,
/// else the client's ``APIClient/Configuration/Timeouts/attempt``, and the idle limit
/// (``APIClient/Configuration/Timeouts/idle``). A transport that enforces deadlines itself is
/// handed the instant; any other attempt, and any attempt the idle limit can end sooner, is
/// raced against one timer. A stream's body, read after the attempt, waits for each chunk under
/// the idle limit and the call's deadline.
struct TimeoutStage: Middleware {
    let attempt: Duration
    /// No byte for this long ends the call; `nil` for no idle limit.
    let idle: Duration?
    /// The client's deadline, for the message when it ends a stream's body.
    let deadline: Duration?
    let transportEnforcesDeadlines: Bool

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let consumer = context.call.origin.consumer
        // A download's length has no natural bound: only an explicit timeout limits one attempt.
        let limit = request.timeout ?? (consumer.isFile ? nil : attempt)
        var context = context
        // An attempt that must be over within the idle limit cannot stay idle for longer: no watch.
        let watch = idle.flatMap { idle in limit.map { $0 <= idle } == true ? nil : IdleWatch(limit: idle) }
        context.call.idleWatch = watch
        var response: Response
        do {
            if watch == nil, let limit, transportEnforcesDeadlines, !consumer.isFile {
                // No timer task: the transport ends the attempt at the instant. (A file's body is
                // written above the transport, so only a race can bound it.)
                context.call.attemptDeadline = .now + limit
                response = try await next(request, context: context)
            } else {
                let bounded = context
                response = try await Deadline.run(until: limit.map { .now + $0 }, idle: watch) {
                    try await next(request, context: bounded)
                }
            }
        } catch let error as Deadline.Idle {
            throw Self.idle(error.limit, request: request, response: watch?.arrivedHead)
        } catch let error as Deadline.Expired {
            guard let limit else { throw error }
            throw Self.expired(limit, request: request)
        } catch let error as APIError where error.code == .timedOut && error.underlyingError == nil {
            // A custom transport's own deadline error: say which limit it was.
            guard let limit else { throw error }
            throw Self.expired(limit, request: error.request ?? request)
        }
        if case .stream = consumer, let body = response.bodyStream {
            let deadline = request.deadline ?? deadline
            let head = response
            response.bodyStream = body.timed(idle: idle, until: context.call.deadline) { error in
                switch error {
                case let error as Deadline.Idle:
                    return Self.idle(error.limit, request: head.request, response: head)
                case let expired as Deadline.Expired:
                    let failure = APIError(
                        .timedOut, localized: "the deadline of \(APIClient.describe(deadline ?? .zero)) passed before the call completed",
                        request: head.request, underlyingError: expired)
                    return BodyStage.bodyFailure(failure, response: head)
                default:
                    return error
                }
            }
        }
        return response
    }

    private static func expired(_ limit: Duration, request: Request) -> APIError {
        APIError(.timedOut, localized: "no complete answer within \(APIClient.describe(limit))", request: request, underlyingError: Deadline.Expired())
    }

    /// The idle limit passed; with `response`, while its body arrived.
    private static func idle(_ limit: Duration, request: Request, response: Response?) -> APIError {
        let failure = APIError(
            .timedOut, localized: "no byte arrived for \(APIClient.describe(limit)): the idle limit (timeouts.idle) passed",
            request: request, underlyingError: Deadline.Idle(limit: limit))
        return response.map { BodyStage.bodyFailure(failure, response: $0) } ?? failure
    }
}

/// How the body is read (``MiddlewareStage/body``): collected in memory up to the client's cap,
/// handed to the caller as a stream, or written to a file with resume. Reports download progress.
struct BodyStage: Middleware {
    let limit: Int

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        switch context.call.origin.consumer {
        case .memory:
            return try await collect(request, context: context, next: next)
        case .stream:
            return try await next(request, context: context)
        case .file(let destination, let resuming):
            return try await FileDownload.transfer(request, to: destination, resuming: resuming, context: context, next: next)
        }
    }

    private func collect(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let start = ContinuousClock.now
        let progress = context.call.origin.progress
        var response = try await next(request, context: context)
        guard let stream = response.bodyStream else { return response }
        do {
            response.body = try await Self.read(stream, limit: limit, declared: response.declaredLength, progress: progress)
        } catch {
            throw Self.bodyFailure(error, response: response)
        }
        response.bodyStream = nil
        response.duration = ContinuousClock.now - start
        // Ends at 1 also without a Content-Length, or once a compressed body is decoded.
        progress?.report(
            TransferProgress(direction: .download, completedBytes: Int64(response.body.count), totalBytes: Int64(response.body.count)))
        return response
    }

    /// Reads a body whole: at once when it is in memory already, else chunk by chunk, failing
    /// past `limit` before it is read (by its declared length) or as soon as it grows past it.
    static func read(_ body: ResponseBodyStream, limit: Int, declared: Int?, progress: ProgressSink?) async throws -> Data {
        if let declared, declared > limit { throw ResponseBodyStream.tooLarge(limit) }
        guard let progress, body.inMemoryData == nil else { return try await body.collect(upTo: limit) }
        var data = Data()
        if let declared { data.reserveCapacity(declared) }
        let total = declared.map(Int64.init)
        progress.report(TransferProgress(direction: .download, completedBytes: 0, totalBytes: total))
        for try await chunk in body {
            guard data.count + chunk.count <= limit else { throw ResponseBodyStream.tooLarge(limit) }
            data.append(chunk)
            progress.report(TransferProgress(direction: .download, completedBytes: Int64(data.count), totalBytes: total))
        }
        return data
    }

    /// A failure while the body arrived: the head had come, so the response is attached and the
    /// error says that the answer had started.
    static func bodyFailure(_ error: any Error, response: Response) -> APIError {
        var failure = APIError.wrap(error, request: response.request)
        if failure.code == .transport, !failure.responseStarted {
            failure.text = "the connection broke while the body arrived: \(Redaction.redact(String(describing: error)))"
        }
        failure.responseStarted = true
        if failure.response == nil {
            var head = response
            head.bodyStream = nil
            failure.response = head
        }
        return failure
    }
}

/// Content decoding (``MiddlewareStage/decompression``): `gzip` and `deflate` bodies decoded as
/// they are read, within the policy's bounds. Absent when the transport decodes by itself.
struct DecompressionStage: Middleware {
    let policy: DecompressionPolicy
    let bodyLimit: Int

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        var response = try await next(request, context: context)
        guard let stream = response.bodyStream, response.headers[.contentEncoding] != nil else { return response }
        // A download's decoded size is bounded by the policy alone; anything in memory by the cap too.
        let decodedLimit = context.call.origin.consumer.isFile ? policy.maximumDecodedSize : (policy.maximumDecodedSize ?? bodyLimit)
        let head = HTTPResponse(status: response.status, headerFields: response.headers)
        do {
            let (decoded, decodedHead) = try ContentDecoding.decode(stream, head: head, policy: policy, decodedLimit: decodedLimit)
            response.bodyStream = decoded
            response.headers = decodedHead.headerFields
            response.declaredLength = nil
        } catch {
            throw BodyStage.bodyFailure(error, response: response)
        }
        return response
    }
}

/// The wire form (``MiddlewareStage/encoding``): URL, header fields and body bytes, built once
/// per attempt. The ``Request`` passed on, and the response's request, report what is sent.
struct EncodingStage: Middleware {
    let factory: RequestFactory

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        var request = request
        var context = context
        context.call.wire = try factory.prepare(
            &request, resolved: context.call.resolvedTarget, forDownload: context.call.origin.consumer.isFile)
        return try await next(request, context: context)
    }
}

/// ``APIClient/Configuration/preProcess`` on the wire head (``MiddlewareStage/preProcess``).
struct PreProcessStage: Middleware {
    let change: @Sendable (HTTPRequest) async throws -> HTTPRequest

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard var wire = context.call.wire else { return try await next(request, context: context) }
        do {
            wire.head = try await change(wire.head)
        } catch {
            throw APIError.wrap(error, request: request, defaultCode: .invalidRequest, context: "preProcess failed")
        }
        var context = context
        context.call.wire = wire
        return try await next(request, context: context)
    }
}

/// Answers from ``APIClient/Configuration/mocks`` in front of the transport (``MiddlewareStage/mocks``).
struct MocksStage: Middleware {
    let mocks: Mocks

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard let wire = context.call.wire else { return try await next(request, context: context) }
        let startedAt = Date()
        let start = ContinuousClock.now
        let mockRequest = MockRequest(
            method: wire.head.method.rawValue, url: wire.url, headers: Headers(wire.head.headerFields),
            body: try await wire.body?.collect(), apiName: context.call.apiName, endpoint: context.call.origin.endpoint, tag: request.tag)
        let answer: TransportResponse?
        do {
            answer = try await mocks.answer(mockRequest)
        } catch {
            throw TransportStage.failure(error, request: request)
        }
        guard let answer else { return try await next(request, context: context) }
        return try TransportStage.response(answer, request: request, wire: wire, startedAt: startedAt, duration: .now - start)
    }
}

/// The end of every chain (``MiddlewareStage/transport``): the transport sends the wire form and
/// returns the head; the body is left for the stages above to read.
struct TransportStage: Middleware {
    let transport: any Transport
    let limits: Limits
    /// Which proxy each request goes through; `nil` for direct connections.
    let proxy: ProxySettings?
    /// Trust, client identity and pins for HTTPS.
    let tls: TLSSettings
    /// Whether the client has an HTTP cache of its own.
    let clientCaches: Bool

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard let wire = context.call.wire else {
            throw APIError(.invalidRequest, localized: "the request reached the transport without its wire form", request: request)
        }
        let startedAt = Date()
        let start = ContinuousClock.now
        var body = wire.body?.limitingUnknownLength(to: limits.maximumRequestBodySize)
        // A body read into memory may be read by the transport with the head, in one step.
        let collects: Bool
        if case .memory = context.call.origin.consumer { collects = true } else { collects = false }
        let progress = context.call.origin.progress
        var receiveProgress: (@Sendable (Int64, Int64?) -> Void)?
        if collects, let progress {
            receiveProgress = { received, expected in
                progress.report(TransferProgress(direction: .download, completedBytes: received, totalBytes: expected))
            }
        }
        let watch = context.call.idleWatch
        if let watch {
            // Every byte either way restarts the idle limit: a head or body received, a chunk sent.
            let report = receiveProgress
            receiveProgress = { received, expected in
                watch.touch()
                report?(received, expected)
            }
        }
        let upload = progress.flatMap { UploadProgress($0, body: wire.body) }
        if let upload {
            upload.started()
            // The upload is complete once the answer starts: said before the first download report.
            if let report = receiveProgress {
                receiveProgress = { @Sendable (received: Int64, expected: Int64?) in
                    upload.finished()
                    report(received, expected)
                }
            }
        }
        if body?.inMemoryData == nil, upload != nil || watch != nil {
            // A streamed body reports each chunk as the transport takes it.
            body = body?.reportingProgress { sent in
                watch?.touch()
                upload?.sent(sent)
            }
        }
        let sent: TransportResponse
        do {
            sent = try await transport.send(
                TransportRequest(
                    head: wire.head, body: body,
                    // Under an idle watch the head must come up as soon as it arrives, for the error.
                    bodyReading: collects && watch == nil ? .collect(limit: limits.maximumResponseBodySize) : .stream,
                    deadline: context.call.attemptDeadline, receiveProgress: receiveProgress,
                    proxy: proxy?.proxy(for: wire.url), tls: tls, clientCaches: clientCaches))
        } catch {
            throw Self.failure(error, request: request)
        }
        upload?.finished()
        var response = try Self.response(sent, request: request, wire: wire, startedAt: startedAt, duration: .now - start)
        response.bodyStream = sent.body.watched(by: watch)
        watch?.arrived(response)
        do {
            response.declaredLength = try limits.check(sent.head).map { Int(clamping: $0) }
        } catch {
            throw APIError.wrap(error, request: request)
        }
        return response
    }

    /// A response with its body still to be read.
    static func response(
        _ sent: TransportResponse, request: Request, wire: PreparedRequest, startedAt: Date, duration: Duration
    ) throws(APIError) -> Response {
        var response = Response(
            request: request, status: sent.head.status, headers: sent.head.headerFields, body: Data(), startedAt: startedAt,
            duration: duration, settings: .standard)
        response.bodyStream = sent.body
        response.sentBody = wire.body
        response.httpVersion = sent.httpVersion
        return response
    }

    /// A transport's failure as an ``APIError`` naming the request; a deadline is left to the
    /// timeout stage, which knows the limit.
    static func failure(_ error: any Error, request: Request) -> any Error {
        if error is Deadline.Expired { return error }
        if Task.isCancelled || error is CancellationError {
            return APIError(.cancelled, localized: "the call was cancelled", request: request, underlyingError: error)
        }
        return APIError.wrap(error, request: request)
    }
}

/// One attempt's upload progress: 0 when it starts, each chunk of a streamed body, and the total
/// exactly once when it is over.
private final class UploadProgress: Sendable {
    private let sink: ProgressSink
    private let total: Int64
    private let done = Atomic(false)

    /// `nil` for a request without a body of known length.
    init?(_ sink: ProgressSink, body: TransportBody?) {
        guard let length = body?.count else { return nil }
        self.sink = sink
        total = Int64(length)
    }

    func started() { sent(0) }

    func sent(_ bytes: Int64) {
        sink.report(TransferProgress(direction: .upload, completedBytes: bytes, totalBytes: total))
    }

    func finished() {
        guard !done.exchange(true, ordering: .relaxed) else { return }
        sent(total)
    }
}
