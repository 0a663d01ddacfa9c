import Foundation
import HTTPTypes
import Tracing

/// Each attempt's span, `debug`/`trace` lines and HAR entry (``MiddlewareStage/recording``).
struct RecordingStage: Middleware {
    let telemetry: Telemetry
    let recorder: HARRecorder?
    let log: CallLogSettings

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let span = telemetry.startSpan("HTTP \(request.method.rawValue) attempt")
        defer { span?.end() }
        var request = request
        if let span {
            // W3C trace context for the server, under this attempt's span.
            var fields = HTTPFields()
            telemetry.activeTracer.inject(span.context, into: &fields, using: HTTPFieldsInjector())
            for field in fields { request.headers[field.name.rawName] = field.value }
        }
        let log = context.logger == nil ? nil : CallLog(context, settings: log)
        log?.sending(request)
        do {
            let response: Response
            if let recorder {
                response = try await recorder.intercept(request, context: context, next: next)
            } else {
                response = try await next(request)
            }
            span?.record(status: response.status.code)
            log?.received(response)
            return response
        } catch {
            span?.record(failure: APIError.wrap(error, request: request))
            throw error
        }
    }
}
