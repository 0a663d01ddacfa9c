import Foundation

/// An origin: scheme, host and port (RFC 6454).
struct Origin: Hashable, Sendable, CustomStringConvertible {
    let scheme: String
    let host: String
    let port: Int

    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = url.port ?? (scheme == "https" ? 443 : 80)
    }

    init?(_ text: String) {
        guard let url = URL(string: text) else { return nil }
        self.init(url)
    }

    /// The origin of a request head's scheme and authority (`host`, `host:port`, `[v6]:port`),
    /// read without making a URL: what the transport stage does for every attempt. Agrees with
    /// the URL initializer on the same request.
    init?(scheme: String?, authority: String?) {
        guard let scheme = scheme?.lowercased(), let authority, !authority.isEmpty else { return nil }
        var rest = Substring(authority)
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        var port: Int?
        let host: Substring
        if rest.first == "[" {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.first == ":" { port = Int(after.dropFirst()) } else if !after.isEmpty { return nil }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            port = Int(rest[rest.index(after: colon)...])
            if port == nil, rest.index(after: colon) != rest.endIndex { return nil }
        } else {
            host = rest
        }
        guard !host.isEmpty else { return nil }
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port ?? (scheme == "https" ? 443 : 80)
    }

    var description: String { "\(scheme)://\(host):\(port)" }
}

/// The URL schemes Callsign sends requests to: `http`, `https`, and `http+unix`/`https+unix`
/// for a server on a Unix domain socket (the Docker API), whose host is the percent-encoded
/// socket path: `http+unix://%2Fvar%2Frun%2Fdocker.sock/v1.45/containers/json`.
enum URLScheme {
    static let supported: Set<String> = ["http", "https", "http+unix", "https+unix"]

    /// Whether `scheme` (lower-cased) is one Callsign can send to.
    static func isSupported(_ scheme: String?) -> Bool {
        scheme.map { supported.contains($0.lowercased()) } ?? false
    }

    /// Whether `host` is an IP address (v4, or v6 in any spelling) rather than a name: no
    /// subdomain matches it and TLS sends it no server name.
    static func isAddressLiteral(_ host: String) -> Bool {
        host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
    }

    /// Whether `scheme` reaches its server over a Unix domain socket.
    static func isUnixSocket(_ scheme: String?) -> Bool {
        scheme?.lowercased().hasSuffix("+unix") ?? false
    }
}
