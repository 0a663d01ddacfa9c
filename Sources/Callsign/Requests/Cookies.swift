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
/// RFC 6265bis's rules hold too: `__Secure-` and `__Host-` name prefixes, plain http never
/// overwriting a `Secure` cookie, and no cookie for a public suffix such as `co.uk`
/// (publicsuffix.org's list, shipped with Callsign).
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
    /// or value no server could set, a `__Secure-` or `__Host-` cookie without the attributes
    /// its prefix demands, one whose domain is a public suffix (`co.uk`) without being host-only,
    /// and any past ``maximumCookiesPerDomain`` for a domain or ``maximumCookies`` in all are
    /// left out.
    ///
    /// ```swift
    /// let jar = CookieJar(savedCookies)
    /// configuration.cookies = jar
    /// // … calls …
    /// savedCookies = jar.all()
    /// ```
    public init(_ cookies: some Sequence<Cookie>, now: Date = Date()) {
        fileURL = nil
        let kept = Self.admitted(cookies, now: now)
        self.cookies.withLock { $0 = kept }
    }

    /// The cookies of `cookies` a server could have had stored (a file or a session is outside
    /// input too), within the bounds: one rule for every way cookies enter a jar besides
    /// `Set-Cookie`.
    private static func admitted(_ cookies: some Sequence<Cookie>, now: Date) -> [Cookie] {
        var kept: [Cookie] = []
        var perDomain: [String: Int] = [:]
        for cookie in cookies where kept.count < Self.maximumCookies && (cookie.expires.map { $0 > now } ?? true) {
            guard SetCookie.isValid(name: cookie.name, value: cookie.value), !cookie.domain.isEmpty, cookie.path.hasPrefix("/"),
                SetCookie.prefixRulesHold(name: cookie.name, isSecure: cookie.isSecure, isHostOnly: cookie.isHostOnly, path: cookie.path),
                // A domain cookie for a public suffix is one no host could set (§5.7 step 5).
                cookie.isHostOnly || URLScheme.isAddressLiteral(cookie.domain) || !PublicSuffixList.shared.isPublicSuffix(cookie.domain),
                !kept.contains(where: { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path })
            else { continue }
            let count = perDomain[cookie.domain, default: 0]
            guard count < Self.maximumCookiesPerDomain else { continue }
            perDomain[cookie.domain] = count + 1
            kept.append(cookie)
        }
        return kept
    }

    /// A jar that keeps its persistent cookies in `fileURL`, loading those still valid under the
    /// rules of ``init(_:now:)``: the file is outside input, so a cookie no server could have set
    /// is left out.
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
            let kept = Self.admitted(stored.lazy.filter { $0.expires != nil }, now: Date())
            cookies.withLock { $0 = kept }
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

    /// Stores the cookies of a response's `Set-Cookie` fields, received from `url`, as RFC
    /// 6265bis §5.7 stores them; the others are ignored, as a browser ignores them: a cookie for
    /// another domain or for a public suffix (`Domain=co.uk`), one with a bad name, a `Secure` one
    /// or a `__Secure-`/`__Host-` one from plain http (or a prefixed one without the attributes
    /// its prefix demands), and one from plain http that would replace or shadow a `Secure`
    /// cookie of the same name.
    ///
    /// Only `https` counts as a secure origin; plain http to `127.0.0.1` or `localhost` does not:
    /// cookies do not tell ports apart, so any plain-http service on the same machine could
    /// otherwise set or replace an https one's cookies.
    public func store(setCookie fields: [String], from url: URL, now: Date = Date()) {
        guard let host = url.host?.lowercased(), !fields.isEmpty else { return }
        let secure = SetCookie.isSecure(url)
        let parsed = fields.compactMap { SetCookie.parse($0, host: host, requestPath: url.path, secure: secure, now: now) }
        guard !parsed.isEmpty else { return }
        var persistentChanged = false
        cookies.withLock { jar in
            jar.removeAll { ($0.expires ?? .distantFuture) <= now }
            for var cookie in parsed {
                // §5.7 step 12 ("leave secure cookies alone"): plain http neither replaces, deletes
                // nor shadows a Secure cookie whose domain matches either way and whose path
                // holds the new one's.
                if !secure, jar.contains(where: { SetCookie.isShadowed($0, by: cookie) }) { continue }
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
        let secure = SetCookie.isSecure(url)
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

    /// The cookie `field` sets for a response from `host`, or `nil` when it is to be ignored
    /// (RFC 6265bis §5.6 for the attributes, §5.7 for what is stored).
    static func parse(_ field: String, host: String, requestPath: String, secure: Bool, now: Date) -> Cookie? {
        guard field.utf8.count <= CookieJar.maximumCookieSize * 2 else { return nil }
        let parts = field.split(separator: ";", omittingEmptySubsequences: false)
        guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard isValid(name: name, value: value) else { return nil }
        var cookie = Cookie(
            name: name, value: value, domain: host, path: defaultPath(requestPath), expires: nil, isSecure: false,
            isHostOnly: true, created: now)
        var maxAge: Date?
        var expires: Date?
        // §5.6: the last Domain and the last Path attribute count; an empty Domain is no Domain.
        var domainAttribute: String?
        var hasPathAttribute = false
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
                if !domain.isEmpty { domainAttribute = domain }
            case "path":
                cookie.path = text.hasPrefix("/") ? text : defaultPath(requestPath)
                hasPathAttribute = true
            case "secure":
                cookie.isSecure = true
            default:
                break  // HttpOnly, SameSite and extensions mean nothing to an HTTP client.
            }
        }
        if let domain = domainAttribute {
            if URLScheme.isAddressLiteral(host) || PublicSuffixList.shared.isPublicSuffix(domain) {
                // An IP address sets cookies only for itself (§5.1.3), and a public suffix only
                // for the host that is the suffix (§5.7 step 5): host-only, or ignored.
                guard domain == host else { return nil }
            } else {
                guard domainMatches(host, domain) else { return nil }
                cookie.domain = domain
                cookie.isHostOnly = false
            }
        }
        // §5.7 step 9: a Secure cookie set over plain http is ignored.
        if cookie.isSecure && !secure { return nil }
        // §5.7 steps 13-14: a prefixed name is a promise about the attributes; __Host- also needs
        // an explicit Path=/ and no Domain attribute at all (not even one naming the host).
        guard
            prefixRulesHold(
                name: name, isSecure: cookie.isSecure, isHostOnly: domainAttribute == nil, path: hasPathAttribute ? cookie.path : "")
        else { return nil }
        cookie.expires = maxAge ?? expires
        return cookie
    }

    /// Whether `url`'s scheme is a secure protocol for cookies (§5.7 leaves it to the client):
    /// `https` only. Plain http to loopback is not one: cookies ignore ports, so any local
    /// service could otherwise set or replace the cookies of an https one on the same host.
    static func isSecure(_ url: URL) -> Bool {
        url.scheme?.lowercased() == "https"
    }

    /// A name is a token (RFC 6265 §4.1); a value has no control character or `;`; both together
    /// within ``CookieJar/maximumCookieSize``.
    static func isValid(name: String, value: String) -> Bool {
        !name.isEmpty && name.utf8.count + value.utf8.count <= CookieJar.maximumCookieSize
            && name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !separators.contains($0) })
            && value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F && $0 != ";" })
    }

    /// RFC 6265bis §4.1.3 and §5.7 steps 13-14, the prefix matched in any case: a `__Secure-`
    /// cookie is `Secure`; a `__Host-` cookie is `Secure`, host-only and for the path `/`.
    static func prefixRulesHold(name: String, isSecure: Bool, isHostOnly: Bool, path: String) -> Bool {
        if String(name.prefix(9)).caseInsensitiveEquals("__Secure-") { return isSecure }
        if String(name.prefix(7)).caseInsensitiveEquals("__Host-") { return isSecure && isHostOnly && path == "/" }
        return true
    }

    /// §5.7 step 12: whether the stored `existing` cookie keeps a `new` one from plain http out:
    /// it is `Secure`, has the same name, a domain that domain-matches the new one's either way,
    /// and a path the new one's path-matches.
    static func isShadowed(_ existing: Cookie, by new: Cookie) -> Bool {
        existing.isSecure && existing.name == new.name
            && (domainMatches(existing.domain, new.domain) || domainMatches(new.domain, existing.domain))
            && pathMatches(new.path, existing.path)
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
