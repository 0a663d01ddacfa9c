public import Foundation
import Synchronization

/// Records every exchange that passes it to an HTTP Archive (HAR 1.2) file, with timings,
/// headers and bodies — redacted, so secrets never reach the file.
///
/// Set it as ``APIClient/Configuration/Observability/recorder`` to record every attempt of every
/// call at the ``MiddlewareStage/recording`` stage, or add it to one call's middlewares:
///
/// ```swift
/// let recorder = HARRecorder(fileURL: URL(fileURLWithPath: "session.har"))
/// let client = APIClient(configuration: .init { $0.observability.recorder = recorder })
/// …
/// // open session.har in a browser's developer tools, Charles or Proxyman, or replay it:
/// let archive = try HARReplay(contentsOf: recorder.fileURL)
/// let replay = APIClient(configuration: .init { $0.mocks = Mocks(replaying: archive) })
/// ```
///
/// The file is rewritten after each exchange, so it is complete even if the process stops.
public final class HARRecorder: Middleware {
    /// Where the archive is written.
    public let fileURL: URL
    /// What is hidden in the archive by name; `nil` (the default) uses the client's
    /// ``APIClient/Configuration/Observability/redaction``, widened by its authentication. Every secret value
    /// the request carried is also masked wherever it appears, response bodies included.
    public let redaction: Redaction?
    /// The largest body stored as text; longer ones are cut, with a comment. Default 1 MiB.
    public let maximumBodySize: Int
    private let entries = Mutex<[HARFile.Entry]>([])
    private let writing = Mutex(())

    /// Creates a recorder that writes to `fileURL` (created readable by its owner only).
    public init(fileURL: URL, redaction: Redaction? = nil, maximumBodySize: Int = 1 << 20) {
        self.fileURL = fileURL
        self.redaction = redaction
        self.maximumBodySize = maximumBodySize
    }

    /// How many exchanges are recorded.
    public var count: Int { entries.withLock { $0.count } }

    public func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let started = Date()
        let clock = ContinuousClock()
        let start = clock.now
        do {
            let response = try await next(request)
            let mask = mask(for: response.request, context: context)
            await record(response.request, sentBody: response.sentBody, response: response, error: nil, started: started, elapsed: clock.now - start, mask: mask)
            return response
        } catch {
            let failed = (error as? APIError)?.request ?? request
            await record(
                failed, sentBody: nil, response: (error as? APIError)?.response, error: error, started: started, elapsed: clock.now - start,
                mask: mask(for: failed, context: context))
            throw error
        }
    }

    private func mask(for request: Request, context: MiddlewareContext) -> SecretMask {
        // Your own redaction still masks the values the client's authentication knows.
        guard var redaction else { return SecretMask(redaction: context.redaction, request: request) }
        redaction.secretValues += context.redaction.secretValues
        return SecretMask(redaction: redaction, request: request)
    }

    private func record(
        _ request: Request, sentBody: TransportBody?, response: Response?, error: (any Error)?, started: Date, elapsed: Duration,
        mask: SecretMask
    ) async {
        let url = mask.url(request.url?.absoluteString ?? request.path)
        let requestBody: Data? = sentBody.flatMap { body in body.isReplayable ? body.inMemoryData : nil }
        let requestType = request.headers["Content-Type"] ?? "application/octet-stream"
        let harRequest = HARFile.HARRequest(
            method: request.method.rawValue, url: url, httpVersion: response?.httpVersion ?? "HTTP/1.1",
            headers: request.headers.fields.map { .init(name: $0.name, value: mask.header($0.name, $0.value)) },
            queryString: URLComponents(string: url)?.queryItems?.map { .init(name: $0.name, value: $0.value ?? "") } ?? [],
            postData: requestBody.map { body in
                let (text, comment) = textForArchive(mask.body(body, contentType: requestType))
                return HARFile.PostData(mimeType: requestType, text: text ?? "", comment: comment ?? (text == nil ? "binary body not stored" : nil))
            } ?? (sentBody != nil && requestBody == nil ? HARFile.PostData(mimeType: requestType, text: "", comment: "streamed body not stored") : nil),
            bodySize: requestBody?.count ?? (sentBody?.count ?? 0))
        let milliseconds = elapsed.seconds * 1000
        let harResponse: HARFile.HARResponse
        if let response {
            let mimeType = response.headers[.contentType] ?? "application/octet-stream"
            let redactedBody = mask.body(response.body, contentType: mimeType)
            var content = HARFile.Content(size: response.body.count, mimeType: mimeType)
            if let text = String(data: redactedBody.prefix(maximumBodySize), encoding: .utf8) {
                content.text = text
            } else {
                content.text = redactedBody.prefix(maximumBodySize).base64EncodedString()
                content.encoding = "base64"
            }
            if redactedBody.count > maximumBodySize { content.comment = "cut to \(maximumBodySize) of \(redactedBody.count) bytes" }
            harResponse = HARFile.HARResponse(
                status: response.status.code, statusText: response.status.reasonPhrase, httpVersion: response.httpVersion,
                headers: response.headers.map {
                    .init(name: $0.name.rawName, value: $0.name == .location ? mask.url($0.value) : mask.header($0.name.rawName, $0.value))
                },
                content: content, redirectURL: mask.url(response.headers[.location] ?? ""), bodySize: response.body.count,
                _error: error.map { mask.text(($0 as? APIError)?.message ?? "\($0)") })
        } else {
            harResponse = HARFile.HARResponse(
                status: 0, statusText: "", headers: [], content: HARFile.Content(size: 0, mimeType: "x-unknown"), redirectURL: "",
                bodySize: -1, _error: error.map { mask.text(($0 as? APIError).map { "\($0.code): \($0.message)" } ?? "\($0)") })
        }
        let entry = HARFile.Entry(
            startedDateTime: started.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)),
            time: milliseconds, request: harRequest, response: harResponse, timings: HARFile.Timings(wait: milliseconds))
        let snapshot = entries.withLock { entries -> [HARFile.Entry] in
            entries.append(entry)
            return entries
        }
        write(snapshot)
    }

    private func textForArchive(_ body: Data) -> (String?, String?) {
        let cut = body.prefix(maximumBodySize)
        guard let text = String(data: cut, encoding: .utf8) else { return (nil, nil) }
        return (text, body.count > maximumBodySize ? "cut to \(maximumBodySize) of \(body.count) bytes" : nil)
    }

    /// Writes the whole archive atomically; a failure to write is logged nowhere and retried with
    /// the next exchange, because recording must never break a call.
    private func write(_ snapshot: [HARFile.Entry]) {
        writing.withLock { _ in
            let file = HARFile(log: .init(creator: .init(name: "Callsign", version: APIClient.version), entries: snapshot))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            guard let data = try? encoder.encode(file) else { return }
            // Owner-only from the first byte, replaced in one rename, through the one writer.
            try? FileWriter.write(data, to: fileURL, permissions: .ownerOnly)
        }
    }
}
