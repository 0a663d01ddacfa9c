import Foundation
import HTTPTypes
import Logging

extension APIClient {
    /// The end of the chain: encode, `preProcess`, send, and read the body within the timeout.
    func sendToTransport(_ request: Request) async throws(APIError) -> Response {
        var request = request
        var prepared = try RequestFactory.prepare(&request, configuration: configuration, defaults: requestDefaults)
        let span = observability.startSpan("HTTP \(request.method.rawValue) attempt")
        defer { span?.end() }
        if let span { observability.activeTracer.inject(span.context, into: &prepared.head.headerFields, using: HTTPFieldsInjector()) }
        logAttempt(request, body: prepared.body)
        if let preProcess = configuration.preProcess {
            do {
                prepared.head = try await preProcess(prepared.head)
            } catch {
                throw APIError.wrap(error, request: request, defaultCode: .invalidRequest, context: "preProcess failed")
            }
        }
        let startedAt = Date()
        let clock = ContinuousClock()
        let start = clock.now
        // A download's length has no natural bound: only an explicit timeout limits one attempt.
        let timeout = request.timeout ?? (request.downloadDestination == nil ? configuration.timeout : .seconds(86_400))
        let limit = configuration.maxResponseBodySize
        let limits = configuration.limits
        let transport = self.transport
        let head = prepared.head
        let progress = ProgressSink.current
        let uploadLength = prepared.body?.count.map(Int64.init)
        // With someone watching, a streamed body reports each chunk as the transport takes it.
        let body = progress.map { sink in
            prepared.body?.reportingProgress { sent in
                sink.report(TransferProgress(direction: .upload, completedBytes: sent, totalBytes: uploadLength))
            }
        } ?? prepared.body
        let downloadDestination = request.downloadDestination
        let url = prepared.url
        let resumePoint = downloadDestination.flatMap { destination in
            request.resumesDownload ? FileDownload.resumePoint(destination: destination, url: url) : nil
        }
        if let destination = downloadDestination, resumePoint == nil, !request.resumesDownload {
            FileDownload.discard(destination: destination)
        }
        // A transport that decodes by itself gets its bodies left alone.
        let decompression = transportDecodes ? DecompressionPolicy.disabled : configuration.decompression
        let decodedLimit = decompression.maximumDecodedSize ?? limit
        let streams = request.streamsBody
        do {
            let (responseHead, responseBody, stream): (HTTPResponse, Data, ResponseBodyStream?)
            if let destination = downloadDestination, request.timeout == nil {
                // A download without an explicit timeout has no per-attempt limit: no race to set up.
                let (head, data) = try await Self.transferToFile(
                    destination, head: head, body: body, url: url, resumePoint: resumePoint, transport: transport,
                    decompression: decompression, limits: limits, progress: progress)
                (responseHead, responseBody, stream) = (head, data, nil)
            } else if let collecting = collectingTransport, downloadDestination == nil, !streams,
                body == nil || body?.inMemoryData != nil
            {
                // The common case — bodies in memory — in one step, progress reported as it reads.
                let received = progress.map { sink in
                    { @Sendable (received: Int64, expected: Int64?) in
                        // The first report comes with the head: the upload is complete by then.
                        if received == 0, let uploadLength {
                            sink.report(TransferProgress(direction: .upload, completedBytes: uploadLength, totalBytes: uploadLength))
                        }
                        sink.report(TransferProgress(direction: .download, completedBytes: received, totalBytes: expected))
                    }
                }
                if let progress, let uploadLength {
                    progress.report(TransferProgress(direction: .upload, completedBytes: 0, totalBytes: uploadLength))
                }
                var (head, data) = try await collecting.sendAndCollect(
                    head, body: body?.inMemoryData, limit: limit, timeout: timeout, progress: received)
                try limits.check(head)
                if head.headerFields[.contentEncoding] != nil {
                    let decoded: ResponseBodyStream
                    (decoded, head) = try ContentDecoding.decode(
                        ResponseBodyStream(data: data), head: head, policy: decompression, decodedLimit: decodedLimit)
                    do {
                        data = try await decoded.collect(upTo: limit)
                    } catch var error as APIError {
                        error.responseStarted = true
                        throw error
                    }
                }
                // Ends at 1 also without a Content-Length, or once a compressed body is decoded.
                progress?.report(TransferProgress(direction: .download, completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
                (responseHead, responseBody, stream) = (head, data, nil)
            } else {
            (responseHead, responseBody, stream) = try await Deadline.run(within: timeout) { () async throws -> (HTTPResponse, Data, ResponseBodyStream?) in
                let uploadTotal = uploadLength
                if let progress, let uploadTotal {
                    progress.report(TransferProgress(direction: .upload, completedBytes: 0, totalBytes: uploadTotal))
                }
                if let destination = downloadDestination {
                    let (head, data) = try await Self.transferToFile(
                        destination, head: head, body: body, url: url, resumePoint: resumePoint, transport: transport,
                        decompression: decompression, limits: limits, progress: progress)
                    return (head, data, nil)
                }
                let sent = try await transport.send(head, body: body)
                let declaredLength = try limits.check(sent.head)
                if let progress, let uploadTotal {
                    progress.report(TransferProgress(direction: .upload, completedBytes: uploadTotal, totalBytes: uploadTotal))
                }
                let (responseBody, responseHead) = try ContentDecoding.decode(
                    sent.body, head: sent.head, policy: decompression, decodedLimit: decodedLimit)
                if streams { return (responseHead, Data(), responseBody) }
                // The declared length of the encoded body; a decoded one has no declared length.
                let length = responseHead.headerFields[.contentLength] == nil ? nil : declaredLength.map { Int(clamping: $0) }
                if let length, length > limit { throw ResponseBodyStream.tooLarge(limit) }
                do {
                    guard let progress else { return (responseHead, try await responseBody.collect(upTo: limit), nil) }
                    return (responseHead, try await Self.read(responseBody, limit: limit, length: length, progress: progress), nil)
                } catch let error as APIError {
                    var error = error
                    error.responseStarted = true
                    throw error
                } catch {
                    throw BodyReadError(underlying: error)
                }
            }
            }
            var response = Response(
                request: request, status: responseHead.status, headers: responseHead.headerFields, body: responseBody,
                startedAt: startedAt, duration: clock.now - start, settings: responseSettings)
            response.sentBody = prepared.body
            response.bodyStream = stream
            if (200..<300).contains(responseHead.status.code) { response.fileURL = request.downloadDestination }
            span?.record(status: response.status.code)
            logAttemptResponse(response)
            return response
        } catch {
            let apiError = mapFailure(error, request: request, timeout: timeout)
            span?.record(failure: apiError)
            throw apiError
        }
    }

    /// A download's exchange: a range request when a partial file can be continued, the body
    /// written to the file, and one restart from zero when the server's answer cannot continue it.
    /// Out of line, so the common in-memory path keeps a small async frame.
    @inline(never)
    static func transferToFile(
        _ destination: URL, head: HTTPRequest, body: HTTPBody?, url: URL, resumePoint: ResumePoint?, transport: any Transport,
        decompression: DecompressionPolicy, limits: Limits, progress: ProgressSink?
    ) async throws -> (HTTPResponse, Data) {
        var resume = resumePoint
        while true {
            var head = head
            if let resume {
                head.headerFields[.range] = "bytes=\(resume.offset)-"
                head.headerFields[.ifRange] = resume.validator
            }
            let sent = try await transport.send(head, body: body)
            try limits.check(sent.head)
            let (responseBody, responseHead) = try ContentDecoding.decode(
                sent.body, head: sent.head, policy: decompression, decodedLimit: decompression.maximumDecodedSize)
            // An error status keeps its (small) body in memory, for the error to show.
            guard (200..<300).contains(responseHead.status.code) else {
                return (responseHead, try await responseBody.collect(upTo: 1 << 20))
            }
            do {
                try await FileDownload.write(
                    responseBody, status: responseHead.status.code, headers: responseHead.headerFields, url: url,
                    to: destination, resume: resume, progress: progress)
                return (responseHead, Data())
            } catch is FileDownload.Restart where resume != nil {
                resume = nil  // the partial file was discarded: ask for the whole file
            } catch let error as APIError {
                throw error
            } catch {
                throw BodyReadError(underlying: error)
            }
        }
    }

    /// Reads a body chunk by chunk, reporting download progress; the last report is complete.
    static func read(_ body: ResponseBodyStream, limit: Int, length: Int?, progress: ProgressSink) async throws -> Data {
        var data = Data()
        if let length { data.reserveCapacity(length) }
        let total = length.map(Int64.init)
        progress.report(TransferProgress(direction: .download, completedBytes: 0, totalBytes: total))
        for try await chunk in body {
            guard data.count + chunk.count <= limit else { throw ResponseBodyStream.tooLarge(limit) }
            data.append(chunk)
            progress.report(TransferProgress(direction: .download, completedBytes: Int64(data.count), totalBytes: total))
        }
        if total == nil || total != Int64(data.count) {
            progress.report(TransferProgress(direction: .download, completedBytes: Int64(data.count), totalBytes: Int64(data.count)))
        }
        return data
    }

    /// A failure while reading a body whose head had arrived.
    struct BodyReadError: Error {
        let underlying: any Error
    }

    func mapFailure(_ error: any Error, request: Request, timeout: Duration) -> APIError {
        if error is Deadline.Expired {
            return APIError(
                .timedOut, "no complete answer within \(Self.describe(timeout))", request: request, underlyingError: error)
        }
        if Task.isCancelled || error is CancellationError {
            return APIError(.cancelled, "the call was cancelled", request: request, underlyingError: error)
        }
        if let bodyError = error as? BodyReadError {
            var apiError = APIError.wrap(bodyError.underlying, request: request)
            if apiError.code == .transport { apiError.message = "the connection broke while the body arrived: \(bodyError.underlying)" }
            apiError.responseStarted = true
            return apiError
        }
        return APIError.wrap(error, request: request)
    }
}
