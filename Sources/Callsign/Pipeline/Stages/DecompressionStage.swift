import Foundation
import HTTPTypes

/// Content decoding (``MiddlewareStage/decompression``): `gzip` and `deflate` bodies decoded as
/// they are read, within the policy's bounds. Absent when the transport decodes by itself.
struct DecompressionStage: Middleware {
    let policy: DecompressionPolicy
    let bodyLimit: Int

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        var response = try await next(request, context: context)
        guard let stream = response.bodyStream, response.headers[.contentEncoding] != nil else { return response }
        // A download's decoded size is bounded by the policy alone; anything in memory by the cap too.
        let decodedLimit = context.fields.bodyReading.isFile ? policy.maximumDecodedSize : (policy.maximumDecodedSize ?? bodyLimit)
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
