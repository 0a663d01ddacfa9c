import Foundation
import Tracing

/// The call's span, metrics and final `debug` line (``MiddlewareStage/observability``):
/// outermost, so it sees the call's whole time and its final outcome. Logging, metrics and
/// tracing are two stages of the chain, in the manner of Hummingbird's middlewares: this one
/// around the whole call, ``RecordingStage`` around each attempt.
struct ObservabilityStage: Middleware {
    let telemetry: Telemetry
    let log: CallLogSettings

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        // Without a tracer (the no-op one): no span, no name to format, no context to set.
        let span = telemetry.startSpan("HTTP \(request.method.rawValue)")
        if let span {
            span.attributes["http.request.method"] = request.method.rawValue
            span.attributes["url.full"] = context.fields.redaction.redact(url: request.path)
            if let apiName = request.apiName { span.attributes["callsign.api"] = apiName }
        }
        defer { span?.end() }
        let started = ContinuousClock.now
        do {
            let response: Response
            if let span {
                response = try await ServiceContext.withValue(span.context) { try await next(request) }
            } else {
                response = try await next(request)
            }
            span?.record(status: response.status.code)
            telemetry.recordSuccess(response)
            if context.fields.logger != nil { CallLog(context, settings: log).finished(response) }
            return response
        } catch {
            let failure = APIClient.callFailure(error, request: request)
            span?.record(failure: failure)
            telemetry.recordFailure(failure, request: request, duration: .now - started)
            CallLog(context, settings: log).failed(failure, request: request)
            throw failure
        }
    }
}
