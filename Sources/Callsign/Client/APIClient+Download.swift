public import Foundation
import HTTPTypes

extension APIClient {
    /// Downloads a response body to a file as it arrives, without holding it in memory.
    ///
    /// The bytes go to a partial file next to `destination` (`.NAME.callsign-partial`, readable
    /// only by this user), which replaces `destination` in one atomic rename once the byte count
    /// matches the announced length. The destination's name is yours: nothing from the server
    /// (such as `Content-Disposition`) is used.
    ///
    /// **What stands at the destination.** A character device or a FIFO (`/dev/null`, a named
    /// pipe) is written into directly, as `curl -o` does: never replaced, no partial file, nothing
    /// to resume. A symbolic link is written through: the file it points to is replaced and the
    /// link stays. A link to nothing, a folder or a block device is refused before anything is
    /// sent. A symbolic link (or a file of another user) where the partial or state file belongs
    /// is an ``APIError/Code/storage`` error: it is never followed.
    ///
    /// **Resume.** When a download is interrupted or cancelled and the server gave a strong
    /// `ETag` or a `Last-Modified`, the partial file stays; the next download of the same URL to
    /// the same destination asks only for the rest (`Range` + `If-Range`). A `200` instead of
    /// `206`, a `Content-Range` that does not start where the file stops, or a changed validator
    /// starts again from zero — bytes are never appended blindly.
    ///
    /// Progress (including resumed bytes) is reported on a ``CallTask`` from
    /// ``startDownload(_:to:resuming:)``. A download has no per-attempt time limit unless the
    /// request sets one; use ``CallOptions/deadline``. A server that goes silent, before its
    /// head or in the middle of the body, ends it after the idle limit
    /// (``APIClient/Configuration/Timeouts/idle``, 60 seconds by default). Cancelling the task
    /// stops the transfer at once and leaves the partial file for a resume.
    ///
    /// ```swift
    /// let response = try await client.download(.get("files/archive.zip"), to: URL(fileURLWithPath: "archive.zip"))
    /// print(response.fileURL!.path, response.status.code)   // 206 when it resumed
    /// ```
    /// - Parameters:
    ///   - request: what to download.
    ///   - destination: the file to write; a partial file sits next to it until the body is complete.
    ///   - resuming: whether to continue a partial file. Default `true`.
    /// - Throws: ``APIError``; a short body is ``APIError/Code/transport`` and the destination
    ///   is left untouched.
    public func download(_ request: Request, to destination: URL, resuming: Bool = true) async throws(APIError) -> Response {
        try await perform(Call(request).reading(.file(destination, resuming: resuming))).validate()
    }

    /// Downloads what the API with this name answers (see ``download(_:to:resuming:)-(Request,_,_)``).
    ///
    /// ```swift
    /// try await client.download("Archive", parameters: ["id": 7], to: archiveURL)
    /// ```
    public func download(
        _ name: String, parameters: Parameters = [:], to destination: URL, resuming: Bool = true
    ) async throws(APIError) -> Response {
        let request = try definitions.definition(named: name).request(parameters: parameters)
        return try await download(request, to: destination, resuming: resuming)
    }

    /// Downloads what an endpoint value answers (see ``download(_:to:resuming:)-(Request,_,_)``).
    ///
    /// The endpoint's request is prepared exactly as ``send(_:)-(E)`` prepares it: its
    /// base URL, shared headers, accepted statuses, credentials for its origin, and its value
    /// for mock providers.
    public func download<E: Endpoint>(_ endpoint: E, to destination: URL, resuming: Bool = true) async throws(APIError) -> Response {
        try await perform(Call(endpoint).reading(.file(destination, resuming: resuming))).validate()
    }

    /// Starts a download and returns a handle with its progress (see ``download(_:to:resuming:)-(Request,_,_)``).
    ///
    /// ```swift
    /// let task = client.startDownload(.get("big.iso"), to: isoURL)
    /// for await progress in task.progress { print(progress.fraction ?? 0) }
    /// ```
    public func startDownload(_ request: Request, to destination: URL, resuming: Bool = true) -> CallTask {
        start(Call(request).reading(.file(destination, resuming: resuming)))
    }

    /// Sends a request and returns as soon as the response head has arrived; the body is read
    /// by the caller, chunk by chunk, as it arrives (decoded if it was compressed). Nothing is
    /// cached, and the per-attempt timeout covers only the wait for the head; each chunk is
    /// awaited under the idle limit (``APIClient/Configuration/Timeouts/idle``) and the call's
    /// deadline, both failing the read with ``APIError/Code/timedOut``.
    ///
    /// ```swift
    /// let streamed = try await client.stream(.get("events"))
    /// for try await chunk in streamed.chunks { parser.feed(chunk) }
    /// ```
    public func stream(_ request: Request) async throws(APIError) -> StreamedResponse {
        let response = try await perform(Call(request).reading(.stream))
        return StreamedResponse(response: response, chunks: response.bodyStream ?? ResponseBodyStream(data: response.body))
    }
}

/// A response whose body is read as it arrives (``APIClient/stream(_:)``).
public struct StreamedResponse: Sendable {
    /// Status, headers and request; its ``Response/Fields/body`` is empty.
    public var response: Response
    /// The body's chunks, readable once.
    public var chunks: ResponseBodyStream
}

extension StreamedResponse {
    /// The answer with its body read whole as a call reads one (``BodyStage``): refused before a
    /// byte is read when its declared length is past `limit`, and as soon as it grows past it.
    package func collected(upTo limit: Int) async throws(APIError) -> Response {
        var whole = response
        do {
            whole.body = try await BodyStage.read(chunks, limit: limit, declared: response.declaredLength, progress: nil)
        } catch {
            throw bodyFailure(error)
        }
        return whole
    }

    /// What ended a body read chunk by chunk, as a call reports it: the head attached, the answer
    /// marked as started.
    package func bodyFailure(_ error: any Error) -> APIError {
        BodyStage.bodyFailure(error, response: response)
    }
}

/// Where a partial download stands: the bytes so far and the validator that must not change.
struct ResumePoint: Codable, Sendable, Equatable {
    /// A digest of the full URL (the URL itself may hold a secret).
    var urlDigest: String
    /// The URL with secrets redacted, for people reading the file.
    var url: String
    /// A strong `ETag`, else the `Last-Modified` value.
    var validator: String
    /// The full length, when known.
    var total: Int64?
    /// How many bytes the partial file holds (read from the file, not stored).
    var offset: Int64 = 0

    enum CodingKeys: String, CodingKey { case urlDigest, url, validator, total }
}

/// Writes a body to a file: partial file, then an atomic rename; keeps what it needs to resume.
///
/// Every file goes through ``FileWriter``: a device or FIFO destination (`-o /dev/null`, a named
/// pipe) is written into directly with no partial file and nothing to resume; the partial and
/// state files beside a regular destination are Callsign's own names, created with `O_EXCL`,
/// never followed through a link, owner-only.
enum FileDownload {
    /// The server's answer cannot continue the partial file: start again without a range.
    struct Restart: Error {}

    /// The most bytes a state file may hold: a few hundred are written; more is not ours.
    static let maximumStateSize = 64 << 10

    static func partialURL(for destination: URL) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).callsign-partial")
    }

    static func stateURL(for destination: URL) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).callsign-partial.json")
    }

    /// The regular file a target names (a link's target), where partial and state files sit beside it.
    private static func file(_ target: FileWriter.Target) -> URL? {
        guard case .file(let path, _) = target else { return nil }
        return URL(fileURLWithPath: path)
    }

    /// The resume point of a partial file waiting at `destination`, if any. Which URL it belongs
    /// to is checked once the request's final URL is known (see ``transfer(_:to:resuming:context:next:)``).
    ///
    /// - Throws: ``APIError/Code/storage`` when a link or a file not made by Callsign stands at
    ///   the partial or state file's name.
    static func resumePoint(destination: URL) throws(APIError) -> ResumePoint? {
        guard let data = try FileWriter.readPrivate(stateURL(for: destination), limit: maximumStateSize),
            var point = try? JSONDecoder().decode(ResumePoint.self, from: data),
            let size = try FileWriter.privateFileSize(partialURL(for: destination)),
            size > 0
        else { return nil }
        if let total = point.total, size >= total { return nil }
        point.offset = size
        return point
    }

    /// A download's exchange, as the ``MiddlewareStage/body`` stage runs it: a range request when
    /// a partial file can be continued, the body written to the file, and one restart from zero
    /// when the server's answer (or the request's final URL) cannot continue it.
    static func transfer(
        _ request: Request, to destination: URL, resuming: Bool, context: MiddlewareContext, next: MiddlewareNext
    ) async throws -> Response {
        let start = ContinuousClock.now
        // Examined before anything is sent: a destination that cannot be written costs no request.
        let target: FileWriter.Target
        do {
            target = try FileWriter.target(destination)
        } catch {
            throw APIError.wrap(error, request: request)
        }
        let file = file(target)
        var resume: ResumePoint?
        do throws(APIError) {
            if let file {
                if resuming { resume = try resumePoint(destination: file) } else { try discard(destination: file) }
            }
        } catch {
            throw APIError.wrap(error, request: request)
        }
        while true {
            var attempt = request
            if let resume {
                attempt.headers["Range"] = "bytes=\(resume.offset)-"
                attempt.headers["If-Range"] = resume.validator
            }
            var response = try await next(attempt, context: context)
            guard let body = response.bodyStream else { return response }
            let headArrived = ContinuousClock.now
            response.bodyStream = nil
            // An error status keeps its (small) body in memory, for the error to show.
            guard (200..<300).contains(response.status.code) else {
                do {
                    response.body = try await body.collect(upTo: 1 << 20)
                } catch {
                    throw BodyStage.bodyFailure(error, response: response)
                }
                return response
            }
            let url = response.request.url ?? URL(fileURLWithPath: "/")
            if let point = resume, let file, point.urlDigest != Digest.sha256Hex(url.absoluteString) {
                // The partial file belongs to another URL: start this one from zero.
                do {
                    try discard(destination: file)
                } catch {
                    throw APIError.wrap(error, request: response.request)
                }
                resume = nil
                continue
            }
            do {
                try await write(
                    body, status: response.status.code, headers: response.headers, url: url, to: target, resume: resume,
                    progress: context.fields.progress)
            } catch is Restart where resume != nil {
                resume = nil  // the partial file was discarded: ask for the whole file
                continue
            } catch let error as APIError {
                throw APIError.wrap(error, request: response.request)
            } catch {
                throw BodyStage.bodyFailure(error, response: response)
            }
            response.fileURL = destination
            let end = ContinuousClock.now
            response.duration = end - start
            response.timings.complete(headArrived: headArrived, end: end)
            return response
        }
    }

    /// Removes the partial file and its state (never through a link: one found there is an error).
    static func discard(destination: URL) throws(APIError) {
        try FileWriter.removePrivate(partialURL(for: destination))
        try FileWriter.removePrivate(stateURL(for: destination))
    }

    /// The validator a response offers for `If-Range`: a strong ETag, else Last-Modified.
    static func validator(_ headers: HTTPFields) -> String? {
        if let etag = headers[.eTag], !etag.hasPrefix("W/") { return etag }
        return headers[.lastModified]
    }

    /// Where a response's bytes go in the partial file, and the full length: 0 for a `200`; for
    /// a `206`, exactly where the partial file stops, with the same validator — anything else
    /// discards the partial file and throws ``Restart``.
    private static func continuation(
        status: Int, headers: HTTPFields, resume: ResumePoint?, file: URL?
    ) throws -> (offset: Int64, total: Int64?) {
        let total = try ContentLength.parse(headers)
        guard status == 206 else { return (0, total) }
        guard let resume, let file, let range = ContentRange(headers[.contentRange]) else {
            throw APIError(.invalidResponse, localized: "the server sent part of the file (206) without a usable Content-Range")
        }
        if let length = total, length != range.count {
            throw APIError(
                .invalidResponse, localized: "the server's Content-Length (\(length)) does not match its Content-Range (\(range.count) bytes)")
        }
        guard range.start == resume.offset, validator(headers).map({ $0 == resume.validator }) ?? true else {
            try discard(destination: file)
            throw Restart()
        }
        return (resume.offset, range.total ?? resume.total)
    }

    /// Writes one response's body. With `resume`, a `206` must continue exactly where the
    /// partial file stops, with the same validator; anything else throws ``Restart`` after
    /// discarding the partial file (a `200` simply starts from zero).
    static func write(
        _ body: ResponseBodyStream, status: Int, headers: HTTPFields, url: URL, to target: FileWriter.Target, resume: ResumePoint?,
        progress: ProgressReporter?
    ) async throws {
        let (offset, total) = try continuation(status: status, headers: headers, resume: resume, file: file(target))
        guard let file = file(target) else {
            // A device or FIFO: written into from the first byte, never replaced; nothing to resume.
            let writer = try await FileWriter.openWaiting(target, permissions: .ownerOnly)
            try await copy(body, into: writer, from: 0, total: total, progress: progress)
            try writer.commit(to: target, permissions: .ownerOnly)
            return
        }
        let partial = partialURL(for: file)
        let writer: FileWriter
        if offset == 0 {
            try FileWriter.removePrivate(partial)
            guard let created = try FileWriter.createPrivate(partial) else {
                throw APIError(.storage, localized: "\(partial.path) appeared while the download started; remove it and try again")
            }
            writer = created
        } else {
            writer = try FileWriter.reopenPrivate(partial)
        }
        let resumable = validator(headers).map {
            ResumePoint(urlDigest: Digest.sha256Hex(url.absoluteString), url: Redaction.redact(url.absoluteString), validator: $0, total: total)
        }
        if let resumable, let data = try? JSONEncoder().encode(resumable) {
            try FileWriter.replacePrivate(stateURL(for: file), with: data)
        } else {
            try FileWriter.removePrivate(stateURL(for: file))
        }

        var finished = false
        defer {
            // An interrupted download stays for a later resume only if the server named a validator.
            if !finished && resumable == nil { try? discard(destination: file) }
        }
        try writer.continueAt(offset)
        try await copy(body, into: writer, from: offset, total: total, progress: progress)
        // No fsync: it would cost more than the transfer; the rename is still atomic for readers.
        // The rename replaces the destination (or, through a link the user named, its target).
        try writer.commit(to: target, permissions: .ownerOnly)
        finished = true
        try? FileWriter.removePrivate(stateURL(for: file))
    }

    /// Copies the body into `writer`, checking it against the declared length and reporting progress.
    private static func copy(
        _ body: ResponseBodyStream, into writer: FileWriter, from offset: Int64, total: Int64?, progress: ProgressReporter?
    ) async throws {
        var written = offset
        progress?.report(TransferProgress(direction: .download, completedBytes: written, totalBytes: total))
        for try await chunk in body {
            // More than the server declared: stop before the file grows past it.
            if let total, Int64(chunk.count) > total - written {
                throw APIError(.invalidResponse, localized: "the download is longer than the \(total) bytes the server declared")
            }
            try writer.write(chunk)
            written += Int64(chunk.count)
            progress?.report(TransferProgress(direction: .download, completedBytes: written, totalBytes: total))
        }
        if let total, written != total {
            throw APIError(.transport, localized: "the download ended after \(written) of \(total) bytes")
        }
        if total == nil {
            progress?.report(TransferProgress(direction: .download, completedBytes: written, totalBytes: written))
        }
    }
}
