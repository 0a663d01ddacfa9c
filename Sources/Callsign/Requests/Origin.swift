import Foundation

/// An origin: scheme, host and port (RFC 6454).
struct Origin: Hashable, Sendable, CustomStringConvertible {
    let scheme: String
    let host: String
    let port: Int

    init?(_ url: URL) {
        guard let given = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        // A WebSocket URL's origin is its handshake's: `ws` is `http`, `wss` is `https`.
        let scheme = WebSocketScheme.handshakeScheme(given)
        self.scheme = scheme
        self.host = host
        self.port = url.port ?? (scheme == "https" ? 443 : 80)
    }

    init?(_ text: String) {
        guard let url = URL(string: text) else { return nil }
        self.init(url)
    }

    /// The origin of a request head's scheme and authority (`host`, `host:port`, `[v6]:port`),
    /// read without making a URL: what the transport stage does for every attempt, so it reads
    /// UTF-8 bytes and makes one string for the host (none more when it is already lower-case).
    /// Agrees with the URL initializer on the same request.
    init?(scheme: String?, authority: String?) {
        guard let scheme, let authority, !authority.isEmpty else { return nil }
        let bytes = authority.utf8
        var start = bytes.startIndex
        if let at = bytes.lastIndex(of: UInt8(ascii: "@")) { start = bytes.index(after: at) }
        let rest = bytes[start...]
        let hostBytes: Substring.UTF8View
        var portBytes: Substring.UTF8View?
        if rest.first == UInt8(ascii: "[") {
            guard let close = rest.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostBytes = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.first == UInt8(ascii: ":") {
                portBytes = after.dropFirst()
            } else if !after.isEmpty {
                return nil
            }
        } else if let colon = rest.lastIndex(of: UInt8(ascii: ":")) {
            hostBytes = rest[..<colon]
            portBytes = rest[rest.index(after: colon)...]
        } else {
            hostBytes = rest
        }
        guard !hostBytes.isEmpty else { return nil }
        var port: Int?
        if let portBytes, !portBytes.isEmpty {
            guard let number = Self.decimal(portBytes) else { return nil }
            port = number
        }
        let lowerScheme = Self.lowercased(scheme)
        self.scheme = lowerScheme
        self.host = Self.lowercased(String(Substring(hostBytes)))
        self.port = port ?? (lowerScheme == "https" ? 443 : 80)
    }

    /// `text` lower-cased; the same string when it has no upper-case ASCII letter and no
    /// non-ASCII byte (the usual host and scheme), so no copy is made.
    private static func lowercased(_ text: String) -> String {
        text.utf8.contains { (0x41...0x5A).contains($0) || $0 >= 0x80 } ? text.lowercased() : text
    }

    /// The number `digits` spell in decimal, or `nil` for anything else or more than nine digits.
    private static func decimal(_ digits: Substring.UTF8View) -> Int? {
        guard digits.count <= 9 else { return nil }
        var value = 0
        for byte in digits {
            guard (0x30...0x39).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
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
