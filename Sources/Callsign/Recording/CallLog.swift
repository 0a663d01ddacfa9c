import Foundation
import HTTPTypes
import Logging
import Tracing

// Logging, metrics and tracing as two stages of the chain, in the manner of Hummingbird's
// middlewares: one around the whole call, one around each attempt.

/// The call's span, metrics and final `debug` line (``MiddlewareStage/observability``):
/// outermost, so it sees the call's whole time and its final outcome.
struct ObservabilityStage: Middleware {
    let telemetry: Telemetry

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        // Without a tracer (the no-op one): no span, no name to format, no context to set.
        let span = telemetry.startSpan("HTTP \(request.method.rawValue)")
        if let span {
            span.attributes["http.request.method"] = request.method.rawValue
            span.attributes["url.full"] = context.configuration.observability.redaction.redact(url: request.path)
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
            if context.logger != nil { CallLog(context).finished(response) }
            return response
        } catch {
            let failure = APIClient.callFailure(error, request: request)
            span?.record(failure: failure)
            telemetry.recordFailure(failure, request: request, duration: .now - started)
            CallLog(context).failed(failure, request: request)
            throw failure
        }
    }
}

/// Each attempt's span, `debug`/`trace` lines and HAR entry (``MiddlewareStage/recording``).
struct RecordingStage: Middleware {
    let telemetry: Telemetry
    let recorder: HARRecorder?

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
        let log = context.logger == nil ? nil : CallLog(context)
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

/// Callsign's log lines for a call, as a library logs: `debug` and `trace` only, fixed messages,
/// secrets masked in every value.
struct CallLog {
    let logger: Logger?
    private let shared: SharedConfiguration

    init(_ context: MiddlewareContext) {
        logger = context.logger
        shared = context.shared
    }

    private var configuration: APIClient.Configuration {
        _read { yield shared.value }
    }

    /// `debug`: an attempt starts (method and URL as far as known).
    func sending(_ request: Request) {
        guard let logger, logger.logLevel <= .debug else { return }
        logger.debug("sending attempt", metadata: identity(request, mask: SecretMask(configuration: configuration, request: request)))
    }

    /// The call's API name, method and masked URL.
    private func identity(_ request: Request, mask: SecretMask) -> Logger.Metadata {
        [
            "callsign.api": .string(request.apiName ?? ""), "callsign.method": .string(request.method.rawValue),
            "callsign.url": .string(mask.url(request.url?.absoluteString ?? request.path)),
        ]
    }

    /// `debug`: the headers sent and received (redacted); `trace`: also both bodies (capped,
    /// redacted) and a cURL line.
    func received(_ response: Response) {
        guard let logger, logger.logLevel <= .debug else { return }
        let request = response.request
        let mask = SecretMask(configuration: configuration, request: request)
        var metadata: Logger.Metadata = [
            "callsign.url": .string(mask.url(request.url?.absoluteString ?? request.path)),
            "callsign.request_headers": .string(
                request.headers.fields.map { "\($0.name): \(mask.header($0.name, $0.value))" }.joined(separator: "\n")),
            "callsign.status": .stringConvertible(response.status.code),
            "callsign.headers": .string(
                response.headers.map { "\($0.name.rawName): \(mask.header($0.name.rawName, $0.value))" }.joined(separator: "\n")),
        ]
        if logger.logLevel <= .trace {
            let sent = response.sentBody?.inMemoryData
            if let sent { metadata["callsign.request_body"] = .string(loggable(sent, contentType: request.headers["Content-Type"], mask: mask)) }
            metadata["callsign.curl"] = .string(CURLCommand(request: request, body: sent, mask: mask).text)
            metadata["callsign.body"] = .string(loggable(response.body, contentType: response.headers[.contentType], mask: mask))
        }
        logger.debug("received response", metadata: metadata)
    }

    /// `debug`: the call's outcome.
    func finished(_ response: Response) {
        guard let logger, logger.logLevel <= .debug else { return }
        var metadata = identity(response.request, mask: SecretMask(configuration: configuration, request: response.request))
        metadata["callsign.status"] = .stringConvertible(response.status.code)
        metadata["callsign.http_version"] = .string(response.httpVersion)
        metadata["callsign.duration_ms"] = .stringConvertible(response.duration.wholeMilliseconds)
        logger.debug("request finished", metadata: metadata)
    }

    /// `debug`, not `error`: the error is thrown to the caller, who decides what it means.
    func failed(_ error: APIError, request: Request) {
        guard let logger, logger.logLevel <= .debug else { return }
        let mask = SecretMask(configuration: configuration, request: request)
        var metadata = identity(request, mask: mask)
        metadata["callsign.error"] = .string(error.code.shortDescription)
        metadata["callsign.message"] = .string(mask.text(error.message))
        logger.debug("request failed", metadata: metadata)
    }

    private func loggable(_ body: Data, contentType: String?, mask: SecretMask) -> String {
        let redacted = mask.body(body, contentType: contentType)
        let cut = redacted.prefix(configuration.observability.maximumLoggedBodySize)
        guard let text = String(data: cut, encoding: .utf8) else { return "<\(body.count) bytes of binary data>" }
        return redacted.count > cut.count ? text + "… (\(redacted.count) bytes)" : text
    }
}

extension APIClient {
    /// A duration for messages: "1.5 s", "250 ms".
    static func describe(_ duration: Duration) -> String {
        let seconds = duration.seconds
        return seconds >= 1 ? "\(seconds.formatted(.number.precision(.fractionLength(0...2)))) s" : "\(duration.wholeMilliseconds) ms"
    }
}
