import Foundation
import HTTPTypes
import Synchronization

/// The end of every chain (``WireStage/transport``): the transport sends the wire form and
/// returns the head; the body is left for the stages above to read. It reports the bytes it
/// moves to the call's progress and idle watch.
struct TransportStage: WireMiddleware {
    let transport: any Transport
    let limits: Limits
    /// Which proxy each request goes through; `nil` for direct connections.
    let proxy: ProxySettings?
    /// Trust, client identity and pins for HTTPS.
    let tls: TLSSettings
    /// Whether the client has an HTTP cache of its own.
    let clientCaches: Bool
    /// What each attempt shows of its origin: an answer, or a connection that never formed.
    let reachability: Reachability

    init(transport: any Transport, configuration: APIClient.Configuration, reachability: Reachability) {
        self.transport = transport
        self.reachability = reachability
        limits = configuration.limits
        proxy = configuration.proxy
        tls = configuration.tls
        clientCaches = configuration.cache != nil
    }

    func intercept(_ request: WireRequest, context: MiddlewareContext, next: WireNext) async throws -> TransportResponse {
        var body = request.body?.limitingUnknownLength(to: limits.maximumRequestBodySize)
        // A body read into memory may be read by the transport with the head, in one step.
        let collects = context.fields.bodyReading == .memory
        let progress = context.fields.progress
        var receiveProgress: (@Sendable (Int64, Int64?) -> Void)?
        if collects, let progress {
            receiveProgress = { received, expected in
                progress.report(TransferProgress(direction: .download, completedBytes: received, totalBytes: expected))
            }
        }
        let watch = context.fields.idleWatch
        if let watch {
            // Every byte either way restarts the idle limit: a head or body received, a chunk sent.
            let report = receiveProgress
            receiveProgress = { received, expected in
                watch.touch()
                report?(received, expected)
            }
        }
        let upload = progress.flatMap { UploadProgress($0, body: request.body) }
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
        if body?.inMemoryData == nil, let watch {
            // A streamed body is activity as the transport reads it.
            body = body?.reportingProgress { _ in watch.touch() }
        }
        var outgoing = request
        outgoing.body = body
        // Under an idle watch the head must come up as soon as it arrives, for the error.
        outgoing.bodyReading = collects && watch == nil ? .collect(limit: limits.maximumResponseBodySize) : .stream
        outgoing.attemptDeadline = context.fields.attemptDeadline
        outgoing.receiveProgress = receiveProgress
        // The transport tells the bytes as it writes them (AsyncHTTPClient as it takes each chunk,
        // URLSession from its delegate): progress by bytes on both, whatever the body.
        if let upload {
            outgoing.sendProgress = { @Sendable (sent: Int64) in
                watch?.touch()
                upload.sent(sent)
            }
        }
        outgoing.proxy = proxy.flatMap { settings in request.url.flatMap(settings.proxy(for:)) }
        outgoing.tls = tls
        outgoing.clientCaches = clientCaches
        outgoing.webSocket = context.fields.webSocket
        var sent: TransportResponse
        let started = reachability.evidenceNow()
        do {
            sent = try await transport.send(outgoing)
        } catch {
            // A time limit says nothing of the origin: it may have been the caller's.
            if !(error is Deadline.Expired), !Task.isCancelled {
                reachability.observe(APIError.wrap(error, request: nil), origin: Self.origin(of: request), attemptStarted: started)
            }
            throw error
        }
        reachability.observe(nil, origin: Self.origin(of: request), attemptStarted: started)
        upload?.finished()
        sent.body = sent.body.watched(by: watch)
        sent.request = request
        return sent
    }

    /// The origin an attempt went to, read from its head once the attempt is over (nothing of it
    /// is held while the transport works).
    private static func origin(of request: WireRequest) -> Origin? {
        Origin(scheme: request.head.scheme, authority: request.head.authority)
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
    private let sink: ProgressReporter
    private let total: Int64
    private let done = Atomic(false)

    /// `nil` for a request without a body of known length.
    init?(_ sink: ProgressReporter, body: TransportBody?) {
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
