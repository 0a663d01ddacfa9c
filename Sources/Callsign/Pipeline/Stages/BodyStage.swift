import Foundation

/// How the body is read (``MiddlewareStage/body``): collected in memory up to the client's cap,
/// handed to the caller as a stream, or written to a file with resume. Reports download progress.
struct BodyStage: Middleware {
    let limit: Int

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        switch context.fields.bodyReading {
        case .memory:
            return try await collect(request, context: context, next: next)
        case .stream:
            let response = try await next(request, context: context)
            context.fields.headArrived?()
            return response
        case .file(let destination, let resuming):
            return try await FileDownload.transfer(request, to: destination, resuming: resuming, context: context, next: next)
        }
    }

    private func collect(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let start = ContinuousClock.now
        let progress = context.fields.progress
        var response = try await next(request, context: context)
        context.fields.headArrived?()
        guard let stream = response.bodyStream else { return response }
        // A transport that handed the body over whole said when it ended; else it is timed here.
        let headArrived = response.timings.complete == nil ? ContinuousClock.now : nil
        do {
            response.body = try await Self.read(stream, limit: limit, declared: response.declaredLength, progress: progress)
        } catch {
            throw Self.bodyFailure(error, response: response)
        }
        response.bodyStream = nil
        let end = ContinuousClock.now
        response.duration = end - start
        if let headArrived { response.timings.complete(headArrived: headArrived, end: end) }
        // Ends at 1 also without a Content-Length, or once a compressed body is decoded.
        progress?.report(
            TransferProgress(direction: .download, completedBytes: Int64(response.body.count), totalBytes: Int64(response.body.count)))
        return response
    }

    /// Reads a body whole: at once when it is in memory already, else chunk by chunk, failing
    /// past `limit` before it is read (by its declared length) or as soon as it grows past it.
    static func read(_ body: ResponseBodyStream, limit: Int, declared: Int?, progress: ProgressReporter?) async throws -> Data {
        if let declared, declared > limit { throw ResponseBodyStream.tooLarge(limit) }
        guard let progress, body.inMemoryData == nil else { return try await body.collect(upTo: limit) }
        var data = Data()
        if let declared { data.reserveCapacity(declared) }
        let total = declared.map(Int64.init)
        progress.report(TransferProgress(direction: .download, completedBytes: 0, totalBytes: total))
        for try await chunk in body {
            guard data.count + chunk.count <= limit else { throw ResponseBodyStream.tooLarge(limit) }
            data.append(chunk)
            progress.report(TransferProgress(direction: .download, completedBytes: Int64(data.count), totalBytes: total))
        }
        return data
    }

    /// A failure while the body arrived: the head had come, so the response is attached and the
    /// error says that the answer had started.
    static func bodyFailure(_ error: any Error, response: Response) -> APIError {
        var failure = APIError.wrap(error, request: response.request)
        if failure.code == .transport, !failure.responseStarted {
            failure.text = "the connection broke while the body arrived: \(Redaction.redact(String(describing: error)))"
        }
        failure.responseStarted = true
        if failure.response == nil {
            var head = response
            head.bodyStream = nil
            failure.response = head
        }
        return failure
    }
}
