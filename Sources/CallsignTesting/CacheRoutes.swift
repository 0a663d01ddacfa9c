import Callsign
import Foundation
import Synchronization

/// Routes with HTTP caching headers, for cache tests and the demo. Every body names the route
/// and how many times the server has produced a full body for it, so a test can tell a stored
/// copy from a fresh one.
///
/// - `/cache/etag/{id}?max-age=N&version=V` — `ETag: "V-id"` (`If-None-Match` → 304), `max-age` N (default 0).
/// - `/cache/last-modified/{id}` — `Last-Modified`, `Cache-Control: no-cache` (`If-Modified-Since` → 304).
/// - `/cache/max-age/{seconds}/{id}` — fresh for that many seconds.
/// - `/cache/no-store/{id}` — `Cache-Control: no-store`.
/// - `/cache/vary/{id}` — `Vary: Accept-Language`, `max-age=86400`, the body echoes the language.
///
/// Freshness is a day wherever a test expects a fresh hit: a test on a busy machine may take
/// minutes between its calls, and a shorter lifetime would turn a hit into a fetch.
/// - `/cache/private/{id}` — `private, max-age=86400`, the body names the user: the first `-`-separated word of the token.
/// - `/cache/stale-if-error/{id}` — `max-age=0, stale-if-error=600` with an ETag.
/// - `/cache/status/{code}/{id}` — that status with `max-age=86400`.
/// - any unsafe method on `/cache/…` answers 204 (and so invalidates the URL in a client's cache).
enum CacheRoutes {
    private static let counter = Counter()

    /// A fixed modification time, a day before any test runs.
    static let lastModified = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01

    static func respond(to request: ServerRequest, segments: [String]) -> ServerResponse {
        guard let kind = segments.first else { return .json(["error": "name a /cache route"], status: 404) }
        if !["GET", "HEAD"].contains(request.method) { return ServerResponse(status: 204, headers: []) }
        let now = HTTPDate.format(Date())
        func body(_ extra: [String: JSONValue] = [:]) -> ServerResponse {
            var object: [String: JSONValue] = ["path": .string(request.rawPath), "served": .int(counter.next(request.rawPath))]
            object.merge(extra) { $1 }
            return .json(.object(object), headers: [("Date", now)])
        }
        func with(_ response: ServerResponse, _ headers: [(String, String)]) -> ServerResponse {
            var response = response
            response.headers += headers.map { (name: $0.0, value: $0.1) }
            return response
        }
        switch kind {
        case "etag":
            let version = request.query("version") ?? "1"
            let tag = "\"\(version)-\(segments.dropFirst().first ?? "x")\""
            let control = "max-age=\(Int(request.query("max-age") ?? "0") ?? 0)"
            if request.header("If-None-Match")?.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }).contains(tag) == true {
                return ServerResponse(status: 304, headers: [("ETag", tag), ("Cache-Control", control), ("Date", now)])
            }
            return with(body(["version": .string(version)]), [("ETag", tag), ("Cache-Control", control)])
        case "last-modified":
            let stamp = HTTPDate.format(lastModified)
            if let since = request.header("If-Modified-Since").flatMap({ HTTPDate.parse($0) }), since >= lastModified {
                return ServerResponse(status: 304, headers: [("Last-Modified", stamp), ("Date", now)])
            }
            return with(body(), [("Last-Modified", stamp), ("Cache-Control", "no-cache")])
        case "max-age":
            let seconds = Int(segments.count > 1 ? segments[1] : "86400") ?? 86_400
            return with(body(), [("Cache-Control", "max-age=\(seconds)")])
        case "no-store":
            return with(body(), [("Cache-Control", "no-store")])
        case "vary":
            return with(body(["language": .string(request.header("Accept-Language") ?? "")]), [
                ("Vary", "Accept-Language"), ("Cache-Control", "max-age=86400"),
            ])
        case "private":
            // Names the user by the token's first word ("alice-…" → "alice"), never echoing the token:
            // a response that echoes a credential is not stored.
            // The credential is Authorization's, or a Private-Token header's (GitLab's style).
            let token = (request.header("Authorization") ?? request.header("Private-Token"))?.split(separator: " ").last.map(String.init) ?? ""
            let user = token.split(separator: "-").first.map(String.init) ?? ""
            return with(body(["user": .string(user)]), [("Cache-Control", "private, max-age=86400")])
        case "stale-if-error":
            return with(body(), [("ETag", "\"sie\""), ("Cache-Control", "max-age=0, stale-if-error=600")])
        case "status":
            let code = Int(segments.count > 1 ? segments[1] : "200") ?? 200
            var response = body()
            response.status = (200...599).contains(code) ? code : 400
            return with(response, [("Cache-Control", "max-age=86400")])
        default:
            return .json(["error": "no cache route \(kind)"], status: 404)
        }
    }

    /// Counts full bodies per path.
    final class Counter: Sendable {
        private let counts = Mutex<[String: Int]>([:])
        func next(_ path: String) -> Int {
            counts.withLock { counts in
                counts[path, default: 0] += 1
                return counts[path] ?? 0
            }
        }
    }
}
