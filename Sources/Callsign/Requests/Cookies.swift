public import Foundation
import Synchronization

/// A cookie as RFC 6265's storage model keeps it.
public struct Cookie: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The name.
    public var name: String
    /// The value. Often a session: a secret, never shown by ``description``.
    public var value: String
    /// The domain, lower-cased, without a leading dot.
    public var domain: String
    /// The path prefix it is sent under.
    public var path: String
    /// When it expires; `nil` for a session cookie, kept only in memory.
    public var expires: Date?
    /// Sent only over https.
    public var isSecure: Bool
    /// Sent only to `domain` itself, not its subdomains (no `Domain` attribute was given).
    public var isHostOnly: Bool
    /// When it was first stored, which orders cookies of equal path length.
    public var created: Date

    public var description: String {
        "Cookie(\(name)=REDACTED; domain=\(domain); path=\(path)\(isSecure ? "; secure" : "")\(isHostOnly ? "; host-only" : ""))"
    }
}

/// Cookies kept between calls, as a browser keeps them (RFC 6265 §5.3): domain and path
/// matching, `Secure`, `Max-Age`/`Expires`, host-only cookies, replacement by name, domain and path.
///
/// Off by default: set ``APIClient/Configuration/cookies`` to a jar to have `Set-Cookie` stored
/// and `Cookie` sent, on every transport (URLSession's own cookie handling is off, so there is
/// one jar). A jar made with a file keeps its persistent cookies there (created `0600`); session
/// cookies stay in memory.
///
/// ```swift
/// configuration.cookies = CookieJar()                               // in memory
/// configuration.cookies = try CookieJar(fileURL: cookiesFile)       // persistent cookies on disk
/// ```
///
/// A server cannot make a jar grow without bound: at most ``maximumCookiesPerDomain`` per domain
/// and ``maximumCookies`` in all (the oldest go first), each at most ``maximumCookieSize`` bytes.
public final class CookieJar: Sendable {
    /// At most this many cookies per domain. 50, as RFC 6265 §6.1 suggests at least.
    public static let maximumCookiesPerDomain = 50
    /// At most this many cookies in all.
    public static let maximumCookies = 3_000
    /// The largest name plus value accepted, in bytes.
    public static let maximumCookieSize = 4_096

    private let cookies = Mutex<[Cookie]>([])
    /// Where persistent cookies are kept, if anywhere.
    public let fileURL: URL?

    /// An empty jar in memory.
    public init() {
        fileURL = nil
    }

    /// A jar in memory that starts with `cookies` (kept elsewhere — a command-line session, your
    /// own store), under the same rules as cookies a server sets: expired ones, ones with a name
    /// or value no server could set, and any past ``maximumCookiesPerDomain`` for a domain or
    /// ``maximumCookies`` in all are left out.
    ///
    /// ```swift
    /// let jar = CookieJar(savedCookies)
    /// configuration.cookies = jar
    /// // … calls …
    /// savedCookies = jar.all()
    /// ```
    public init(_ cookies: some Sequence<Cookie>, now: Date = Date()) {
        fileURL = nil
        var kept: [Cookie] = []
        var perDomain: [String: Int] = [:]
        for cookie in cookies where kept.count < Self.maximumCookies && (cookie.expires.map { $0 > now } ?? true) {
            guard !cookie.name.isEmpty, cookie.name.utf8.count + cookie.value.utf8.count <= Self.maximumCookieSize,
                cookie.name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !SetCookie.separators.contains($0) }),
                cookie.value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F && $0 != ";" }),
                !cookie.domain.isEmpty, cookie.path.hasPrefix("/"),
                !kept.contains(where: { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path })
            else { continue }
            let count = perDomain[cookie.domain, default: 0]
            guard count < Self.maximumCookiesPerDomain else { continue }
            perDomain[cookie.domain] = count + 1
            kept.append(cookie)
        }
        self.cookies.withLock { $0 = kept }
    }

    /// A jar that keeps its persistent cookies in `fileURL`, loading those still valid.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/storage``) when the file exists but cannot be read.
    public init(fileURL: URL) throws(APIError) {
        self.fileURL = fileURL
        guard FileManager.default.fileExists(atPath: fileURL.path) else { return }
        let data = try FileReader.read(fileURL, limit: 16 << 20) { error in
            APIError(.storage, localized: "the cookie file \"\(fileURL.lastPathComponent)\" cannot be read", underlyingError: error)
        } tooLarge: { limit in
            APIError(.storage, localized: "the cookie file \"\(fileURL.lastPathComponent)\" is larger than \(limit) bytes")
        }
        do {
            let stored = try JSONDecoder().decode([Cookie].self, from: data)
            let now = Date()
            cookies.withLock { $0 = Array(stored.filter { ($0.expires ?? .distantPast) > now }.prefix(Self.maximumCookies)) }
        } catch {
            throw APIError(.storage, localized: "the cookie file \"\(fileURL.lastPathComponent)\" cannot be read", underlyingError: error)
        }
    }

    /// Every cookie stored and not expired.
    public func all(now: Date = Date()) -> [Cookie] {
        cookies.withLock { $0.filter { $0.expires.map { $0 > now } ?? true } }
    }

    /// Removes every cookie (and the file's).
    public func removeAll() {
        cookies.withLock { $0.removeAll() }
        save()
    }

    /// Stores the cookies of a response's `Set-Cookie` fields, received from `url`. Cookies for
    /// another domain, or with a bad name, are ignored, as a browser ignores them.
    public func store(setCookie fields: [String], from url: URL, now: Date = Date()) {
        guard let host = url.host?.lowercased(), !fields.isEmpty else { return }
        let parsed = fields.compactMap { SetCookie.parse($0, host: host, requestPath: url.path, secure: url.scheme?.lowercased() == "https", now: now) }
        guard !parsed.isEmpty else { return }
        var persistentChanged = false
        cookies.withLock { jar in
            jar.removeAll { ($0.expires ?? .distantFuture) <= now }
            for var cookie in parsed {
                if let index = jar.firstIndex(where: { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }) {
                    cookie.created = jar[index].created
                    persistentChanged = persistentChanged || jar[index].expires != nil
                    jar.remove(at: index)
                }
                // An expiry in the past deletes (done above); otherwise it is stored.
                if let expires = cookie.expires, expires <= now { continue }
                persistentChanged = persistentChanged || cookie.expires != nil
                jar.append(cookie)
                let sameDomain = jar.indices.filter { jar[$0].domain == cookie.domain }
                if sameDomain.count > Self.maximumCookiesPerDomain, let oldest = sameDomain.min(by: { jar[$0].created < jar[$1].created }) {
                    jar.remove(at: oldest)
                }
                if jar.count > Self.maximumCookies, let oldest = jar.indices.min(by: { jar[$0].created < jar[$1].created }) {
                    jar.remove(at: oldest)
                }
            }
        }
        if persistentChanged { save() }
    }

    /// The `Cookie` field value for a request to `url`, or `nil` when no cookie applies.
    public func cookieHeader(for url: URL, now: Date = Date()) -> String? {
        guard let host = url.host?.lowercased() else { return nil }
        let secure = url.scheme?.lowercased() == "https"
        let path = url.path.isEmpty ? "/" : url.path
        let matching = all(now: now).filter { cookie in
            (cookie.isHostOnly ? host == cookie.domain : SetCookie.domainMatches(host, cookie.domain))
                && SetCookie.pathMatches(path, cookie.path) && (!cookie.isSecure || secure)
        }
        guard !matching.isEmpty else { return nil }
        return matching.sorted { ($0.path.count, $1.created) > ($1.path.count, $0.created) }
            .map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    /// Writes the persistent cookies to the file, readable by the owner only.
    private func save() {
        guard let fileURL else { return }
        let persistent = cookies.withLock { $0.filter { $0.expires != nil } }
        guard let data = try? JSONEncoder().encode(persistent) else { return }
        let folder = fileURL.deletingLastPathComponent()
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // Owner-only from the first byte, replaced in one rename, through the one writer.
        try? FileWriter.write(data, to: fileURL, permissions: .ownerOnly)
    }
}

/// RFC 6265 §5.2: one `Set-Cookie` field, parsed as a browser does.
enum SetCookie {
    /// RFC 9110's delimiters, which a token cannot hold.
    static let separators = Set("()<>@,;:\\\"/[]?={}".utf8)

    /// The cookie `field` sets for a response from `host`, or `nil` when it is to be ignored.
    static func parse(_ field: String, host: String, requestPath: String, secure: Bool, now: Date) -> Cookie? {
        guard field.utf8.count <= CookieJar.maximumCookieSize * 2 else { return nil }
        let parts = field.split(separator: ";", omittingEmptySubsequences: false)
        guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        // A name is a token (RFC 6265 §4.1); a value has no control character or `;`.
        guard !name.isEmpty, name.utf8.count + value.utf8.count <= CookieJar.maximumCookieSize,
            name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !separators.contains($0) }),
            value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F && $0 != ";" })
        else { return nil }
        var cookie = Cookie(
            name: name, value: value, domain: host, path: defaultPath(requestPath), expires: nil, isSecure: false,
            isHostOnly: true, created: now)
        var maxAge: Date?
        var expires: Date?
        for attribute in parts.dropFirst() {
            let pieces = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = pieces[0].trimmingCharacters(in: .whitespaces).lowercased()
            let text = pieces.count > 1 ? pieces[1].trimmingCharacters(in: .whitespaces) : ""
            switch key {
            case "max-age":
                // Digits with an optional minus; anything else is ignored. Bounded: no overflow.
                let digits = text.hasPrefix("-") ? text.dropFirst() : text[...]
                guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { continue }
                let seconds = digits.count > 10 ? Double(Int32.max) : (Double(digits) ?? 0)
                maxAge = text.hasPrefix("-") || seconds == 0 ? .distantPast : now.addingTimeInterval(min(seconds, 86_400 * 365 * 100))
            case "expires":
                if let date = HTTPDate.parse(text) { expires = date }
            case "domain":
                var domain = text.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                // A cookie for a domain the host is not in, or set by an IP address for another, is ignored.
                guard domainMatches(host, domain), domain.contains(".") || domain == host else { return nil }
                cookie.domain = domain
                cookie.isHostOnly = false
            case "path":
                cookie.path = text.hasPrefix("/") ? text : defaultPath(requestPath)
            case "secure":
                cookie.isSecure = true
            default:
                break  // HttpOnly, SameSite and extensions mean nothing to an HTTP client.
            }
        }
        // A Secure cookie set over plain http is ignored (RFC 6265bis).
        if cookie.isSecure && !secure { return nil }
        cookie.expires = maxAge ?? expires
        return cookie
    }

    /// §5.1.3: `host` is `domain` or a name under it (never for IP addresses).
    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        if host == domain { return true }
        return !URLScheme.isAddressLiteral(host) && host.hasSuffix("." + domain)
    }

    /// §5.1.4: the cookie's path is the request path or a prefix of it ending at a `/`.
    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return requestPath.count == cookiePath.count || cookiePath.hasSuffix("/")
            || requestPath.dropFirst(cookiePath.count).hasPrefix("/")
    }

    /// §5.1.4: the default path of a request path: up to, not including, its last `/`.
    static func defaultPath(_ requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let last = requestPath.lastIndex(of: "/"), last != requestPath.startIndex else { return "/" }
        return String(requestPath[..<last])
    }
}
