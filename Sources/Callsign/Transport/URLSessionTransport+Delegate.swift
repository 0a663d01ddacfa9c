import Foundation
import HTTPTypes
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Safe to share: its one stored property is a `let`, and the only calls made through it are
/// `URLSessionTask.resume()` and `cancel()`, which Foundation documents as callable from any
/// thread (the task synchronises its own state). `URLSessionDataTask` itself is not declared
/// `Sendable` in FoundationNetworking, hence the box.
final class TaskBox: @unchecked Sendable {
    let task: URLSessionDataTask
    fileprivate init(_ task: URLSessionDataTask) { self.task = task }

    /// Where tasks are made, started and cancelled, and sessions invalidated. FoundationNetworking's
    /// `dataTask(with:)`, `resume()`, `cancel()` and `invalidateAndCancel()` wait for the one work
    /// queue all its sessions share, which can be busy for seconds (inflating a large gzip body,
    /// reading a hostile head of many lines); a thread of the concurrency pool must never wait
    /// there — with two of them on a two-core machine, every task, timer and deadline of the
    /// process would stall with it. A queue of its own gets a thread of its own.
    private static let queue = DispatchQueue(label: "callsign.urlsession.tasks")

    /// Runs `work` on that queue and returns what it made.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { done in
            queue.async { done.resume(returning: work()) }
        }
    }

    /// A new data task for `request`, made off the caller's thread.
    static func make(_ request: URLRequest, in session: URLSession) async -> TaskBox {
        await offPool { TaskBox(session.dataTask(with: request)) }
    }

    /// Starts the task off the caller's thread.
    func resumeInBackground() {
        Self.queue.async { self.task.resume() }
    }

    /// Cancels the task off the caller's thread.
    func cancelInBackground() {
        Self.queue.async { self.task.cancel() }
    }
}

/// Routes delegate callbacks to the waiting call, by task identifier.
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    /// A call waiting for its task: for the head, then the body chunk by chunk; or, for a body
    /// read whole (``WireRequest/BodyReading/collect(limit:)``), for both at once.
    enum Pending {
        case streaming(head: CheckedContinuation<HTTPURLResponse, any Error>?, body: AsyncThrowingStream<Data, any Error>.Continuation)
        case collecting(Collecting)
    }

    /// A body collected here, on the session's queue, so that the calling task resumes once.
    struct Collecting {
        let whole: CheckedContinuation<Collected, any Error>
        let limit: Int
        let progress: (@Sendable (_ received: Int64, _ expected: Int64?) -> Void)?
        var head: HTTPURLResponse?
        var expected: Int64?
        var body = Data()
        /// When the task was registered, and what was seen since.
        let started = ContinuousClock.now
        var timings = PhaseTimings()
        /// The task's metrics, when URLSession delivered them before the task's end.
        var measured: TransactionDates?

        /// The timings to hand over: URLSession's metrics where it has them, else what was seen.
        var reported: PhaseTimings {
            guard let metrics = measured?.timings else { return timings }
            return metrics.filling(from: timings)
        }

        /// What the caller gets for `body`.
        func collected(_ head: HTTPURLResponse, _ body: Result<Data, APIError>) -> Collected {
            Collected(head: head, body: body, timings: reported, httpVersion: measured?.httpVersion)
        }
    }

    /// What a collecting call gets: the head, and the body or why it broke off after the head,
    /// and what is known of the exchange's timings and protocol.
    struct Collected: @unchecked Sendable {
        // `HTTPURLResponse` is immutable once made; FoundationNetworking does not mark it Sendable.
        let head: HTTPURLResponse
        let body: Result<Data, APIError>
        let timings: PhaseTimings
        let httpVersion: String?
    }

    let pending = Mutex<[Int: Pending]>([:])
    /// What to answer a proxy's challenge with, for a session that goes through a proxy.
    let proxyCredentials: Proxy.Credentials?
    /// The trust roots and pins the server-trust challenge checks (Apple platforms).
    let tls: TLSSettings
    /// Why a task's server was refused, by task identifier, for the error its completion reports.
    let refusals = Mutex<[Int: APIError]>([:])
    /// Who is told the bytes of each task's body as they are written, by task identifier.
    private let sendProgress = Mutex<[Int: @Sendable (Int64) -> Void]>([:])

    /// The app's answers to what Callsign leaves open.
    let hooks: URLSessionHooks

    init(proxyCredentials: Proxy.Credentials?, tls: TLSSettings, hooks: URLSessionHooks) {
        self.proxyCredentials = proxyCredentials
        self.tls = tls
        self.hooks = hooks
    }

    func register(
        _ identifier: Int, head: CheckedContinuation<HTTPURLResponse, any Error>,
        body: AsyncThrowingStream<Data, any Error>.Continuation
    ) {
        pending.withLock { $0[identifier] = .streaming(head: head, body: body) }
    }

    /// Registers a call that reads its body whole: resumed once, when the task completes, with
    /// the head and at most `limit` bytes of body.
    func register(
        _ identifier: Int, collecting whole: CheckedContinuation<Collected, any Error>, limit: Int,
        progress: (@Sendable (_ received: Int64, _ expected: Int64?) -> Void)?
    ) {
        pending.withLock { $0[identifier] = .collecting(Collecting(whole: whole, limit: limit, progress: progress)) }
    }

    /// Registers who is told the bytes of a task's body as the session writes them.
    func register(_ identifier: Int, sendProgress report: @escaping @Sendable (Int64) -> Void) {
        sendProgress.withLock { $0[identifier] = report }
    }

    /// Ends a task's wait at once, as cancelled: the head's waiter and the body's reader. What
    /// URLSession reports for it later finds nothing to resume.
    func abandon(_ identifier: Int) {
        sendProgress.withLock { _ = $0.removeValue(forKey: identifier) }
        guard let entry = pending.withLock({ $0.removeValue(forKey: identifier) }) else { return }
        Self.end(entry, throwing: CancellationError())
    }

    /// Ends a task's wait because its attempt's deadline passed: a call waiting for its head or
    /// collecting its body gets ``Deadline/Expired``; a stream whose head has arrived is left
    /// alone (its body is read under the idle limit and the call's deadline). Returns whether it
    /// ended a wait: only then is the task to be cancelled.
    func expire(_ identifier: Int) -> Bool {
        let entry = pending.withLock { table -> Pending? in
            switch table[identifier] {
            case .collecting, .streaming(_?, _): return table.removeValue(forKey: identifier)
            case .streaming(nil, _), nil: return nil
            }
        }
        guard let entry else { return false }
        Self.end(entry, throwing: Deadline.Expired())
        return true
    }

    /// Resumes whoever waits on `entry` with `error`. Every entry is resumed once: only by the
    /// one who removed it from the table.
    private static func end(_ entry: Pending, throwing error: any Error) {
        switch entry {
        case .streaming(let head, let body):
            head?.resume(throwing: error)
            body.finish(throwing: error)
        case .collecting(let collecting):
            collecting.whole.resume(throwing: error)
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let identifier = dataTask.taskIdentifier
        guard let http = response as? HTTPURLResponse else {
            if let entry = pending.withLock({ $0.removeValue(forKey: identifier) }) {
                Self.end(entry, throwing: APIError(.invalidResponse, localized: "the response is not an HTTP response"))
            }
            completionHandler(.cancel)
            return
        }
        // A length past a collecting call's limit ends the task before any of the body is read.
        let expected = http.expectedContentLength >= 0 ? http.expectedContentLength : nil
        enum Step { case headArrived(CheckedContinuation<HTTPURLResponse, any Error>), collecting(Collecting), tooLarge(Collecting), nothing }
        let step = pending.withLock { table -> Step in
            switch table[identifier] {
            case .streaming(let head?, let body):
                table[identifier] = .streaming(head: nil, body: body)
                return .headArrived(head)
            case .collecting(var collecting):
                collecting.head = http
                collecting.expected = expected
                collecting.timings.firstByte = collecting.started.duration(to: .now)
                if let expected, expected > Int64(collecting.limit) {
                    table[identifier] = nil
                    return .tooLarge(collecting)
                }
                table[identifier] = .collecting(collecting)
                return .collecting(collecting)
            case .streaming(nil, _), nil:
                return .nothing
            }
        }
        switch step {
        case .headArrived(let head):
            head.resume(returning: http)
        case .collecting(let collecting):
            collecting.progress?(0, expected)
        case .tooLarge(let collecting):
            collecting.whole.resume(returning: collecting.collected(http, .failure(ResponseBodyStream.failureAfterHead(ResponseBodyStream.tooLarge(collecting.limit)))))
            // FoundationNetworking ignores the disposition: the task is ended here, so that the
            // body it would go on reading is not downloaded.
            TaskBox(dataTask).cancelInBackground()
            completionHandler(.cancel)
            return
        case .nothing:
            break
        }
        completionHandler(.allow)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        sendProgress.withLock { $0[task.taskIdentifier] }?(totalBytesSent)
        guard totalBytesSent == totalBytesExpectedToSend else { return }
        // The whole body written: the request is sent.
        pending.withLock { table in
            guard case .collecting(var collecting) = table[task.taskIdentifier] else { return }
            table[task.taskIdentifier] = nil
            collecting.timings.requestSent = collecting.started.duration(to: .now)
            table[task.taskIdentifier] = .collecting(collecting)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let identifier = dataTask.taskIdentifier
        enum Step { case stream(AsyncThrowingStream<Data, any Error>.Continuation), progress(Collecting), tooLarge(Collecting), nothing }
        let step = pending.withLock { table -> Step in
            switch table[identifier] {
            case .streaming(_, let body):
                return .stream(body)
            case .collecting(var collecting):
                guard collecting.body.count <= collecting.limit - min(data.count, collecting.limit) else {
                    table[identifier] = nil
                    return .tooLarge(collecting)
                }
                // Moved out of the table while it grows, so that the append does not copy it.
                table[identifier] = nil
                collecting.body.append(data)
                table[identifier] = .collecting(collecting)
                return .progress(collecting)
            case nil:
                return .nothing
            }
        }
        switch step {
        case .stream(let body):
            body.yield(data)
        case .progress(let collecting):
            collecting.progress?(Int64(collecting.body.count), collecting.expected)
        case .tooLarge(let collecting):
            if let head = collecting.head {
                collecting.whole.resume(returning: collecting.collected(head, .failure(ResponseBodyStream.failureAfterHead(ResponseBodyStream.tooLarge(collecting.limit)))))
            } else {
                collecting.whole.resume(throwing: ResponseBodyStream.tooLarge(collecting.limit))
            }
            TaskBox(dataTask).cancelInBackground()
        case .nothing:
            break
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        sendProgress.withLock { _ = $0.removeValue(forKey: task.taskIdentifier) }
        let refusal = refusals.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let refusal {
            Self.end(entry, throwing: refusal)
            return
        }
        switch entry {
        case .streaming(let head, let body):
            if let error {
                head?.resume(throwing: error)
                body.finish(throwing: error)
            } else {
                head?.resume(throwing: Self.noResponse)
                body.finish()
            }
        case .collecting(var collecting):
            guard let head = collecting.head else {
                collecting.whole.resume(throwing: error ?? Self.noResponse)
                return
            }
            collecting.timings.complete = collecting.started.duration(to: .now)
            // Once the head is in, a failure belongs to the body: the head is handed back with a
            // body that fails as it did, so the caller's error still holds status and headers.
            if let error {
                collecting.whole.resume(returning: collecting.collected(head, .failure(ResponseBodyStream.failureAfterHead(error))))
            } else {
                collecting.whole.resume(returning: collecting.collected(head, .success(collecting.body)))
            }
        }
    }

    static var noResponse: APIError {
        APIError(.invalidResponse, localized: "the server closed the connection without a response")
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        // Callsign follows redirects itself: a task has one transaction, the last one is its own.
        if let transaction = metrics.transactionMetrics.last {
            let dates = TransactionDates(transaction)
            pending.withLock { table in
                guard case .collecting(var collecting) = table[task.taskIdentifier] else { return }
                table[task.taskIdentifier] = nil
                collecting.measured = dates
                table[task.taskIdentifier] = .collecting(collecting)
            }
        }
        hooks.metrics?(metrics, task)
    }


    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        // Redirects are Callsign's to follow, under one policy for every transport.
        completionHandler(nil)
    }
}


extension TransactionDates {
    /// What one transaction's metrics say, read the same way on every platform (the port is a
    /// number on Apple platforms and text in FoundationNetworking: read through its description).
    init(_ transaction: URLSessionTaskTransactionMetrics) {
        self.init(
            fetchStart: transaction.fetchStartDate, domainLookupEnd: transaction.domainLookupEndDate, connectEnd: transaction.connectEndDate,
            secureConnectionStart: transaction.secureConnectionStartDate, secureConnectionEnd: transaction.secureConnectionEndDate,
            requestStart: transaction.requestStartDate, requestEnd: transaction.requestEndDate, responseStart: transaction.responseStartDate,
            responseEnd: transaction.responseEndDate, reusedConnection: transaction.isReusedConnection,
            networkProtocol: transaction.networkProtocolName, remoteAddress: transaction.remoteAddress,
            remotePort: transaction.remotePort.map { "\($0)" })
    }
}
