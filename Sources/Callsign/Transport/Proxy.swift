public import Foundation

/// An HTTP proxy: where to connect, and the credentials it asks for.
///
/// Requests go through it as curl sends them: an `https://` request through a `CONNECT` tunnel,
/// so the proxy sees only the host name; a plain `http://` request to the proxy itself, in
/// absolute form (`GET http://host/path HTTP/1.1`), which every forward proxy accepts — Squid's
/// stock configuration, for one, allows `CONNECT` to port 443 only. ``alwaysTunnels`` sends
/// `http://` requests through a tunnel too (curl's `--proxytunnel`), for a proxy that only
/// tunnels. The proxy's credentials go only to the proxy (`Proxy-Authorization` on the
/// `CONNECT` request or on the absolute-form request, which the proxy consumes), never to the
/// origin, and never appear in descriptions, logs or errors.
///
/// On Linux, ``URLSessionTransport`` cannot use a proxy at all (FoundationNetworking ignores its
/// proxy settings) and refuses such a request; on Apple platforms it cannot force a tunnel and
/// refuses ``alwaysTunnels`` for `http://` requests.
///
/// ```swift
/// let proxy = try Proxy(url: "http://alice:s3cret@proxy.internal:3128")
/// configuration.proxy = ProxySettings(all: proxy, bypass: ["localhost", ".internal"])
/// ```
public struct Proxy: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The proxy's host name or IP address.
    public var host: String
    /// The proxy's port.
    public var port: Int
    /// Basic credentials for the proxy (`Proxy-Authorization`), if it asks for them.
    public var credentials: Credentials?
    /// Whether plain `http://` requests, too, go through a `CONNECT` tunnel (curl's
    /// `--proxytunnel`) instead of being sent to the proxy in absolute form. Default `false`: many
    /// proxies allow `CONNECT` only to port 443. `https://` requests always go through a tunnel.
    ///
    /// ```swift
    /// var proxy = try Proxy(url: "http://tunnel-only.internal:8080")
    /// proxy.alwaysTunnels = true
    /// ```
    public var alwaysTunnels: Bool

    /// A user name and password for the proxy, never printed.
    public struct Credentials: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
        /// The user name.
        public var username: String
        /// The password.
        public var password: String

        /// Creates credentials.
        public init(username: String, password: String) {
            self.username = username
            self.password = password
        }

        /// `username:REDACTED`.
        public var description: String { "\(username):\(Redaction.placeholder)" }

        /// What `dump` shows: the user name, never the password.
        public var customMirror: Mirror {
            Mirror(self, children: ["username": username, "password": Redaction.placeholder], displayStyle: .struct)
        }
    }

    /// Creates a proxy.
    ///
    /// ```swift
    /// let proxy = Proxy(host: "127.0.0.1", port: 3128)
    /// ```
    public init(host: String, port: Int, credentials: Credentials? = nil, alwaysTunnels: Bool = false) {
        self.host = host
        self.port = port
        self.credentials = credentials
        self.alwaysTunnels = alwaysTunnels
    }

    /// Reads a proxy URL as curl does: `http://[user:password@]host[:port]`, or `host:port`
    /// without a scheme. The port defaults to 1080, curl's; user and password are
    /// percent-decoded.
    ///
    /// - Throws: ``APIError/Code/invalidRequest`` for a URL that is not an `http` proxy (an
    ///   `https://` or `socks` proxy, an empty host, a port outside 1–65535), naming the URL
    ///   with its password redacted.
    public init(url text: String) throws(APIError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let withScheme = trimmed.contains("://") ? trimmed : "http://" + trimmed
        guard let components = URLComponents(string: withScheme), components.scheme?.lowercased() == "http",
            let host = components.host, !host.isEmpty
        else {
            throw APIError(
                .invalidRequest,
                localized: "the proxy \(Self.redacted(trimmed)) is not an http://host:port proxy (https and SOCKS proxies are not supported)")
        }
        let port = components.port ?? 1080
        guard (1...65_535).contains(port) else {
            throw APIError(.invalidRequest, localized: "the proxy \(Self.redacted(trimmed)) has a port outside 1–65535")
        }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        self.alwaysTunnels = false
        if let user = components.percentEncodedUser, !user.isEmpty {
            self.credentials = Credentials(
                username: user.removingPercentEncoding ?? user,
                password: components.percentEncodedPassword.map { $0.removingPercentEncoding ?? $0 } ?? "")
        }
    }

    /// `http://host:port`, with `user:<redacted>@` when there are credentials.
    public var description: String {
        "http://\(credentials.map { "\($0)@" } ?? "")\(authority)"
    }

    /// What `dump` shows: the same as ``description``, credentials redacted.
    public var customMirror: Mirror {
        Mirror(self, children: ["url": description], displayStyle: .struct)
    }

    /// A proxy URL as written, with anything before its `@` (user and password) redacted.
    static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return text }
        let scheme = text.range(of: "://").map { String(text[..<$0.upperBound]) } ?? ""
        return scheme + Redaction.placeholder + text[at...]
    }

    /// The `Proxy-Authorization` value for the credentials.
    var authorizationValue: String? {
        credentials.map { "Basic " + Data("\($0.username):\($0.password)".utf8).base64EncodedString() }
    }

    /// Whether a request with this scheme goes to the proxy in absolute form rather than through
    /// a `CONNECT` tunnel: plain `http`, unless ``alwaysTunnels``.
    func forwards(scheme: String?) -> Bool {
        scheme?.lowercased() == "http" && !alwaysTunnels
    }

    /// `host:port` as a URL's authority writes it (an IPv6 address in brackets).
    var authority: String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }
}

/// Which proxy each request goes through: one for `http://` URLs, one for `https://`, and the
/// hosts that are reached directly (`NO_PROXY`).
///
/// ```swift
/// // The proxy the environment names (HTTP_PROXY, HTTPS_PROXY, NO_PROXY), as curl reads them:
/// configuration.proxy = try ProxySettings(environment: ProcessInfo.processInfo.environment)
///
/// // Or one proxy for everything except local hosts:
/// configuration.proxy = ProxySettings(all: Proxy(host: "proxy.internal", port: 3128), bypass: ["localhost", "127.0.0.1"])
/// ```
public struct ProxySettings: Sendable, Hashable, CustomStringConvertible {
    /// The proxy for `http://` URLs (sent to it in absolute form, unless it
    /// ``Proxy/alwaysTunnels``); `nil` to reach them directly.
    public var http: Proxy?
    /// The proxy for `https://` URLs (always through `CONNECT`); `nil` to reach them directly.
    public var https: Proxy?
    /// Hosts reached directly, as `NO_PROXY` lists them: `example.com` matches that host and its
    /// subdomains (so does `.example.com`), an IP address matches itself however it is spelt,
    /// a CIDR block (`10.0.0.0/8`, `fd00::/8`) every address in it, `host:port` only that port,
    /// and `*` every host.
    public var bypass: [String]

    /// Creates settings.
    public init(http: Proxy? = nil, https: Proxy? = nil, bypass: [String] = []) {
        self.http = http
        self.https = https
        self.bypass = bypass
    }

    /// One proxy for `http://` and `https://` URLs alike.
    public init(all proxy: Proxy, bypass: [String] = []) {
        self.init(http: proxy, https: proxy, bypass: bypass)
    }

    /// The settings the environment gives, as curl reads them: `http_proxy` or `HTTP_PROXY`,
    /// `https_proxy` or `HTTPS_PROXY`, `all_proxy` or `ALL_PROXY` for both, and `no_proxy` or
    /// `NO_PROXY` (entries separated by commas or spaces). The lowercase form wins when both are
    /// set. Under CGI (`REQUEST_METHOD` set) `HTTP_PROXY` in capitals is ignored, because there
    /// it holds a request's `Proxy:` header ("httpoxy").
    ///
    /// ```swift
    /// let settings = try ProxySettings(environment: ["https_proxy": "http://127.0.0.1:3128", "no_proxy": "localhost"])
    /// ```
    ///
    /// - Returns: `nil` when no proxy variable is set.
    /// - Throws: ``APIError/Code/invalidRequest`` when a variable holds a URL that is not a
    ///   usable proxy: a misspelt proxy must not send traffic around it.
    public init?(environment: [String: String]) throws(APIError) {
        func value(_ names: String...) -> String? {
            for name in names { if let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty { return value } }
            return nil
        }
        func proxy(_ names: String...) throws(APIError) -> Proxy? {
            for name in names { if let text = value(name) { return try Proxy(url: text) } }
            return nil
        }
        let all = try proxy("all_proxy", "ALL_PROXY")
        let underCGI = environment["REQUEST_METHOD"] != nil
        let http = try (underCGI ? proxy("http_proxy") : proxy("http_proxy", "HTTP_PROXY")) ?? all
        let https = try proxy("https_proxy", "HTTPS_PROXY") ?? all
        guard http != nil || https != nil else { return nil }
        let bypass = (value("no_proxy", "NO_PROXY") ?? "")
            .split(whereSeparator: { $0 == "," || $0 == " " })
            .map(String.init)
        self.init(http: http, https: https, bypass: bypass)
    }

    /// The proxy a request to `url` goes through, or `nil` to connect directly.
    ///
    /// ```swift
    /// settings.proxy(for: URL(string: "https://api.example.com/v1")!)   // settings.https
    /// ```
    public func proxy(for url: URL) -> Proxy? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host else { return nil }
        return proxy(scheme: scheme, host: host, port: url.port)
    }

    /// The proxy for a request with this scheme, host and port, or `nil` to connect directly.
    func proxy(scheme: String, host: String, port: Int?) -> Proxy? {
        let chosen: Proxy?
        switch scheme {
        case "http": chosen = http
        case "https": chosen = https
        default: return nil
        }
        guard let chosen, !bypasses(host: host, port: port ?? (scheme == "https" ? 443 : 80)) else { return nil }
        return chosen
    }

    /// Whether `host` is reached directly, by the ``bypass`` list.
    func bypasses(host rawHost: String, port: Int) -> Bool {
        let host = Self.normalized(rawHost)
        let hostAddress = IPAddress(host)
        for rawEntry in bypass {
            var entry = rawEntry.trimmingCharacters(in: .whitespaces).lowercased()
            if entry == "*" { return true }
            // An entry with a port matches only that port ("[::1]:8080", "example.com:8080").
            if let portSplit = Self.portSeparator(in: entry) {
                guard Int(entry[entry.index(after: portSplit)...]) == port else { continue }
                entry = String(entry[..<portSplit])
            }
            entry = Self.normalized(entry)
            // An address or a CIDR block ("10.0.0.0/8", "::1/128") matches addresses, compared as
            // bytes, however either is spelt; never a name by its suffix.
            if let (network, prefixLength) = Self.addressBlock(entry) {
                if let address = hostAddress, address.isIn(network, prefixLength: prefixLength) { return true }
                continue
            }
            if entry.hasPrefix("*.") { entry.removeFirst() }
            if entry.hasPrefix(".") { entry.removeFirst() }
            // A name in another script matches its IDNA form, which is how hosts reach here.
            if !entry.isEmpty, !entry.utf8.allSatisfy({ $0 < 0x80 }) { entry = HostName.asciiForm(entry)?.lowercased() ?? entry }
            guard !entry.isEmpty else { continue }
            if host == entry || host.hasSuffix("." + entry) { return true }
        }
        return false
    }

    /// A `NO_PROXY` entry that is an IP address (`127.0.0.1`, `::1`) or a CIDR block
    /// (`127.0.0.0/8`, `fd00::/8`), as curl reads them; `nil` for a name or a malformed block.
    private static func addressBlock(_ entry: String) -> (IPAddress, Int)? {
        let parts = entry.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        var text = String(parts[0])
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        guard let address = IPAddress(text) else { return nil }
        let bits = address.bytes.count * 8
        guard parts.count == 2 else { return (address, bits) }
        guard parts[1].count <= 3, parts[1].allSatisfy(\.isASCII), let length = Int(parts[1]), (0...bits).contains(length) else {
            return nil
        }
        return (address, length)
    }

    /// The `:` before a port in a `NO_PROXY` entry, if there is one (not one inside an IPv6 address).
    private static func portSeparator(in entry: String) -> String.Index? {
        guard let colon = entry.lastIndex(of: ":") else { return nil }
        if entry.hasPrefix("[") { return entry[..<colon].hasSuffix("]") ? colon : nil }
        return entry.firstIndex(of: ":") == colon ? colon : nil
    }

    private static func normalized(_ host: String) -> String {
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        while host.hasSuffix(".") { host.removeLast() }
        return host
    }

    /// The proxies (credentials redacted) and the bypass list.
    public var description: String {
        "http: \(http.map(String.init(describing:)) ?? "direct"), https: \(https.map(String.init(describing:)) ?? "direct"), bypass: \(bypass)"
    }
}
