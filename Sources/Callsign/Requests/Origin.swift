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

    var description: String { "\(scheme)://\(host):\(port)" }
}
