import Foundation

/// The wire form (``MiddlewareStage/encoding``): the last stage of the request seam. It builds
/// the URL, header fields and body bytes once per attempt, sends them down the wire seam
/// (``WireStage``), and makes the ``Response`` from what comes back — every answer, the
/// network's or a mock's, through the same checks of its head (``Limits``). The response's
/// request reports what was sent, header fields a wire middleware added included.
struct EncodingStage: Middleware {
    let factory: RequestFactory
    let limits: Limits
    /// The wire seam's chain, ending with the transport stage.
    let wire: [any WireMiddleware]

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        var request = request
        let prepared = try factory.prepare(&request, forDownload: context.fields.bodyReading.isFile)
        let encoded = WireRequest(head: prepared.head, body: prepared.body)
        let startedAt = Date()
        let start = ContinuousClock.now
        let answer: TransportResponse
        do {
            answer = try await WireNext(wire, context: context)(encoded)
        } catch {
            throw TransportStage.failure(error, request: request)
        }
        let sent = answer.request ?? encoded
        if sent.headChanged { request.headers = Headers(sent.head.headerFields) }
        let elapsed = ContinuousClock.now - start
        var response = Response(
            request: request, status: answer.head.status, headers: answer.head.headerFields, body: Data(), startedAt: startedAt,
            duration: elapsed, settings: .standard)
        response.timings = answer.timings
        if answer.timings.firstByte == nil { response.timings.firstByte = elapsed }
        response.bodyStream = answer.body
        response.sentBody = sent.body
        response.httpVersion = answer.httpVersion
        response.webSocket = answer.webSocket
        context.fields.idleWatch?.arrived(response)
        do {
            response.declaredLength = try limits.check(answer.head, upgrading: context.fields.webSocket != nil).map { Int(clamping: $0) }
        } catch {
            throw APIError.wrap(error, request: request)
        }
        return response
    }
}
