public import Foundation
import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension APIClient {
    /// Downloads a response body to a file as it arrives, without holding it in memory.
    ///
    /// The bytes go to a partial file next to `destination` (`.NAME.callsign-partial`, readable
    /// only by this user), which replaces `destination` in one atomic rename once the byte count
    /// matches the announced length. The destination's name is yours: nothing from the server
    /// (such as `Content-Disposition`) is used.
    ///
    /// **Resume.** When a download is interrupted or cancelled and the server gave a strong
    /// `ETag` or a `Last-Modified`, the partial file stays; the next download of the same URL to
    /// the same destination asks only for the rest (`Range` + `If-Range`). A `200` instead of
    /// `206`, a `Content-Range` that does not start where the file stops, or a changed validator
    /// starts again from zero — bytes are never appended blindly.
    ///
    /// Progress (including resumed bytes) is reported on a ``CallTask`` from
    /// ``startDownload(_:to:resuming:)``. A download has no per-attempt time limit unless the
    /// request sets one; use ``Request/Fields/deadline``.
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
    /// cached, and the per-attempt timeout covers only the wait for the head.
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
enum FileDownload {
    /// The server's answer cannot continue the partial file: start again without a range.
    struct Restart: Error {}

    static func partialURL(for destination: URL) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).callsign-partial")
    }

    static func stateURL(for destination: URL) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).callsign-partial.json")
    }

    /// The resume point of a partial file waiting at `destination`, if any. Which URL it belongs
    /// to is checked once the request's final URL is known (see ``transfer(_:to:resuming:context:next:)``).
    static func resumePoint(destination: URL) -> ResumePoint? {
        guard let data = FileManager.default.contents(atPath: stateURL(for: destination).path),
            var point = try? JSONDecoder().decode(ResumePoint.self, from: data),
            let size = (try? FileManager.default.attributesOfItem(atPath: partialURL(for: destination).path))?[.size] as? Int,
            size > 0
        else { return nil }
        if let total = point.total, Int64(size) >= total { return nil }
        point.offset = Int64(size)
        return point
    }

    /// A download's exchange, as the ``MiddlewareStage/body`` stage runs it: a range request when
    /// a partial file can be continued, the body written to the file, and one restart from zero
    /// when the server's answer (or the request's final URL) cannot continue it.
    static func transfer(
        _ request: Request, to destination: URL, resuming: Bool, context: MiddlewareContext, next: MiddlewareNext
    ) async throws -> Response {
        let start = ContinuousClock.now
        if !resuming { discard(destination: destination) }
        var resume = resuming ? resumePoint(destination: destination) : nil
        while true {
            var attempt = request
            if let resume {
                attempt.headers["Range"] = "bytes=\(resume.offset)-"
                attempt.headers["If-Range"] = resume.validator
            }
            var response = try await next(attempt, context: context)
            guard let body = response.bodyStream else { return response }
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
            if let point = resume, point.urlDigest != Digest.sha256Hex(url.absoluteString) {
                // The partial file belongs to another URL: start this one from zero.
                discard(destination: destination)
                resume = nil
                continue
            }
            do {
                try await write(
                    body, status: response.status.code, headers: response.headers, url: url, to: destination, resume: resume,
                    progress: context.call.origin.progress)
            } catch is Restart where resume != nil {
                resume = nil  // the partial file was discarded: ask for the whole file
                continue
            } catch let error as APIError {
                throw APIError.wrap(error, request: response.request)
            } catch {
                throw BodyStage.bodyFailure(error, response: response)
            }
            response.fileURL = destination
            response.duration = ContinuousClock.now - start
            return response
        }
    }

    /// Removes the partial file and its state.
    static func discard(destination: URL) {
        try? FileManager.default.removeItem(at: partialURL(for: destination))
        try? FileManager.default.removeItem(at: stateURL(for: destination))
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
        status: Int, headers: HTTPFields, resume: ResumePoint?, destination: URL
    ) throws -> (offset: Int64, total: Int64?) {
        let total = try ContentLength.parse(headers)
        guard status == 206 else { return (0, total) }
        guard let resume, let range = ContentRange(headers[.contentRange]) else {
            throw APIError(.invalidResponse, localized: "the server sent part of the file (206) without a usable Content-Range")
        }
        if let length = total, length != range.count {
            throw APIError(
                .invalidResponse, localized: "the server's Content-Length (\(length)) does not match its Content-Range (\(range.count) bytes)")
        }
        guard range.start == resume.offset, validator(headers).map({ $0 == resume.validator }) ?? true else {
            discard(destination: destination)
            throw Restart()
        }
        return (resume.offset, range.total ?? resume.total)
    }

    /// Writes one response's body. With `resume`, a `206` must continue exactly where the
    /// partial file stops, with the same validator; anything else throws ``Restart`` after
    /// discarding the partial file (a `200` simply starts from zero).
    static func write(
        _ body: ResponseBodyStream, status: Int, headers: HTTPFields, url: URL, to destination: URL, resume: ResumePoint?,
        progress: ProgressSink?
    ) async throws {
        let partial = partialURL(for: destination)
        let (offset, total) = try continuation(status: status, headers: headers, resume: resume, destination: destination)
        let folder = destination.deletingLastPathComponent()
        if offset == 0 {
            try? FileManager.default.removeItem(at: partial)
            guard FileManager.default.createFile(atPath: partial.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw APIError(.invalidRequest, localized: "cannot create a file in \(folder.path) for the download")
            }
        }
        let resumable = validator(headers).map {
            ResumePoint(urlDigest: Digest.sha256Hex(url.absoluteString), url: Redaction.redact(url.absoluteString), validator: $0, total: total)
        }
        if let resumable, let data = try? JSONEncoder().encode(resumable) {
            _ = FileManager.default.createFile(atPath: stateURL(for: destination).path, contents: data, attributes: [.posixPermissions: 0o600])
        } else {
            try? FileManager.default.removeItem(at: stateURL(for: destination))
        }

        var finished = false
        defer {
            // An interrupted download stays for a later resume only if the server named a validator.
            if !finished && resumable == nil { discard(destination: destination) }
        }
        let handle = try FileHandle(forWritingTo: partial)
        defer { try? handle.close() }
        try handle.truncate(atOffset: UInt64(offset))
        try handle.seek(toOffset: UInt64(offset))
        var written = offset
        progress?.report(TransferProgress(direction: .download, completedBytes: written, totalBytes: total))
        for try await chunk in body {
            // More than the server declared: stop before the file grows past it.
            if let total, Int64(chunk.count) > total - written {
                throw APIError(.invalidResponse, localized: "the download is longer than the \(total) bytes the server declared")
            }
            try handle.write(contentsOf: chunk)
            written += Int64(chunk.count)
            progress?.report(TransferProgress(direction: .download, completedBytes: written, totalBytes: total))
        }
        if let total, written != total {
            throw APIError(.transport, localized: "the download ended after \(written) of \(total) bytes")
        }
        // No fsync: it would cost more than the transfer; the rename is still atomic for readers.
        if total == nil {
            progress?.report(TransferProgress(direction: .download, completedBytes: written, totalBytes: written))
        }
        // rename(2) replaces an existing destination atomically (FileManager.replaceItemAt does not
        // work on every platform's Foundation).
        guard rename(partial.path, destination.path) == 0 else {
            throw APIError(.invalidRequest, localized: "the download could not be moved to \(destination.path) (error \(errno))")
        }
        finished = true
        try? FileManager.default.removeItem(at: stateURL(for: destination))
    }
}
