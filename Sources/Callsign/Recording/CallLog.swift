import Foundation
import HTTPTypes
import Logging

/// What a client's log lines need to know, read once from its configuration.
struct CallLogSettings: Sendable {
    /// The longest body shown by `trace`-level lines.
    let maximumLoggedBodySize: Int
    /// The language of messages in log lines.
    let language: MessageLanguage
    /// The app's own texts for Callsign's sentences.
    let overrides: MessageOverrides?

    init(_ configuration: APIClient.Configuration) {
        maximumLoggedBodySize = configuration.observability.maximumLoggedBodySize
        language = configuration.messageLanguage
        overrides = configuration.messageOverrides
    }
}

/// Callsign's log lines for a call, as a library logs: `debug` and `trace` only, fixed messages,
/// secrets masked in every value.
struct CallLog {
    let logger: Logger?
    private let settings: CallLogSettings
    private let redaction: Redaction

    init(_ context: MiddlewareContext, settings: CallLogSettings) {
        logger = context.fields.logger
        self.settings = settings
        redaction = context.fields.redaction
    }

    /// `debug`: an attempt starts (method and URL as far as known).
    func sending(_ request: Request) {
        guard let logger, logger.logLevel <= .debug else { return }
        logger.debug("sending attempt", metadata: identity(request, mask: SecretMask(redaction: redaction, request: request)))
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
        let mask = SecretMask(redaction: redaction, request: request)
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
        var metadata = identity(response.request, mask: SecretMask(redaction: redaction, request: response.request))
        metadata["callsign.status"] = .stringConvertible(response.status.code)
        metadata["callsign.http_version"] = .string(response.httpVersion)
        metadata["callsign.duration_ms"] = .stringConvertible(response.duration.wholeMilliseconds)
        logger.debug("request finished", metadata: metadata)
    }

    /// `debug`, not `error`: the error is thrown to the caller, who decides what it means.
    func failed(_ error: APIError, request: Request) {
        guard let logger, logger.logLevel <= .debug else { return }
        let mask = SecretMask(redaction: redaction, request: request)
        var metadata = identity(request, mask: mask)
        metadata["callsign.error"] = .string(error.code.shortDescription)
        metadata["callsign.message"] = .string(mask.text(error.message))
        logger.debug("request failed", metadata: metadata)
    }

    private func loggable(_ body: Data, contentType: String?, mask: SecretMask) -> String {
        let redacted = mask.body(body, contentType: contentType)
        let cut = redacted.prefix(settings.maximumLoggedBodySize)
        guard let text = String(data: cut, encoding: .utf8) else { return "<\(body.count) bytes of binary data>" }
        return redacted.count > cut.count ? text + "… (\(redacted.count) bytes)" : text
    }
}

extension APIClient {
    /// A duration for messages: "1.5 s", "250 ms".
    package static func describe(_ duration: Duration) -> String {
        let seconds = duration.seconds
        return seconds >= 1 ? "\(seconds.formatted(.number.precision(.fractionLength(0...2)))) s" : "\(duration.wholeMilliseconds) ms"
    }
}
