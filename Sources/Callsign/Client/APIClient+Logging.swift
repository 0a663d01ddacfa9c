import Foundation
import HTTPTypes
import Logging

extension APIClient {
    /// `debug`: the attempt's headers (redacted); `trace`: also the body (capped, redacted) and a cURL line.
    func logAttempt(_ request: Request, body: HTTPBody?) {
        guard let logger = configuration.logger, logger.logLevel <= .debug else { return }
        let mask = SecretMask(configuration: configuration, request: request)
        var metadata: Logger.Metadata = [
            "callsign.api": .string(request.apiName ?? ""), "callsign.method": .string(request.method.rawValue),
            "callsign.url": .string(mask.url(request.url?.absoluteString ?? request.path)),
            "callsign.headers": .string(request.headers.fields.map { "\($0.name): \(mask.header($0.name, $0.value))" }.joined(separator: "\n")),
        ]
        if logger.logLevel <= .trace {
            if let data = body?.inMemoryData {
                metadata["callsign.body"] = .string(loggable(data, contentType: request.headers["Content-Type"], mask: mask))
            }
            metadata["callsign.curl"] = .string(CURLCommand(request: request, body: body?.inMemoryData, mask: mask).text)
        }
        logger.debug("sending attempt", metadata: metadata)
    }

    func logAttemptResponse(_ response: Response) {
        guard let logger = configuration.logger, logger.logLevel <= .debug else { return }
        let mask = SecretMask(configuration: configuration, request: response.request)
        var metadata: Logger.Metadata = [
            "callsign.status": .stringConvertible(response.status.code),
            "callsign.headers": .string(
                response.headers.map { "\($0.name.rawName): \(mask.header($0.name.rawName, $0.value))" }.joined(separator: "\n")),
        ]
        if logger.logLevel <= .trace {
            metadata["callsign.body"] = .string(loggable(response.body, contentType: response.headers[.contentType], mask: mask))
        }
        logger.debug("received response", metadata: metadata)
    }

    func loggable(_ body: Data, contentType: String?, mask: SecretMask) -> String {
        let redacted = mask.body(body, contentType: contentType)
        let cut = redacted.prefix(configuration.maximumLoggedBodySize)
        guard let text = String(data: cut, encoding: .utf8) else { return "<\(body.count) bytes of binary data>" }
        return redacted.count > cut.count ? text + "… (\(redacted.count) bytes)" : text
    }

    func log(_ response: Response) {
        guard let logger = configuration.logger, logger.logLevel <= .debug else { return }
        logger.debug(
            "request finished",
            metadata: [
                "callsign.api": .string(response.request.apiName ?? ""),
                "callsign.method": .string(response.request.method.rawValue),
                "callsign.url": .string(SecretMask(configuration: configuration, request: response.request).url(response.request.url?.absoluteString ?? "")),
                "callsign.status": .stringConvertible(response.status.code),
                "callsign.duration_ms": .stringConvertible(response.duration.wholeMilliseconds),
            ])
    }

    static func describe(_ duration: Duration) -> String {
        let seconds = duration.seconds
        return seconds >= 1 ? "\(seconds.formatted(.number.precision(.fractionLength(0...2)))) s" : "\(duration.wholeMilliseconds) ms"
    }
}
