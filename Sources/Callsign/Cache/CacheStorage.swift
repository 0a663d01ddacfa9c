public import Foundation
public import HTTPTypes

/// One stored response, as an ``HTTPCacheStorage`` keeps it.
///
/// Entries are keyed by ``url``, ``partition``, ``method`` and ``variant``. The URL has secret
/// query values replaced; the partition is a digest of the request's credentials (empty for
/// requests without any), so one user's responses are never served to another and no secret is
/// written to storage.
public struct CachedResponse: Sendable, Hashable {
    /// The request URL with secret query values redacted.
    public var url: String
    /// A digest of the credentials the request carried, or `""`.
    public var partition: String
    /// `GET` or `HEAD`.
    public var method: String
    /// The request header values the response varies on (`Vary`), lower-cased names; secret
    /// values are stored as digests.
    public var varyingHeaders: [String: String]
    /// The status code.
    public var status: Int
    /// The response header fields, without `Set-Cookie`.
    public var headers: HTTPFields
    /// The body.
    public var body: Data
    /// When the request that produced this response was sent.
    public var requestTime: Date
    /// When its response arrived (or was last revalidated).
    public var responseTime: Date

    /// Creates an entry. The cache middleware makes these; storages only keep them.
    public init(
        url: String, partition: String, method: String, varyingHeaders: [String: String], status: Int,
        headers: HTTPFields, body: Data, requestTime: Date, responseTime: Date
    ) {
        self.url = url
        self.partition = partition
        self.method = method
        self.varyingHeaders = varyingHeaders
        self.status = status
        self.headers = headers
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    /// A stable text form of ``varyingHeaders``: the fourth part of the key.
    public var variant: String {
        varyingHeaders.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: "\n")
    }

    /// The bytes this entry costs, for byte budgets.
    public var size: Int {
        body.count + url.utf8.count + headers.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 4 } + 64
    }
}

/// Where an ``HTTPCache`` keeps its responses.
///
/// Callsign ships ``MemoryCacheStorage`` (LRU within a byte budget) and, in `CallsignSQLite`,
/// `SQLiteCacheStorage` (a file that survives restarts). Errors thrown here never fail a call:
/// the cache logs them and goes to the network.
///
/// A storage you write stores header fields with ``StoredFields`` and can be held to this
/// contract with `CacheStorageConformance` from `CallsignTesting`, the suite Callsign's own
/// storages pass.
///
/// ```swift
/// let cache = HTTPCache(storage: MemoryCacheStorage(byteBudget: 16 << 20))
/// ```
public protocol HTTPCacheStorage: Sendable {
    /// Every stored variant for a URL, partition and method, newest first.
    func entries(url: String, partition: String, method: String) async throws -> [CachedResponse]
    /// Stores an entry, replacing one with the same URL, partition, method and variant.
    func store(_ entry: CachedResponse) async throws
    /// Removes every entry for a URL: all partitions, methods and variants (invalidation after
    /// an unsafe request).
    func removeEntries(url: String) async throws
    /// Removes everything.
    func removeAll() async throws
    /// Removes every entry stored under one partition (one set of credentials), for sign-out.
    /// The default removes everything, which is never wrong, only wasteful.
    func removeEntries(partition: String) async throws
    /// The secret key partition names are computed with (HMAC-SHA256 over the credentials a
    /// request carried), so that partition names reveal nothing to whoever reads the entries.
    /// Keep it apart from the entries: a persistent storage keeps it beside its file, readable
    /// only by its owner. The default is a random key for the life of the process, so entries of
    /// a persistent storage that does not override it are not found again after a restart.
    func partitionKey() async throws -> Data
}

extension HTTPCacheStorage {
    /// Removes everything: never wrong for a sign-out, only wasteful. Override it to remove one partition.
    public func removeEntries(partition: String) async throws {
        try await removeAll()
    }

    /// A random key for the life of the process. A persistent storage overrides it with a key it keeps.
    public func partitionKey() async throws -> Data {
        processPartitionKey
    }
}

/// The default partition key: random, for the life of the process.
private let processPartitionKey = Digest.randomKey()

/// An in-memory ``HTTPCacheStorage``: least recently used entries go first when the byte budget
/// is exceeded.
///
/// ```swift
/// configuration.cache = HTTPCache(storage: MemoryCacheStorage(byteBudget: 32 << 20))
/// ```
public actor MemoryCacheStorage: HTTPCacheStorage {
    /// The most bytes kept.
    public let byteBudget: Int
    private var entriesByKey: [String: [String: Slot]] = [:]
    private var totalSize = 0
    private var tick: UInt64 = 0

    private struct Slot {
        var entry: CachedResponse
        var lastUse: UInt64
    }

    private let key = Digest.randomKey()

    /// Creates an empty storage with a byte budget (default 32 MiB).
    public init(byteBudget: Int = 32 << 20) {
        self.byteBudget = byteBudget
    }

    /// A random key made with the storage: entries live in memory, so the key need not outlive them.
    public func partitionKey() async -> Data { key }

    /// Removes the entries stored under one partition.
    public func removeEntries(partition: String) async {
        for (key, slots) in entriesByKey where slots.values.first?.entry.partition == partition {
            totalSize -= slots.values.reduce(0) { $0 + $1.entry.size }
            entriesByKey[key] = nil
        }
    }

    /// The bytes stored now.
    public var storedBytes: Int { totalSize }

    private static func key(_ url: String, _ partition: String, _ method: String) -> String { "\(method) \(partition) \(url)" }

    public func entries(url: String, partition: String, method: String) -> [CachedResponse] {
        let key = Self.key(url, partition, method)
        guard var slots = entriesByKey[key] else { return [] }
        tick += 1
        for name in slots.keys { slots[name]?.lastUse = tick }
        entriesByKey[key] = slots
        return slots.values.map(\.entry).sorted { $0.responseTime > $1.responseTime }
    }

    public func store(_ entry: CachedResponse) {
        guard entry.size <= byteBudget else { return }
        let key = Self.key(entry.url, entry.partition, entry.method)
        tick += 1
        if let old = entriesByKey[key]?[entry.variant] { totalSize -= old.entry.size }
        entriesByKey[key, default: [:]][entry.variant] = Slot(entry: entry, lastUse: tick)
        totalSize += entry.size
        evictIfNeeded()
    }

    public func removeEntries(url: String) {
        for key in entriesByKey.keys where key.hasSuffix(" \(url)") {
            guard let slots = entriesByKey[key], slots.values.first?.entry.url == url else { continue }
            totalSize -= slots.values.reduce(0) { $0 + $1.entry.size }
            entriesByKey[key] = nil
        }
    }

    public func removeAll() {
        entriesByKey = [:]
        totalSize = 0
    }

    private func evictIfNeeded() {
        guard totalSize > byteBudget else { return }
        // Evict down to 90% of the budget in one pass, so a full cache does not sort on every store.
        let target = byteBudget / 10 * 9
        let all = entriesByKey.flatMap { key, slots in slots.map { (key: key, variant: $0.key, slot: $0.value) } }
            .sorted { $0.slot.lastUse < $1.slot.lastUse }
        for item in all {
            guard totalSize > target else { break }
            entriesByKey[item.key]?[item.variant] = nil
            if entriesByKey[item.key]?.isEmpty == true { entriesByKey[item.key] = nil }
            totalSize -= item.slot.entry.size
        }
    }
}

/// Header fields as Callsign's storages write them, public so a storage written outside the
/// package stores and reads header lists with the same bounds.
///
/// The encoding is a JSON list of `[name, value]` pairs, in order, so that order and repeated
/// names survive a round trip. A stored row is outside data — the file or table may be damaged
/// or edited by hand — so reading goes through the one field door the transports use: the list's
/// size is checked before it is parsed (``maximumBytes``), then the fields are bounded by
/// ``Limits`` (count, name and value lengths, total bytes; RFC 9110 §5.5 for what a field value
/// may hold) and pairs that are not valid fields are dropped. Anything that is not such a list
/// is an ``APIError`` with code ``APIError/Code/storage``, never a trap: an ``HTTPCacheStorage``
/// that throws it is a miss, an ``OfflineQueueStorage`` turns the row into a quarantined
/// placeholder (``QueuedRequest/reading(storedRow:limits:_:)``).
///
/// ```swift
/// // Writing a cache row:
/// let column = StoredFields.encode(entry.headers)
/// // Reading it back, with the bounds of a response head:
/// let headers = try StoredFields.decode(column)
/// // A queued request's header fields, with the bounds of a request head:
/// let requestHeaders = try StoredFields.decodeHeaders(StoredFields.encode(request.headers))
/// ```
public enum StoredFields {
    /// The most bytes of JSON a stored list may hold (1 MiB); checked before it is parsed.
    public static let maximumBytes = 1 << 20

    /// Encodes response header fields (a ``CachedResponse``'s) in order, repeated names kept.
    public static func encode(_ fields: HTTPFields) -> Data {
        encode(fields.lazy.map { [$0.name.rawName, $0.value] })
    }

    /// Encodes request header fields (a ``QueuedRequest``'s) in order, names as written.
    public static func encode(_ headers: Headers) -> Data {
        encode(headers.fields.lazy.map { [$0.name, $0.value] })
    }

    private static func encode(_ pairs: some Sequence<[String]>) -> Data {
        (try? JSONEncoder().encode(Array(pairs))) ?? Data("[]".utf8)
    }

    /// The response header fields of a stored list, bounded as a response head is by `limits`.
    ///
    /// Throws ``APIError/Code/storage`` when the data is past ``maximumBytes`` or is not a list
    /// of string pairs, and the field limit's error when the fields exceed `limits`; pairs that
    /// are not a valid field name and value are dropped.
    public static func decode(_ data: Data, limits: Limits = .default) throws(APIError) -> HTTPFields {
        try decode(data, direction: .response, limits: limits)
    }

    /// The fields of a stored list, bounded by `limits` as a response or a request head.
    package static func decode(
        _ data: Data, direction: FieldReader.Direction, limits: Limits = .default
    ) throws(APIError) -> HTTPFields {
        try FieldReader(limits: limits, direction: direction, code: .storage)
            .fields(try pairs(data), source: "a stored row" as LocalizedMessage, invalid: .drop)
    }

    /// The header fields of a stored request, bounded as a request head is by `limits`, and kept
    /// with their names as written (a queued request is replayed with the names it was given).
    ///
    /// Throws as ``decode(_:limits:)`` does.
    public static func decodeHeaders(_ data: Data, limits: Limits = .default) throws(APIError) -> Headers {
        let fields = try decode(data, direction: .request, limits: limits)
        return Headers(fields)
    }

    private static func pairs(_ data: Data) throws(APIError) -> [(name: String, value: String)] {
        guard data.count <= maximumBytes, let pairs = try? JSONDecoder().decode([[String]].self, from: data) else {
            throw APIError(.storage, localized: "stored header fields are not the list of name and value pairs Callsign writes")
        }
        return pairs.compactMap { $0.count == 2 ? (name: $0[0], value: $0[1]) : nil }
    }
}
