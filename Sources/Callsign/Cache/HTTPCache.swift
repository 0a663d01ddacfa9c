import Foundation
import Synchronization

/// A private HTTP cache following RFC 9111, as a stage of the middleware chain.
///
/// Stores cacheable responses to GET and HEAD; serves fresh ones without the network;
/// revalidates stale ones with `If-None-Match` / `If-Modified-Since` and turns a `304` into the
/// stored response; honours `Vary`, `no-store`, `no-cache`, `max-age`, `Expires`, `Age`,
/// `must-revalidate` and `stale-if-error`; invalidates a URL after a successful unsafe request to
/// it. Responses to requests with credentials are stored under a partition named by an HMAC of
/// those credentials, keyed by the storage's own secret key, so one user's responses never reach
/// another and the partition names reveal nothing.
///
/// ```swift
/// let client = APIClient(configuration: .init {
///     $0.cache = HTTPCache(storage: MemoryCacheStorage(byteBudget: 16 << 20))
/// })
/// let response = try await client.call("Boards")
/// print(response.source)   // network, then cache while fresh, revalidated after a 304
/// ```
///
/// Never stored: `no-store` responses (unless `must-understand` names a status the cache
/// understands), statuses 206 and 304, 5xx without explicit freshness (`501` may be kept by
/// heuristic), responses whose body is shorter than their `Content-Length`, `Vary: *`,
/// responses reached through a redirect to another origin, downloads to a file, and responses
/// larger than ``maximumEntrySize``. `Set-Cookie` and hop-by-hop fields are not kept. The
/// caching article lists what the cache does, section by section of RFC 9111.
public struct HTTPCache: Sendable {
    /// Where responses are kept.
    public var storage: any HTTPCacheStorage
    /// Whether a stored response is served, however stale, when the server cannot be reached
    /// (connection refused, DNS, timeout before any response). `must-revalidate` and `no-cache`
    /// responses are never served this way. Default `false`: only `stale-if-error` allows it.
    public var servesStaleWhenOffline: Bool
    /// The largest response stored. Default 8 MiB.
    public var maximumEntrySize: Int
    /// The longest heuristic freshness (10% of the time since `Last-Modified`, RFC 9111 §4.2.2)
    /// given to a response without explicit freshness. Default 1 day.
    public var maximumHeuristicFreshness: Duration
    /// The revalidations running in the background (`stale-while-revalidate`), shared by every
    /// copy of this cache: one per stored response at a time.
    let revalidations = BackgroundRevalidations()

    /// Creates a cache over a storage.
    public init(
        storage: any HTTPCacheStorage, servesStaleWhenOffline: Bool = false, maximumEntrySize: Int = 8 << 20,
        maximumHeuristicFreshness: Duration = .seconds(86_400)
    ) {
        self.storage = storage
        self.servesStaleWhenOffline = servesStaleWhenOffline
        self.maximumEntrySize = maximumEntrySize
        self.maximumHeuristicFreshness = maximumHeuristicFreshness
    }

    /// An in-memory cache with a byte budget.
    ///
    /// ```swift
    /// configuration.cache = .memory(byteBudget: 16 << 20)
    /// ```
    public static func memory(byteBudget: Int = 32 << 20) -> HTTPCache {
        HTTPCache(storage: MemoryCacheStorage(byteBudget: byteBudget))
    }

    /// Waits until the revalidations running in the background (`stale-while-revalidate`) are
    /// done: a test that served a stale response can then see the refreshed one.
    ///
    /// ```swift
    /// _ = try await client.send(.get("feed"))          // stale within its window: served at once
    /// await cache.backgroundRevalidationsFinished()
    /// ```
    public func backgroundRevalidationsFinished() async {
        await revalidations.finished()
    }

    /// Removes every stored response.
    ///
    /// ```swift
    /// try await cache.removeAll()
    /// ```
    public func removeAll() async throws {
        try await storage.removeAll()
    }

    /// Removes the responses stored under the credentials in `headers` — for sign-out: what one
    /// user saw goes, what others saw stays.
    ///
    /// ```swift
    /// try await cache.removeAll(partitionOf: ["Authorization": "Bearer \(token)"])
    /// ```
    ///
    /// - Parameters:
    ///   - headers: the credentials, as the requests sent them.
    ///   - redaction: what counts as a credential; use the client's
    ///     (`configuration.observability.redaction`) when you changed it. Default ``Redaction/default``.
    public func removeAll(partitionOf headers: Headers, redaction: Redaction = .default) async throws {
        let key = try await storage.partitionKey()
        let partition = CacheStage.key(
            url: URL(fileURLWithPath: "/"), headers: headers, method: .get, redaction: redaction, digestKey: key
        ).partition
        guard !partition.isEmpty else { return }
        try await storage.removeEntries(partition: partition)
    }
}

/// Revalidations that run after the caller got a stale response: at most one per stored
/// response at a time, whoever asks meanwhile.
final class BackgroundRevalidations: Sendable {
    private let running = Mutex<[String: Task<Void, Never>]>([:])

    /// Starts `work` unless one for `identity` is running. The task is not the caller's child:
    /// the caller returns at once, and cancelling it does not stop the revalidation.
    func startOnce(_ identity: String, _ work: @escaping @Sendable () async -> Void) {
        running.withLock { tasks in
            guard tasks[identity] == nil else { return }
            tasks[identity] = Task { [self] in
                await work()
                running.withLock { _ = $0.removeValue(forKey: identity) }
            }
        }
    }

    /// Returns once every revalidation started so far has ended.
    func finished() async {
        while let task = running.withLock({ $0.values.first }) { await task.value }
    }
}
