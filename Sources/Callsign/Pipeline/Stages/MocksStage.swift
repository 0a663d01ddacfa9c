import Foundation

/// Answers from ``APIClient/Configuration/mocks`` or a recorded HAR file in front of the transport
/// (``WireStage/mocks``): a mock sees the request exactly as it would be sent. In the chain only
/// when the client has mocks.
struct MocksStage: WireMiddleware {
    let mocks: Mocks
    /// The most bytes a mock's file may hold (``Limits/maximumResponseBodySize``).
    let bodyLimit: Int

    func intercept(_ request: WireRequest, context: MiddlewareContext, next: WireNext) async throws -> TransportResponse {
        guard let url = request.url else { return try await next(request) }
        // A body that can be read again is shown to the mocks; a one-shot stream is not read
        // here, or the network would get nothing if no mock answers.
        let body = request.body?.isReplayable == true ? try await request.body?.collect() : nil
        let mockRequest = MockRequest(
            method: request.head.method.rawValue, url: url, headers: Headers(request.head.headerFields),
            body: body, apiName: context.fields.apiName, endpoint: context.fields.endpoint, tag: context.fields.tag)
        guard var answer = try await mocks.answer(mockRequest, bodyLimit: bodyLimit) else { return try await next(request) }
        answer.request = request
        return answer
    }
}
