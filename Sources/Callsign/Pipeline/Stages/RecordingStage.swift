import Foundation
import HTTPTypes
import Tracing

/// Each attempt's span, `debug`/`trace` lines, HAR entry and phase timings for the observers
/// (``MiddlewareStage/recording``).
struct RecordingStage: Middleware {
    let telemetry: Telemetry
    let recorder: HARRecorder?
    let log: CallLogSettings
    let observers: CallObservers

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let span = telemetry.startSpan("HTTP \(request.method.rawValue) attempt")
        defer { span?.end() }
        let spanStart = span == nil ? nil : DefaultTracerClock.now
        var request = request
        if let span {
            // W3C trace context for the server, under this attempt's span.
            var fields = HTTPFields()
            telemetry.activeTracer.inject(span.context, into: &fields, using: HTTPFieldsInjector())
            for field in fields { request.headers[field.name.rawName] = field.value }
        }
        let log = context.fields.logger == nil ? nil : CallLog(context, settings: log)
        log?.sending(request)
        do {
            let response: Response
            if let recorder {
                response = try await recorder.intercept(request, context: context, next: next)
            } else {
                response = try await next(request)
            }
            span?.record(status: response.status.code)
            if let span, let spanStart { span.record(response.timings, httpVersion: response.httpVersion, from: spanStart) }
            if let call = context.fields.observedCall { observers.measured(call, response.timings) }
            log?.received(response)
            return response
        } catch {
            let failure = APIError.wrap(error, request: request)
            span?.record(failure: failure)
            if let call = context.fields.observedCall, let answer = failure.response { observers.measured(call, answer.timings) }
            throw error
        }
    }
}
