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
/// The file is a complete archive after each exchange, so it can be opened while calls go on and
/// survives the process stopping. Each exchange is encoded once and written in place before the
/// archive's closing lines: recording costs the same at the ten-thousandth call as at the first.
/// (A character device or FIFO, which cannot be written in place, gets the whole archive again
/// after each exchange.)
public final class HARRecorder: Middleware {
    /// Where the archive is written.
    public let fileURL: URL
    /// What is hidden in the archive by name; `nil` (the default) uses the client's
    /// ``APIClient/Configuration/Observability/redaction``, widened by its authentication. Every secret value
    /// the request carried is also masked wherever it appears, response bodies included.
    public let redaction: Redaction?
    /// The largest body stored as text; longer ones are cut, with a comment. Default 1 MiB.
    public let maximumBodySize: Int
    private let archive = Mutex(Archive())

    /// Creates a recorder that writes to `fileURL` (created readable by its owner only).
    public init(fileURL: URL, redaction: Redaction? = nil, maximumBodySize: Int = 1 << 20) {
        self.fileURL = fileURL
        self.redaction = redaction
        self.maximumBodySize = maximumBodySize
    }

    /// How many exchanges are recorded.
    public var count: Int { archive.withLock { $0.entries.count } }

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
        guard var redaction else { return SecretMask(redaction: context.fields.redaction, request: request) }
        redaction.secretValues += context.fields.redaction.secretValues
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
            // The size of what `text` holds once masked (HAR 1.2: the length of the content), so
            // that it matches what a replay serves; `bodySize` stays what was received.
            var content = HARFile.Content(size: redactedBody.count, mimeType: mimeType)
            if let text = Self.text(redactedBody.prefix(maximumBodySize)) {
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
        // The exchange's phases as the transport measured them; a failure before any answer has
        // only its whole time.
        let measured = response?.timings.firstByte == nil ? nil : response?.timings.har
        let timings = measured ?? HARFile.Timings(wait: milliseconds)
        let entry = HARFile.Entry(
            startedDateTime: started.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)),
            time: timings.total, request: harRequest, response: harResponse, timings: timings,
            serverIPAddress: response?.timings.remoteAddress)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let encoded = try? encoder.encode(entry) else { return }
        archive.withLock { archive in
            archive.entries.append(Archive.indented(encoded))
            archive.write(to: fileURL)
        }
    }

    private func textForArchive(_ body: Data) -> (String?, String?) {
        let cut = body.prefix(maximumBodySize)
        guard let text = Self.text(cut) else { return (nil, nil) }
        return (text, body.count > maximumBodySize ? "cut to \(maximumBodySize) of \(body.count) bytes" : nil)
    }

    /// The body as text when it is valid UTF-8, byte for byte: a byte-order mark and every
    /// other scalar kept (Foundation's `String(data:encoding:)` may drop a leading mark), so
    /// that `Data(text.utf8)` on replay gives back the same bytes. Otherwise `nil` (base64).
    private static func text(_ body: Data) -> String? {
        String(validating: body, as: UTF8.self)
    }

    /// The entries written so far, each encoded once, and where the file's closing lines start.
    private struct Archive {
        var entries: [Data] = []
        /// The byte offset of the closing lines in the file as last written whole or appended to;
        /// `nil` until the file has been written whole (and after a failed write).
        var closingOffset: Int64?

        static let opening = Data(
            """
            {
              "log" : {
                "creator" : {
                  "name" : "Callsign",
                  "version" : "\(APIClient.version)"
                },
                "entries" : [

            """.utf8)
        static let closing = Data("\n    ],\n    \"version\" : \"1.2\"\n  }\n}\n".utf8)

        /// An entry's JSON indented to sit in the `entries` array (JSON strings hold no newline,
        /// so every line break is between tokens).
        static func indented(_ json: Data) -> Data {
            var out = Data("      ".utf8)
            out.reserveCapacity(json.count + json.count / 8)
            for byte in json {
                out.append(byte)
                if byte == UInt8(ascii: "\n") { out.append(contentsOf: Array("      ".utf8)) }
            }
            return out
        }

        /// Writes the newest entry: in place before the closing lines when the file was written
        /// before, else the whole archive, replaced in one rename. A failure is retried with the
        /// next exchange (the whole archive again), because recording must never break a call.
        mutating func write(to fileURL: URL) {
            guard let newest = entries.last else { return }
            do {
                let target = try FileWriter.target(fileURL)
                if case .file(let path, _) = target, let offset = closingOffset, entries.count > 1 {
                    // The file Callsign wrote (owner-only, a regular file, never a link).
                    let file = try FileWriter.reopenPrivate(URL(fileURLWithPath: path))
                    try file.continueAt(offset)
                    var tail = Data(",\n".utf8)
                    tail.append(newest)
                    try file.write(tail)
                    try file.write(Self.closing)
                    try file.close()
                    closingOffset = offset + Int64(tail.count)
                    return
                }
                var whole = Self.opening
                for (index, entry) in entries.enumerated() {
                    if index > 0 { whole.append(contentsOf: Array(",\n".utf8)) }
                    whole.append(entry)
                }
                let offset = Int64(whole.count)
                whole.append(Self.closing)
                // Owner-only from the first byte, replaced in one rename, through the one writer.
                try FileWriter.write(whole, to: fileURL, permissions: .ownerOnly)
                if case .file = target { closingOffset = offset } else { closingOffset = nil }
            } catch {
                closingOffset = nil
            }
        }
    }
}
