public import Foundation

/// A request waiting in the offline queue, in the form it will be sent again.
///
/// Only what is needed to send it again is kept: method, URL, header fields and body bytes.
/// Credentials are never part of it — they are attached by the client's authentication when the
/// request is replayed.
public struct QueuedRequest: Sendable, Hashable, Identifiable {
    /// The queue's id, increasing in the order requests were queued (`0` before it is queued).
    public var id: Int64
    /// When it was queued.
    public var enqueuedAt: Date
    /// The API name, when the call came from a definition.
    public var apiName: String?
    /// The HTTP method (`POST`).
    public var method: String
    /// The absolute URL, with its query.
    public var url: String
    /// The header fields to send (no credentials).
    public var headers: Headers
    /// The body, if any.
    public var body: Data?
    /// Whether the client's credentials are added when it is sent.
    public var needsAuthorization: Bool
    /// The tag, for common headers and concurrency limits.
    public var tag: String?
    /// How many replays have tried it so far.
    public var attempts: Int
    /// The last failure, for the dead-letter list and `callsign queue list`.
    public var lastError: String?
    /// Requests with the same ordering key are sent in the order they were queued; a storage
    /// that can (`PostgresOfflineQueue`) sends different keys in parallel. The request's
    /// ``Request/Fields/orderingKey``, else its API name; `nil` puts it in one common line.
    /// ``MemoryOfflineQueue`` and `SQLiteOfflineQueue` keep one line for all keys, an order that
    /// is stricter still.
    public var orderingKey: String?
    /// Why the stored row of this request could not be read, or `nil` for a request read whole.
    ///
    /// A storage never fails a whole list or replay because one row is damaged or was edited by
    /// hand: the row is read through ``QueuedRequest/reading(storedRow:limits:_:)``, which turns
    /// it into this placeholder — its id and the reason, nothing to send. A replay moves it to
    /// the dead-letter list without sending it and goes on with the next request; `callsign
    /// queue list` shows it; ``APIClient/removeQueuedRequest(_:)`` removes it.
    public var quarantineReason: String?

    /// Creates a queued request. The offline store makes these; storages only keep them.
    public init(
        id: Int64 = 0, enqueuedAt: Date = Date(), apiName: String? = nil, method: String, url: String, headers: Headers,
        body: Data? = nil, needsAuthorization: Bool = false, tag: String? = nil, attempts: Int = 0, lastError: String? = nil,
        orderingKey: String? = nil
    ) {
        self.orderingKey = orderingKey
        self.id = id
        self.enqueuedAt = enqueuedAt
        self.apiName = apiName
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.needsAuthorization = needsAuthorization
        self.tag = tag
        self.attempts = attempts
        self.lastError = lastError
    }

    /// The `Idempotency-Key` every attempt of this request carries.
    public var idempotencyKey: String? { headers["Idempotency-Key"] }
}

/// Which list of the offline queue.
public enum OfflineQueueList: Sendable, Hashable {
    /// Waiting to be sent, oldest first.
    case pending
    /// Failed permanently (a 4xx other than 408 and 429, or a request that cannot be built),
    /// kept with their error for a person to look at.
    case deadLetter
}

/// Where the offline queue keeps requests.
///
/// The core ships ``MemoryOfflineQueue`` (lost when the process ends); `CallsignSQLite` ships
/// `SQLiteOfflineQueue` (a file; every enqueue has committed before the caller hears "queued").
///
/// A storage hands out at most one pending request at a time (``claimNext(lease:owner:)``): the
/// oldest, and only while no other claim on the queue is live. So requests are sent in order,
/// and two replayers — even in two processes — never send the same request twice. A claim
/// belongs to its owner (a token each replay makes): the replayer renews it while a send or a
/// `Retry-After` wait is in flight, and completing, releasing or dead-lettering a request works
/// only with the owner's token, so a replayer whose lease ran out cannot act on a request
/// another has claimed since.
///
/// A storage you write stores a request's header fields with ``StoredFields`` and reads each row
/// through ``QueuedRequest/reading(storedRow:limits:_:)``, as Callsign's own do; hold it to this
/// contract with `QueueStorageConformance` from `CallsignTesting`, the suite Callsign's memory,
/// SQLite and PostgreSQL queues pass.
public protocol OfflineQueueStorage: Sendable {
    /// Whether queued requests survive the process ending.
    var isDurable: Bool { get }
    /// Stores a request at the end of the queue and returns it with its id. Must not return
    /// before the request is stored as durably as the storage promises.
    func enqueue(_ request: QueuedRequest) async throws -> QueuedRequest
    /// The oldest pending request, claimed by `owner` for `lease`; `nil` when the queue is empty
    /// or another replayer holds a live claim.
    func claimNext(lease: Duration, owner: String) async throws -> QueuedRequest?
    /// Extends `owner`'s claim on a request by `lease` from now; `false` when the claim is no
    /// longer theirs (it ran out and another replayer took the request).
    func renewClaim(_ id: Int64, owner: String, lease: Duration) async throws -> Bool
    /// Removes a request `owner` claimed and sent successfully; `false` when the claim was lost.
    func complete(_ id: Int64, owner: String) async throws -> Bool
    /// Gives a claimed request back, at its place in line, with one more attempt and its error;
    /// does nothing when the claim is no longer `owner`'s.
    func release(_ id: Int64, owner: String, error: String) async throws
    /// Moves a claimed request to the dead-letter list with its error; does nothing when the
    /// claim is no longer `owner`'s.
    func moveToDeadLetter(_ id: Int64, owner: String, error: String) async throws
    /// The requests in a list, in queue order.
    func list(_ list: OfflineQueueList) async throws -> [QueuedRequest]
    /// Removes a request from either list; `false` when there is none with that id.
    func remove(_ id: Int64) async throws -> Bool
    /// Moves a dead letter back into the queue, at its original place in line, with its error
    /// cleared; `false` when there is no dead letter with that id. The default throws: a custom
    /// storage implements it to support ``APIClient/retryDeadLetter(_:)``.
    func revive(_ id: Int64) async throws -> Bool
}

extension OfflineQueueStorage {
    /// Throws: this storage does not support moving dead letters back.
    public func revive(_ id: Int64) async throws -> Bool {
        throw APIError(.storage, localized: "this offline queue storage cannot move dead letters back")
    }
}

/// An in-memory ``OfflineQueueStorage``: what a client uses when none is configured. Queued
/// requests are lost when the process ends; use `SQLiteOfflineQueue` from `CallsignSQLite` to
/// keep them.
///
/// ```swift
/// let queue = MemoryOfflineQueue()
/// let client = APIClient(configuration: .init { $0.offline.queue = queue })
/// ```
public actor MemoryOfflineQueue: OfflineQueueStorage {
    private var pending: [QueuedRequest] = []
    private var deadLetters: [QueuedRequest] = []
    private var nextID: Int64 = 1
    private var claim: (id: Int64, owner: String, until: ContinuousClock.Instant)?

    /// Creates an empty queue.
    public init() {}

    public nonisolated var isDurable: Bool { false }

    public func enqueue(_ request: QueuedRequest) -> QueuedRequest {
        var request = request
        request.id = nextID
        nextID += 1
        pending.append(request)
        return request
    }

    /// The oldest pending request, claimed by `owner`, unless another claim is live.
    public func claimNext(lease: Duration, owner: String) -> QueuedRequest? {
        let now = ContinuousClock.now
        if let claim, claim.until > now, pending.contains(where: { $0.id == claim.id }) { return nil }
        guard let first = pending.first else { return nil }
        claim = (first.id, owner, now + lease)
        // Through the same door as a stored row: a request that could never be sent is set aside.
        return QueuedRequest.reading(storedRow: first.id) { first }
    }

    /// Extends `owner`'s claim; `false` when it is no longer theirs.
    public func renewClaim(_ id: Int64, owner: String, lease: Duration) -> Bool {
        guard owns(id, owner) else { return false }
        claim?.until = ContinuousClock.now + lease
        return true
    }

    /// Removes a sent request; `false` when the claim is no longer `owner`'s.
    public func complete(_ id: Int64, owner: String) -> Bool {
        guard owns(id, owner) else { return false }
        pending.removeAll { $0.id == id }
        claim = nil
        return true
    }

    /// Gives a request back with its error, when `owner` still holds it.
    public func release(_ id: Int64, owner: String, error: String) {
        guard owns(id, owner) else { return }
        if let index = pending.firstIndex(where: { $0.id == id }) {
            pending[index].attempts += 1
            pending[index].lastError = error
        }
        claim = nil
    }

    /// Moves a request to the dead-letter list, when `owner` still holds it.
    public func moveToDeadLetter(_ id: Int64, owner: String, error: String) {
        guard owns(id, owner) else { return }
        if let index = pending.firstIndex(where: { $0.id == id }) {
            var request = pending.remove(at: index)
            request.attempts += 1
            request.lastError = error
            deadLetters.append(request)
        }
        claim = nil
    }

    /// Whether `owner` holds the claim on `id` (a lapsed claim still counts until another takes it).
    private func owns(_ id: Int64, _ owner: String) -> Bool {
        claim?.id == id && claim?.owner == owner
    }

    /// Moves a dead letter back to its place in line.
    public func revive(_ id: Int64) async -> Bool {
        guard let index = deadLetters.firstIndex(where: { $0.id == id }) else { return false }
        var request = deadLetters.remove(at: index)
        request.lastError = nil
        pending.insert(request, at: pending.firstIndex { $0.id > id } ?? pending.endIndex)
        return true
    }

    public func list(_ list: OfflineQueueList) -> [QueuedRequest] {
        (list == .pending ? pending : deadLetters).map { request in QueuedRequest.reading(storedRow: request.id) { request } }
    }

    public func remove(_ id: Int64) -> Bool {
        let before = pending.count + deadLetters.count
        pending.removeAll { $0.id == id }
        deadLetters.removeAll { $0.id == id }
        if claim?.id == id { claim = nil }
        return pending.count + deadLetters.count < before
    }
}
