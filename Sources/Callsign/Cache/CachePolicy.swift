/// How one call uses the HTTP cache (Malibu's cache policy), when the client has one
/// (``APIClient/Configuration/cache``).
///
/// ```swift
/// var request = Request.get("boards")
/// request.cachePolicy = .returnCacheElseLoad      // offline-first screen
/// ```
///
/// In a definitions file: `cache: reloadIgnoringCache` (also `cachePolicy:`).
public struct CachePolicy: Hashable, Sendable, CustomStringConvertible {
    private enum Base: String, Sendable, CaseIterable {
        case useProtocol, reloadIgnoringCache, returnCacheElseLoad, cacheOnly, fresh
    }

    private let base: Base
    /// For ``fresh(for:)``: how long a stored response is served without asking the server.
    package let freshness: Duration?
    private init(_ base: Base, freshness: Duration? = nil) {
        self.base = base
        self.freshness = freshness
    }

    /// RFC 9111: serve fresh stored responses, revalidate stale ones, store what may be stored.
    /// The default.
    public static let useProtocol = CachePolicy(.useProtocol)
    /// Always ask the server without conditions; the answer is still stored.
    public static let reloadIgnoringCache = CachePolicy(.reloadIgnoringCache)
    /// A stored response however old, else the network.
    public static let returnCacheElseLoad = CachePolicy(.returnCacheElseLoad)
    /// A stored response however old, else ``APIError/Code/cacheMiss``; never the network.
    public static let cacheOnly = CachePolicy(.cacheOnly)
    /// RFC 9111, except that a stored response is fresh for `duration` after it was received,
    /// whatever its own `max-age`, `Expires` or `Last-Modified` say: "cache this list for a
    /// minute" for a server that sends no freshness. A response the server marks `no-store` is
    /// still never stored, and `no-cache` still asks the server first.
    ///
    /// ```swift
    /// request.cachePolicy = .fresh(for: .seconds(60))
    /// ```
    public static func fresh(for duration: Duration) -> CachePolicy {
        CachePolicy(.fresh, freshness: max(duration, .zero))
    }

    /// Reads a policy's name as written in a definitions file; URLRequest's names are accepted too.
    init?(name: String) {
        switch name {
        case "useProtocol", "useProtocolCachePolicy": self = .useProtocol
        case "reloadIgnoringCache", "reloadIgnoringLocalCacheData", "reloadIgnoringLocalAndRemoteCacheData", "reload":
            self = .reloadIgnoringCache
        case "returnCacheElseLoad", "returnCacheDataElseLoad": self = .returnCacheElseLoad
        case "cacheOnly", "returnCacheDataDontLoad": self = .cacheOnly
        default: return nil
        }
    }

    /// The names a definitions file accepts.
    static let names = Base.allCases.filter { $0 != .fresh }.map(\.rawValue)

    public var description: String {
        guard let freshness else { return base.rawValue }
        return "fresh(for: \(freshness))"
    }
}

/// Where a ``Response`` came from.
///
/// ```swift
/// let response = try await client.call("Boards")
/// if response.source == .revalidated { print("304: the stored copy is still good") }
/// ```
public struct ResponseSource: Hashable, Sendable, CustomStringConvertible {
    private enum Base: String, Sendable {
        case network, cache, revalidated, staleCache, staleWhileRevalidating
    }

    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// Sent to the server (or a mock) and answered in full.
    public static let network = ResponseSource(.network)
    /// A stored response served without asking the server (fresh, or allowed by the cache policy).
    public static let cache = ResponseSource(.cache)
    /// A stored response the server confirmed with `304 Not Modified`.
    public static let revalidated = ResponseSource(.revalidated)
    /// A stale stored response served because the server could not be reached or failed
    /// (`stale-if-error`, or ``HTTPCache/servesStaleWhenOffline``).
    public static let staleCache = ResponseSource(.staleCache)
    /// A stale stored response served at once within its `stale-while-revalidate` window
    /// (RFC 5861), while one revalidation runs in the background.
    public static let staleWhileRevalidating = ResponseSource(.staleWhileRevalidating)

    public var description: String { base.rawValue }
}
