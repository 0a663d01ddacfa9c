import Foundation
import HTTPTypes

extension APIClient {
    /// Sends the requests waiting in the offline queue, oldest first, through the normal chain
    /// below the offline stage (deadline, retry, redirects, authentication with a fresh token,
    /// cache, transport).
    ///
    /// A request counts as delivered only on a 2xx from its own URL: redirects are not followed
    /// during a replay (a queued POST answered `302 → /login` must not turn into a GET and be
    /// counted as sent). A 3xx or a 401 keeps the request in line with a report — a 401 usually
    /// means "sign in again", not "the request is bad". Another 4xx (not 408 or 429), or a request
    /// that can no longer be built, moves it to the dead-letter list with its error
    /// (``retryDeadLetter(_:)`` moves it back). Any other failure keeps it in line and ends the
    /// replay there, so requests are never sent out of order; call `replay()` again later. Two
    /// replayers, even in two processes sharing one `SQLiteOfflineQueue`, never send the same
    /// request twice.
    ///
    /// ```swift
    /// let report = try await client.replay()
    /// print("sent \(report.sent), dead-lettered \(report.deadLettered), still queued \(report.remaining)")
    /// ```
    ///
    /// - Parameter lease: how long a claim on the head of the queue lasts without renewal. The
    ///   replayer renews it every third of the lease while a send or a `Retry-After` wait is in
    ///   flight, so a slow send never loses it; a replayer that crashed releases it when the
    ///   lease ends. Default 5 minutes.
    /// - Throws: ``APIError``: ``APIError/Code/storage`` when the queue cannot be read or written,
    ///   ``APIError/Code/cancelled`` when the task is cancelled (the request in flight stays queued).
    public func replay(lease: Duration = .seconds(300)) async throws(APIError) -> OfflineReplayReport {
        var items: [OfflineReplayReport.Item] = []
        let owner = UUID().uuidString  // this replay's claims: only it can finish them
        while let item = try await replayNext(owner: owner, lease: lease) {
            items.append(item)
            if case .keptForLater = item.outcome { break }  // order holds, so the replay ends here
        }
        let remaining = try await queueOperation("count the queue") { try await $0.list(.pending).count }
        return OfflineReplayReport(items: items, remaining: remaining)
    }

    /// Claims the next request the queue hands out and sends it (see ``replay(lease:)``):
    /// removed on a 2xx, dead-lettered on a permanent failure, released otherwise. `nil` when
    /// nothing is ready. For replayers that run their own loop, such as `CallsignPostgres`'s worker.
    ///
    /// - Parameter owner: the claims' token; one per replayer.
    package func replayNext(owner: String, lease: Duration) async throws(APIError) -> OfflineReplayReport.Item? {
        if Task.isCancelled { throw APIError(.cancelled, localized: "the replay was cancelled") }
        guard let entry = try await queueOperation("claim the next queued request", { try await $0.claimNext(lease: lease, owner: owner) })
        else { return nil }
        if entry.quarantineReason != nil {
            // A row that cannot be read is set aside unsent; the replay goes on with the next.
            let failure = try await queueOperation("dead-letter a request") { try await $0.quarantine(entry, owner: owner) }
            return OfflineReplayReport.Item(request: entry, outcome: .deadLettered(failure))
        }
        let failure: APIError
        let permanent: Bool
        do throws(APIError) {
            let response = try await sendRenewingClaim(Self.replayCall(entry), id: entry.id, owner: owner, lease: lease)
            let code = response.status.code
            if (200..<300).contains(code) {
                _ = try await queueOperation("remove a sent request") { try await $0.complete(entry.id, owner: owner) }
                return OfflineReplayReport.Item(request: entry, outcome: .sent(response))
            }
            failure = APIError(.unacceptableStatus, localized: Self.replayFailure(code, response: response), response: response)
            permanent = Self.isPermanent(code)
        } catch {
            if error.code == .storage { throw error }
            failure = error
            permanent = [APIError.Code.invalidRequest, .encoding, .redirect].contains(error.code)
        }
        if permanent {
            try await queueOperation("dead-letter a request") {
                try await $0.moveToDeadLetter(entry.id, owner: owner, error: failure.message)
            }
            return OfflineReplayReport.Item(request: entry, outcome: .deadLettered(failure))
        }
        try await queueOperation("keep a request") { try await $0.release(entry.id, owner: owner, error: failure.message) }
        if failure.code == .cancelled { throw failure }
        return OfflineReplayReport.Item(request: entry, outcome: .keptForLater(failure))
    }

    /// The form `request` takes in the offline queue — URL resolved, headers and body as they
    /// would be sent, an `Idempotency-Key` added if it has none — refused if it carries a secret.
    /// For outboxes that write it themselves, inside an app's own transaction.
    package func queuedForm(of request: Request) async throws(APIError) -> QueuedRequest {
        var request = request
        request.addIdempotencyKeyIfMissing()
        return try await OfflineStage.queuedForm(
            of: request, factory: factory, redaction: credentialRedaction)
    }

    /// The requests in the offline queue (or its dead-letter list), oldest first.
    ///
    /// ```swift
    /// for queued in try await client.queuedRequests() { print(queued.id, queued.method, queued.url) }
    /// ```
    public func queuedRequests(_ list: OfflineQueueList = .pending) async throws(APIError) -> [QueuedRequest] {
        try await queueOperation("list the queue") { try await $0.list(list) }
    }

    /// Removes a request from the offline queue or its dead-letter list; `false` when there was
    /// none with that id.
    @discardableResult
    public func removeQueuedRequest(_ id: Int64) async throws(APIError) -> Bool {
        try await queueOperation("remove a queued request") { try await $0.remove(id) }
    }

    /// Sends a claimed request while renewing the claim every third of `lease`, so a slow send
    /// or a long `Retry-After` wait never lets another replayer take the same request.
    private func sendRenewingClaim(_ call: Call, id: Int64, owner: String, lease: Duration) async throws(APIError) -> Response {
        let queue = offlineQueue
        let interval = max(lease / 3, .milliseconds(10))
        do {
            return try await withThrowingTaskGroup(of: Response?.self) { group in
                group.addTask { try await self.perform(call) }
                group.addTask {
                    while true {
                        try await Task.sleep(for: interval)
                        guard try await queue.renewClaim(id, owner: owner, lease: lease) else {
                            throw APIError(.storage, localized: "the claim on queued request #\(id) was lost; it stays queued for the replayer that holds it")
                        }
                    }
                }
                defer { group.cancelAll() }
                while let result = try await group.next() {
                    if let response = result { return response }
                }
                throw APIError(.cancelled, localized: "the replay was cancelled")
            }
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError.wrap(error, request: call.request)
        }
    }

    /// Moves a request from the dead-letter list back into the queue, at its original place in
    /// line; `false` when there is no dead letter with that id.
    ///
    /// ```swift
    /// for dead in try await client.queuedRequests(.deadLetter) where dead.lastError?.contains("422") == true {
    ///     try await client.retryDeadLetter(dead.id)
    /// }
    /// ```
    @discardableResult
    public func retryDeadLetter(_ id: Int64) async throws(APIError) -> Bool {
        try await queueOperation("move a dead letter back") { try await $0.revive(id) }
    }

    /// 4xx answers that sending again cannot fix. A 401 is not one: signing in again fixes it.
    static func isPermanent(_ status: Int) -> Bool {
        (400..<500).contains(status) && ![401, 408, 429].contains(status)
    }

    /// Why a replayed request was not delivered, in words a report can show.
    private static func replayFailure(_ code: Int, response: Response) -> LocalizedMessage {
        switch code {
        case 300..<400:
            if let location = response.headers[.location] {
                return "the server answered \(code) (a redirect to \(Redaction.default.redact(url: location))); a queued request is delivered only by a 2xx from its own URL, so it stays queued" as LocalizedMessage
            }
            return "the server answered \(code) (a redirect); a queued request is delivered only by a 2xx from its own URL, so it stays queued" as LocalizedMessage
        case 401:
            return "the server answered 401: sign in again (the request stays queued and is sent with fresh credentials next time)" as LocalizedMessage
        default:
            return "the server answered \(code)" as LocalizedMessage
        }
    }

    static func replayCall(_ entry: QueuedRequest) -> Call {
        var request = Request(
            method: HTTPRequest.Method(entry.method) ?? .post, path: RedirectStage.literalPath(entry.url), headers: entry.headers,
            body: entry.body.map { RequestBody(content: .data($0), contentType: nil) })
        request.apiName = entry.apiName
        request.orderingKey = entry.orderingKey
        request.tag = entry.tag
        request.needsAuthorization = entry.needsAuthorization
        var call = Call(request)
        call.context.fields.isReplay = true
        return call
    }

    private func queueOperation<T: Sendable>(
        _ what: String, _ body: (any OfflineQueueStorage) async throws -> T
    ) async throws(APIError) -> T {
        do {
            return try await body(offlineQueue)
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(.storage, localized: "the offline queue failed (\(what)): \(error)", underlyingError: error)
        }
    }
}

/// What one ``APIClient/replay(lease:)`` did.
public struct OfflineReplayReport: Sendable {
    /// One queued request and what happened to it.
    public struct Item: Sendable {
        /// The request as it was queued.
        public var request: QueuedRequest
        /// What happened.
        public var outcome: Outcome
    }

    /// What happened to one queued request.
    public enum Outcome: Sendable {
        /// Sent and accepted; removed from the queue.
        case sent(Response)
        /// Failed permanently; moved to the dead-letter list.
        case deadLettered(APIError)
        /// Failed for now; kept in line (the replay stopped here).
        case keptForLater(APIError)
    }

    /// Every request tried, in order.
    public var items: [Item]
    /// How many requests are still waiting.
    public var remaining: Int

    /// How many were sent.
    public var sent: Int { items.filter { if case .sent = $0.outcome { true } else { false } }.count }
    /// How many moved to the dead-letter list.
    public var deadLettered: Int { items.filter { if case .deadLettered = $0.outcome { true } else { false } }.count }
}
