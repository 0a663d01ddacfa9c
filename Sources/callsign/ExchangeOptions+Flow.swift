import Callsign
import Foundation

/// An answer printed as it arrives: the head as soon as it is there, then the body chunk by
/// chunk (``BodyFlow``), unless what is asked of it needs it whole.
extension ExchangeOptions {
    /// Whether the answer's body may go to standard output as it arrives: it is printed there
    /// (no `-o`, and `--print` names `b`), and neither the cache, the offline queue nor a HAR
    /// recording needs the answer whole.
    func flowsBody() throws -> Bool {
        let printsBody = try selection().responseBody
        return output == nil && cache == nil && !queueOffline && har == nil && printsBody
    }

    /// Sends the request and prints its answer as it arrives. An answer shown whole is read
    /// whole first, as a call reads one, within `limit`: JSON re-indented for a person (on a
    /// terminal, or `--pretty`), a body the validation reads (a declared object, an envelope), and
    /// a failure (its error line quotes the body's problem details).
    func flow(_ request: Request, client: APIClient, limit: Int, session: ActiveSession?, jar: CookieJar?, waits: RetryWaits) async throws {
        let started = ContinuousClock.now
        var answer: Response?
        var downloaded: Int?
        do {
            let streamed = try await client.stream(request)
            let response = streamed.response
            answer = response
            if let session, let jar { try await session.save(cookies: jar) }
            waits.explain(response, quiet: quiet)
            if try selection().responseHead { ResponsePrinter.printHead(response, colors: display.headColors(on: FileHandle.standardOutput.fileDescriptor)) }
            if response.validationReadsBody || verdict(on: response).failure != nil || (display.prettyPrints && Self.mayBeJSON(response)) {
                let whole = try await streamed.collected(upTo: limit)
                answer = whole
                try show(whole)
                writeOut(response: whole, error: nil, since: started)
                return
            }
            // A body that flows is bounded as one read whole is (`Limits.maximumResponseBodySize`;
            // `callsign download` takes larger ones to a file), except an event stream: endless
            // by design, it holds no more memory for that. `--timeout` bounds an attempt, body
            // included, as when the body is read whole.
            let isEventStream = response.headers.value(of: .contentType).map { Response.mediaType(of: $0[...]) == "text/event-stream" } ?? false
            let cap = isEventStream ? nil : limit
            if let cap, let declared = response.declaredLength, declared > cap {
                throw streamed.bodyFailure(ResponseBodyStream.tooLarge(cap))
            }
            let left = request.timeout.map { $0 - (response.timings.firstByte ?? .zero) }
            let (flow, failure) = await Self.pour(
                streamed.chunks, into: BodyFlow(onTerminal: display.showsOnTerminal, endsLine: display.prettyPrints),
                upTo: cap, within: left, limit: request.timeout)
            downloaded = flow.received
            try Task.checkCancellation()  // Ctrl-C ended the body: an interruption, not its end
            if let failure { throw streamed.bodyFailure(failure) }
        } catch {
            writeOut(response: answer, error: error, since: started, downloaded: downloaded)
            throw error
        }
        writeOut(response: answer, error: nil, since: started, downloaded: downloaded)
    }

    /// Writes `chunks` through `flow` until the body ends, breaks off, passes `cap` bytes, or
    /// `left` has passed (the attempt's time limit, `limit`, counted from its start); returns the
    /// flow and what ended it early.
    private static func pour(
        _ chunks: ResponseBodyStream, into flow: BodyFlow, upTo cap: Int?, within left: Duration?, limit: Duration?
    ) async -> (BodyFlow, (any Error)?) {
        enum Outcome: Sendable {
            /// The body was read to its end or to what stopped it.
            case read(BodyFlow, (any Error)?)
            /// The attempt's time ran out first.
            case late
            /// The timer was stopped: the body ended first.
            case timerStopped
        }
        return await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                var flow = flow
                defer { flow.finish() }
                do {
                    for try await chunk in chunks {
                        if let cap, flow.received > cap - chunk.count { return .read(flow, ResponseBodyStream.tooLarge(cap)) }
                        flow.write(chunk)
                    }
                    return .read(flow, nil)
                } catch {
                    return .read(flow, error)
                }
            }
            if let left {
                group.addTask {
                    do {
                        try await Task.sleep(for: max(left, .zero))
                        return .late
                    } catch {
                        return .timerStopped
                    }
                }
            }
            var read = flow
            var outcome: (any Error)?
            var late = false
            while let next = await group.next() {
                switch next {
                case .read(let flow, let failure):
                    (read, outcome) = (flow, failure)
                case .late:
                    late = true
                case .timerStopped:
                    break
                }
                group.cancelAll()  // the first to end stops the other
            }
            guard late else { return (read, outcome) }
            let described = APIClient.describe(limit ?? left ?? .zero)
            return (read, cliError(.timedOut, "no complete answer within \(described): the --timeout of an attempt passed while the body arrived"))
        }
    }

    /// Whether a body may be JSON, by its `Content-Type`: JSON or `+json`, or none said.
    static func mayBeJSON(_ response: Response) -> Bool {
        guard let type = response.headers.value(of: .contentType) else { return true }
        let media = Response.mediaType(of: type[...])
        return media.isEmpty || media == "application/json" || media.hasSuffix("+json")
    }
}
