public import Callsign
import Foundation

/// The checks every `OfflineQueueStorage` must pass, shipped so a queue storage written outside
/// the package is held to what `MemoryOfflineQueue`, `SQLiteOfflineQueue` and
/// `PostgresOfflineQueue` are (Callsign's own tests run this suite on each of them).
///
/// Each check gets a fresh, empty storage from `makeStorage`. The checks use one ordering key
/// (`nil`, the common line), whose order every storage keeps. Failures are thrown as
/// ``ConformanceFailure`` (one check) or ``ConformanceFailures`` (a whole run), so the suite
/// works from Swift Testing and XCTest alike.
///
/// ```swift
/// @Test("my queue keeps the offline queue contract", arguments: QueueStorageConformance.Check.allCases)
/// func conforms(check: QueueStorageConformance.Check) async throws {
///     try await QueueStorageConformance { MyQueueStorage() }.run(check)
/// }
/// ```
public struct QueueStorageConformance: ConformanceSuite {
    /// One promise of the `OfflineQueueStorage` contract.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// A queued request comes back equal (method, URL, header fields in order, body, API
        /// name, tag, ordering key, whether it needs authorization), with an id that grows.
        case roundTrip
        /// Requests are claimed oldest first, one at a time: while a claim is live nobody else
        /// gets one; completing it hands out the next.
        case order
        /// Only the claim's owner renews, completes, releases or dead-letters it.
        case ownership
        /// A released request keeps its place in line, with one more attempt and its error.
        case release
        /// A dead letter leaves the line with its error and no longer holds it back; `revive`
        /// puts it back at its place (when the storage revives), `remove` removes from either
        /// list and says `false` for an id it does not hold.
        case deadLetters
        /// A claim whose lease ran out is taken over, and its old owner can no longer complete
        /// it or renew it.
        case leaseExpiry

        /// What the check promises, for a report.
        public var description: String {
            switch self {
            case .roundTrip: "a queued request comes back equal with a growing id"
            case .order: "oldest first, one claim at a time"
            case .ownership: "only the owner acts on a claim"
            case .release: "a released request keeps its place, with its attempt and error"
            case .deadLetters: "dead letters, revive and remove"
            case .leaseExpiry: "an expired lease is taken over"
            }
        }
    }

    /// Whether the storages support `OfflineQueueStorage/revive(_:)`; when `false` the check
    /// expects it to throw.
    public let revivesDeadLetters: Bool
    private let makeStorage: @Sendable () async throws -> any OfflineQueueStorage

    /// A suite for the storages `makeStorage` makes (a fresh, empty one each call).
    ///
    /// - Parameters:
    ///   - revivesDeadLetters: Whether they move dead letters back (`OfflineQueueStorage/revive(_:)`).
    ///   - makeStorage: Makes an empty storage; called once per check.
    public init(revivesDeadLetters: Bool = true, makeStorage: @escaping @Sendable () async throws -> any OfflineQueueStorage) {
        self.revivesDeadLetters = revivesDeadLetters
        self.makeStorage = makeStorage
    }

    /// Runs one check, and throws a ``ConformanceFailure`` naming it when it fails.
    public func run(_ check: Check) async throws {
        let expect = ConformanceExpectation(suite: Self.suite, check: check.description)
        let storage = try await expect.call("makeStorage") { try await makeStorage() }
        let queue = Queue(storage: storage, expect: expect)
        switch check {
        case .roundTrip: try await roundTrip(queue)
        case .order: try await order(queue)
        case .ownership: try await ownership(queue)
        case .release: try await release(queue)
        case .deadLetters: try await deadLetters(queue)
        case .leaseExpiry: try await leaseExpiry(queue)
        }
    }

    static let suite = "QueueStorageConformance"

    /// A request numbered `number`; each has its own `Idempotency-Key`, as the offline store gives.
    private static func request(_ number: Int) -> QueuedRequest {
        var headers: Headers = ["Content-Type": "application/json", "Idempotency-Key": "conformance-\(UUID().uuidString)"]
        headers.add("X-Repeat", "one")
        headers.add("X-Repeat", "two")
        return QueuedRequest(
            enqueuedAt: Date(timeIntervalSince1970: 1_700_000_000 + Double(number)), apiName: "Charge", method: "POST",
            url: "http://127.0.0.1:1/charges/\(number)?q=\(number)", headers: headers, body: Data("{\"n\":\(number)}".utf8),
            needsAuthorization: true, tag: "payments")
    }

    private static func number(_ request: QueuedRequest?) -> String {
        guard let request else { return "none" }
        return request.url.split(separator: "/").last.map { String($0.prefix { $0 != "?" }) } ?? request.url
    }

    /// The storage's calls, each failing the check with what it threw.
    private struct Queue {
        let storage: any OfflineQueueStorage
        let expect: ConformanceExpectation

        func enqueue(_ count: Int) async throws(ConformanceFailure) -> [QueuedRequest] {
            var stored: [QueuedRequest] = []
            for number in 0..<count {
                stored.append(try await expect.call("enqueue(_:)") { try await storage.enqueue(QueueStorageConformance.request(number)) })
            }
            return stored
        }

        func claim(_ owner: String, lease: Duration = .seconds(60)) async throws(ConformanceFailure) -> QueuedRequest? {
            try await expect.call("claimNext(lease:owner:)") { try await storage.claimNext(lease: lease, owner: owner) }
        }

        func complete(_ id: Int64, _ owner: String) async throws(ConformanceFailure) -> Bool {
            try await expect.call("complete(_:owner:)") { try await storage.complete(id, owner: owner) }
        }

        func renew(_ id: Int64, _ owner: String, lease: Duration = .seconds(60)) async throws(ConformanceFailure) -> Bool {
            try await expect.call("renewClaim(_:owner:lease:)") { try await storage.renewClaim(id, owner: owner, lease: lease) }
        }

        func release(_ id: Int64, _ owner: String, _ error: String) async throws(ConformanceFailure) {
            try await expect.call("release(_:owner:error:)") { try await storage.release(id, owner: owner, error: error) }
        }

        func deadLetter(_ id: Int64, _ owner: String, _ error: String) async throws(ConformanceFailure) {
            try await expect.call("moveToDeadLetter(_:owner:error:)") { try await storage.moveToDeadLetter(id, owner: owner, error: error) }
        }

        func list(_ list: OfflineQueueList) async throws(ConformanceFailure) -> [QueuedRequest] {
            try await expect.call("list(_:)") { try await storage.list(list) }
        }
    }

    private func roundTrip(_ queue: Queue) async throws(ConformanceFailure) {
        let expect = queue.expect
        let stored = try await queue.enqueue(2)
        try expect.require(stored[0].id > 0 && stored[1].id > stored[0].id, "ids \(stored.map(\.id)) do not grow from 1 or more")
        let listed = try await queue.list(.pending)
        try expect.require(listed.map(\.id) == stored.map(\.id), "the pending list holds ids \(listed.map(\.id)), not \(stored.map(\.id))")
        let sent = Self.request(0)
        let found = listed[0]
        try expect.require(
            found.method == sent.method && found.url == sent.url && found.body == sent.body && found.apiName == sent.apiName
                && found.tag == sent.tag && found.needsAuthorization == sent.needsAuthorization && found.orderingKey == sent.orderingKey
                && found.attempts == 0 && found.lastError == nil && found.quarantineReason == nil,
            "queued \(sent.method) \(sent.url) came back as \(found.method) \(found.url), attempts \(found.attempts), quarantined: \(found.quarantineReason ?? "no")")
        let names = found.headers.fields.map { "\($0.name): \($0.value)" }
        try expect.require(
            names.filter { !$0.hasPrefix("Idempotency-Key") } == ["Content-Type: application/json", "X-Repeat: one", "X-Repeat: two"]
                && found.idempotencyKey == stored[0].idempotencyKey,
            "header fields came back as \(names.filter { !$0.hasPrefix("Idempotency-Key") }), in another order or without repeats")
        try expect.require(abs(found.enqueuedAt.timeIntervalSince(sent.enqueuedAt)) < 1, "enqueuedAt came back as \(found.enqueuedAt), not \(sent.enqueuedAt)")
    }

    private func order(_ queue: Queue) async throws(ConformanceFailure) {
        let expect = queue.expect
        let stored = try await queue.enqueue(3)
        for index in stored.indices {
            let claimed = try expect.require(try await queue.claim("one"), "claim \(index + 1) of 3 found nothing")
            try expect.require(claimed.id == stored[index].id, "claim \(index + 1) handed out request \(Self.number(claimed)), not \(index)")
            let other = try await queue.claim("two")
            try expect.require(other == nil, "while request \(index) is claimed, another owner got request \(Self.number(other))")
            try expect.require(try await queue.complete(claimed.id, "one"), "completing a live claim said false")
        }
        try expect.require(try await queue.claim("one") == nil, "an empty queue handed out a request")
        try expect.require(try await queue.list(.pending).isEmpty, "completed requests are still pending")
    }

    private func ownership(_ queue: Queue) async throws(ConformanceFailure) {
        let expect = queue.expect
        let stored = try await queue.enqueue(1)
        let claimed = try expect.require(try await queue.claim("one"), "nothing to claim")
        try expect.require(try await queue.renew(claimed.id, "two") == false, "another owner renewed the claim")
        try expect.require(try await queue.complete(claimed.id, "two") == false, "another owner completed the claim")
        try await queue.release(claimed.id, "two", "not mine")
        try await queue.deadLetter(claimed.id, "two", "not mine")
        let pending = try await queue.list(.pending)
        try expect.require(
            pending.map(\.id) == [stored[0].id] && pending[0].attempts == 0 && pending[0].lastError == nil,
            "another owner's release or dead-letter changed the request (attempts \(pending.first?.attempts ?? -1), error \(pending.first?.lastError ?? "none"))")
        try expect.require(try await queue.list(.deadLetter).isEmpty, "another owner moved the request to the dead letters")
        try expect.require(try await queue.renew(claimed.id, "one"), "the owner could not renew a live claim")
        try expect.require(try await queue.complete(claimed.id, "one"), "the owner could not complete a live claim")
    }

    private func release(_ queue: Queue) async throws(ConformanceFailure) {
        let expect = queue.expect
        let stored = try await queue.enqueue(2)
        let first = try expect.require(try await queue.claim("one"), "nothing to claim")
        try await queue.release(first.id, "one", "503 Service Unavailable")
        let again = try expect.require(try await queue.claim("two"), "a released request could not be claimed again")
        try expect.require(again.id == stored[0].id, "after a release, request \(Self.number(again)) came first, not 0")
        try expect.require(
            again.attempts == 1 && again.lastError == "503 Service Unavailable",
            "a released request came back with attempts \(again.attempts) and error \(again.lastError ?? "none"), not 1 and its error")
    }

    private func deadLetters(_ queue: Queue) async throws(ConformanceFailure) {
        let expect = queue.expect
        let stored = try await queue.enqueue(3)
        let first = try expect.require(try await queue.claim("one"), "nothing to claim")
        try await queue.deadLetter(first.id, "one", "422 Unprocessable Content")
        let dead = try await queue.list(.deadLetter)
        try expect.require(
            dead.map(\.id) == [stored[0].id] && dead[0].lastError == "422 Unprocessable Content",
            "the dead letters hold \(dead.map(\.id)) with error \(dead.first?.lastError ?? "none"), not request 0 with its error")
        try expect.require(try await queue.list(.pending).map(\.id) == [stored[1].id, stored[2].id], "a dead letter is still pending")
        let next = try expect.require(try await queue.claim("one"), "a dead letter holds the line back")
        try expect.require(next.id == stored[1].id, "after a dead letter, request \(Self.number(next)) came next, not 1")
        try await queue.release(next.id, "one", "later")
        do {
            let revived = try await storage(queue).revive(first.id)
            try expect.require(revivesDeadLetters, "revive(_:) did not throw, but the suite was told this storage cannot revive")
            try expect.require(revived, "revive(_:) of a dead letter said false")
            let back = try expect.require(try await queue.claim("one"), "nothing to claim after revive")
            try expect.require(back.id == first.id, "a revived dead letter is not back at its place in line: request \(Self.number(back)) came first")
            try await queue.release(back.id, "one", "again")
        } catch let failure as ConformanceFailure {
            throw failure
        } catch {
            try expect.require(!revivesDeadLetters, "revive(_:) threw \(error)")
        }
        let removed = try await expect.call("remove(_:)") { try await queue.storage.remove(stored[2].id) }
        try expect.require(removed, "remove(_:) of a pending request said false")
        try expect.require(!(try await queue.list(.pending).contains { $0.id == stored[2].id }), "a removed request is still pending")
        let unknown = try await expect.call("remove(_:)") { try await queue.storage.remove(Int64.max) }
        try expect.require(!unknown, "remove(_:) of an id the queue never gave said true")
    }

    private func storage(_ queue: Queue) -> any OfflineQueueStorage { queue.storage }

    private func leaseExpiry(_ queue: Queue) async throws(ConformanceFailure) {
        let expect = queue.expect
        _ = try await queue.enqueue(1)
        let slow = try expect.require(try await queue.claim("slow", lease: .milliseconds(50)), "nothing to claim")
        // The lease runs on the storage's own clock (the process's, or the database's), which a
        // test cannot move: ask until it has run out, within a bound that fails the check.
        let clock = ContinuousClock()
        // Generous: a busy machine can hold the pool for seconds. Asked every 25 ms, never in a
        // spin that would itself hold a thread of the pool.
        let giveUp = clock.now + .seconds(120)
        var taken: QueuedRequest?
        while taken == nil, clock.now < giveUp {
            taken = try await queue.claim("fast")
            if taken == nil { try? await Task.sleep(for: .milliseconds(25)) }
        }
        let fast = try expect.require(taken, "a claim with a 50 ms lease was not taken over within 120 s")
        try expect.require(fast.id == slow.id, "the expired claim's request was not the one handed out")
        try expect.require(try await queue.renew(slow.id, "slow") == false, "the old owner renewed a claim another holds now")
        try expect.require(try await queue.complete(slow.id, "slow") == false, "the old owner completed a claim another holds now")
        try expect.require(try await queue.complete(fast.id, "fast"), "the new owner could not complete")
    }
}
