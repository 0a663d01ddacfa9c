public import Callsign
import Foundation
import HTTPTypes

/// The checks every `HTTPCacheStorage` must pass, shipped so a storage written outside the
/// package is held to what `MemoryCacheStorage`, `SQLiteCacheStorage` and
/// `PostgresCacheStorage` are (Callsign's own tests run this suite on each of them).
///
/// Each check gets a fresh, empty storage from `makeStorage`, so checks do not see one another's
/// entries. Failures are thrown as ``ConformanceFailure`` (one check) or ``ConformanceFailures``
/// (a whole run), so the suite works from Swift Testing and XCTest alike.
///
/// ```swift
/// @Test("my storage keeps the cache storage contract", arguments: CacheStorageConformance.Check.allCases)
/// func conforms(check: CacheStorageConformance.Check) async throws {
///     try await CacheStorageConformance(byteBudget: 64 << 10) { try MyCacheStorage(budget: 64 << 10) }.run(check)
/// }
/// ```
public struct CacheStorageConformance: ConformanceSuite {
    /// One promise of the `HTTPCacheStorage` contract.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// A stored response comes back equal: status, fields in order with repeated names,
        /// binary body, varying headers and both times.
        case roundTrip
        /// Each variant of a URL is kept apart (`Vary`), newest first; storing the same variant
        /// again replaces it.
        case variants
        /// URL, partition and method are each part of the key: one user's entry is never
        /// another's, a `GET` is not a `HEAD`, `/a` is not `/a/b`.
        case keyParts
        /// `removeEntries(url:)` removes every partition, method and variant of that URL and no
        /// other URL; `removeEntries(partition:)` removes that partition; `removeAll()` everything.
        case removal
        /// `partitionKey()` is at least 16 bytes and the same on every call.
        case partitionKey
        /// Past the byte budget the least recently used entries go first, the newest stays, and
        /// no more than the budget is kept (only with a `byteBudget`).
        case byteBudget

        /// What the check promises, for a report.
        public var description: String {
            switch self {
            case .roundTrip: "a stored response comes back equal"
            case .variants: "variants are kept apart, newest first, and replaced in place"
            case .keyParts: "URL, partition and method each separate entries"
            case .removal: "removal by URL, by partition and of everything"
            case .partitionKey: "the partition key is long enough and stable"
            case .byteBudget: "past the byte budget the least recently used go first"
            }
        }
    }

    /// The budget the storages `makeStorage` makes keep, for ``Check/byteBudget``; `nil` skips it.
    public let byteBudget: Int?
    private let makeStorage: @Sendable () async throws -> any HTTPCacheStorage

    /// A suite for the storages `makeStorage` makes (a fresh, empty one each call).
    ///
    /// - Parameters:
    ///   - byteBudget: The byte budget those storages keep, at least 8 KiB, or `nil` when they
    ///     keep none (``Check/byteBudget`` then passes without storing anything).
    ///   - makeStorage: Makes an empty storage; called once per check.
    public init(byteBudget: Int? = nil, makeStorage: @escaping @Sendable () async throws -> any HTTPCacheStorage) {
        self.byteBudget = byteBudget
        self.makeStorage = makeStorage
    }

    /// Runs one check, and throws a ``ConformanceFailure`` naming it when it fails.
    public func run(_ check: Check) async throws {
        let expect = ConformanceExpectation(suite: Self.suite, check: check.description)
        let storage = try await expect.call("makeStorage") { try await makeStorage() }
        switch check {
        case .roundTrip: try await roundTrip(storage, expect)
        case .variants: try await variants(storage, expect)
        case .keyParts: try await keyParts(storage, expect)
        case .removal: try await removal(storage, expect)
        case .partitionKey: try await partitionKey(storage, expect)
        case .byteBudget: try await budget(storage, expect)
        }
    }

    static let suite = "CacheStorageConformance"

    /// An entry; times are whole milliseconds, which every storage keeps exactly.
    private static func entry(
        _ url: String = "http://127.0.0.1/items/1", partition: String = "", method: String = "GET",
        vary: [String: String] = [:], body: Data = Data("stored".utf8), second: Int = 0
    ) -> CachedResponse {
        let time = Date(timeIntervalSince1970: 1_700_000_000 + Double(second))
        var headers = HTTPFields()
        headers.append(HTTPField(name: .contentType, value: "application/octet-stream"))
        headers.append(HTTPField(name: .cacheControl, value: "max-age=60"))
        if let name = HTTPField.Name("X-Repeat") {
            headers.append(HTTPField(name: name, value: "one"))
            headers.append(HTTPField(name: name, value: "two"))
        }
        return CachedResponse(
            url: url, partition: partition, method: method, varyingHeaders: vary, status: 200, headers: headers, body: body,
            requestTime: time, responseTime: time.addingTimeInterval(0.25))
    }

    private static func fields(_ headers: HTTPFields) -> [String] { headers.map { "\($0.name.rawName): \($0.value)" } }

    private static func same(_ a: CachedResponse, _ b: CachedResponse) -> Bool {
        a.url == b.url && a.partition == b.partition && a.method == b.method && a.varyingHeaders == b.varyingHeaders
            && a.status == b.status && fields(a.headers) == fields(b.headers) && a.body == b.body
            && abs(a.requestTime.timeIntervalSince(b.requestTime)) < 0.001
            && abs(a.responseTime.timeIntervalSince(b.responseTime)) < 0.001
    }

    private func entries(
        _ storage: any HTTPCacheStorage, _ url: String, partition: String = "", method: String = "GET", _ expect: ConformanceExpectation
    ) async throws(ConformanceFailure) -> [CachedResponse] {
        try await expect.call("entries(url:partition:method:)") { try await storage.entries(url: url, partition: partition, method: method) }
    }

    private func store(_ storage: any HTTPCacheStorage, _ entry: CachedResponse, _ expect: ConformanceExpectation) async throws(ConformanceFailure) {
        try await expect.call("store(_:)") { try await storage.store(entry) }
    }

    private func roundTrip(_ storage: any HTTPCacheStorage, _ expect: ConformanceExpectation) async throws(ConformanceFailure) {
        let body = Data((0...255).map { UInt8($0) })
        let stored = Self.entry(vary: ["accept-language": "de"], body: body)
        try await store(storage, stored, expect)
        let found = try await entries(storage, stored.url, expect)
        try expect.require(found.count == 1, "one entry stored, \(found.count) found")
        try expect.require(
            Self.same(found[0], stored),
            "stored \(Self.fields(stored.headers)) with \(stored.body.count) body bytes; got status \(found[0].status), \(Self.fields(found[0].headers)), \(found[0].body.count) body bytes, vary \(found[0].varyingHeaders)")
    }

    private func variants(_ storage: any HTTPCacheStorage, _ expect: ConformanceExpectation) async throws(ConformanceFailure) {
        let german = Self.entry(vary: ["accept-language": "de"], body: Data("de".utf8), second: 1)
        let english = Self.entry(vary: ["accept-language": "en"], body: Data("en".utf8), second: 2)
        try await store(storage, german, expect)
        try await store(storage, english, expect)
        let both = try await entries(storage, german.url, expect)
        try expect.require(both.map(\.body) == [Data("en".utf8), Data("de".utf8)], "two variants newest first, got bodies \(both.map { String(decoding: $0.body, as: UTF8.self) })")
        let newer = Self.entry(vary: ["accept-language": "de"], body: Data("de again".utf8), second: 3)
        try await store(storage, newer, expect)
        let replaced = try await entries(storage, german.url, expect)
        try expect.require(
            replaced.map(\.body) == [Data("de again".utf8), Data("en".utf8)],
            "storing a variant again replaces it, got bodies \(replaced.map { String(decoding: $0.body, as: UTF8.self) })")
    }

    private func keyParts(_ storage: any HTTPCacheStorage, _ expect: ConformanceExpectation) async throws(ConformanceFailure) {
        let url = "http://127.0.0.1/a"
        try await store(storage, Self.entry(url, partition: "ann", body: Data("ann".utf8)), expect)
        try await store(storage, Self.entry(url, partition: "ann", method: "HEAD", body: Data()), expect)
        try await store(storage, Self.entry(url + "/b", partition: "ann", body: Data("deeper".utf8)), expect)
        let ann = try await entries(storage, url, partition: "ann", expect)
        try expect.require(ann.map(\.body) == [Data("ann".utf8)], "Ann's GET is hers alone, got \(ann.count) entries")
        try expect.require(try await entries(storage, url, partition: "bob", expect).isEmpty, "Bob sees none of Ann's entries")
        try expect.require(try await entries(storage, url, expect).isEmpty, "no credentials, no partition: none of Ann's entries")
        let head = try await entries(storage, url, partition: "ann", method: "HEAD", expect)
        try expect.require(head.count == 1 && head[0].method == "HEAD", "a HEAD is kept apart from the GET, got \(head.count) entries")
    }

    private func removal(_ storage: any HTTPCacheStorage, _ expect: ConformanceExpectation) async throws(ConformanceFailure) {
        let url = "http://127.0.0.1/a"
        for (partition, method) in [("", "GET"), ("ann", "GET"), ("ann", "HEAD")] {
            try await store(storage, Self.entry(url, partition: partition, method: method, vary: ["accept": "x"]), expect)
        }
        try await store(storage, Self.entry(url + "/b"), expect)
        try await store(storage, Self.entry("http://127.0.0.1/c", partition: "bob"), expect)
        try await expect.call("removeEntries(url:)") { try await storage.removeEntries(url: url) }
        for (partition, method) in [("", "GET"), ("ann", "GET"), ("ann", "HEAD")] {
            try expect.require(try await entries(storage, url, partition: partition, method: method, expect).isEmpty, "removeEntries(url:) left \(method) of partition '\(partition)'")
        }
        try expect.require(try await entries(storage, url + "/b", expect).count == 1, "removeEntries(url:) removed another URL that starts the same")
        try await expect.call("removeEntries(partition:)") { try await storage.removeEntries(partition: "bob") }
        try expect.require(try await entries(storage, "http://127.0.0.1/c", partition: "bob", expect).isEmpty, "removeEntries(partition:) left the partition's entry")
        try await store(storage, Self.entry("http://127.0.0.1/d", partition: "carol"), expect)
        try await expect.call("removeAll()") { try await storage.removeAll() }
        try expect.require(try await entries(storage, url + "/b", expect).isEmpty, "removeAll() left an entry")
        try expect.require(try await entries(storage, "http://127.0.0.1/d", partition: "carol", expect).isEmpty, "removeAll() left a partition's entry")
    }

    private func partitionKey(_ storage: any HTTPCacheStorage, _ expect: ConformanceExpectation) async throws(ConformanceFailure) {
        let first = try await expect.call("partitionKey()") { try await storage.partitionKey() }
        let second = try await expect.call("partitionKey()") { try await storage.partitionKey() }
        try expect.require(first.count >= 16, "a partition key of \(first.count) bytes is too short to keep partition names secret")
        try expect.require(first == second, "the partition key changed between two calls")
    }

    private func budget(_ storage: any HTTPCacheStorage, _ expect: ConformanceExpectation) async throws(ConformanceFailure) {
        guard let byteBudget else { return }
        try expect.require(byteBudget >= 8 << 10, "give a byte budget of at least 8 KiB to check eviction")
        // Each body a quarter of the budget: twelve of them are three budgets' worth.
        let body = Data(repeating: 7, count: byteBudget / 4)
        let urls = (0..<12).map { "http://127.0.0.1/items/\($0)" }
        for (index, url) in urls.enumerated() {
            try await store(storage, Self.entry(url, body: body, second: index), expect)
        }
        let last = try await entries(storage, urls[11], expect)
        try expect.require(last.count == 1, "the newest entry was not kept within the budget")
        var kept = 0
        for url in urls {
            if !(try await entries(storage, url, expect).isEmpty) { kept += 1 }
        }
        try expect.require(kept <= 4, "\(kept) entries of a quarter of the budget each are kept: more than the budget")
        try expect.require(try await entries(storage, urls[0], expect).isEmpty, "the least recently used entry (stored first, never read) was kept past the budget")
    }
}
