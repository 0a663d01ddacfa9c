import Callsign
import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Bodies between swift-openapi-runtime and Callsign, passed chunk by chunk.
enum RuntimeBody {
    /// The length the runtime is told: the `Content-Length`, read as the transports read it.
    static func length(of head: HTTPResponse) -> OpenAPIRuntime.HTTPBody.Length {
        guard let value = try? ContentLength.parse(head.headerFields) else { return .unknown }
        return .known(value)
    }

    /// The request body Callsign sends for a runtime body: replayable when the runtime can iterate
    /// it again (redirects and retries may resend it), else a one-shot stream — or, when
    /// `buffered` (an operation that may be queued offline), read into memory up to `limit` bytes.
    static func requestBody(
        _ body: OpenAPIRuntime.HTTPBody, contentType: String?, buffered: Bool, limit: Int
    ) async throws(APIError) -> RequestBody {
        var length: Int?
        if case .known(let known) = body.length {
            guard let exact = Int(exactly: known), exact >= 0 else {
                throw APIError(.encoding, localized: "the request body's length \(known) is not a possible size")
            }
            length = exact
        }
        if buffered && body.iterationBehavior == .single {
            if let length, length > limit {
                throw APIError(.encoding, localized: "the request body has \(length) bytes; at most \(limit) can be kept for the offline queue (Limits.maximumResponseBodySize)")
            }
            do {
                let bytes = try await [UInt8](collecting: body, upTo: limit)
                return RequestBody(content: .data(Data(bytes)), contentType: contentType)
            } catch {
                throw APIError(
                    .encoding, localized: "the request body could not be read into memory for the offline queue (at most \(limit) bytes): \(error)",
                    underlyingError: error)
            }
        }
        switch body.iterationBehavior {
        case .multiple:
            return RequestBody(content: .factory(length: length) { ResponseBodyStream(body.map { Data($0) }) }, contentType: contentType)
        case .single:
            return RequestBody(content: .stream(body.map { Data($0) }, length: length), contentType: contentType)
        }
    }
}
