public import Callsign
public import Foundation
import NIOSSL
public import PostgresNIO

/// `postgres://` URLs, as the command line and apps write them.
///
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…&passwordFile=…&host=/socket/folder]`.
/// The password comes from the URL, else the `PGPASSWORD` variable, else the file `passwordFile`
/// names (its first line). `sslmode` is `disable`, `prefer` or `require` (`require` also checks the
/// server's certificate and name); the default is `disable` for 127.0.0.1, `::1`, `localhost` and a
/// socket, `prefer` elsewhere. `host=/path` connects through the Unix socket in that folder.
///
/// ```swift
/// let configuration = try PostgresURL.configuration("postgres://app@db.internal/shop?sslmode=require")
/// let postgres = PostgresClient(configuration: configuration)
/// ```
public enum PostgresURL {
    /// Whether `text` is a `postgres://` (or `postgresql://`) URL.
    public static func isPostgres(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// The client configuration `url` describes.
    ///
    /// - Throws: `APIError` (`APIError.Code.invalidRequest`) naming what is wrong — never
    ///   with the password, which error messages show as `***`.
    public static func configuration(
        _ url: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(APIError) -> PostgresClient.Configuration {
        let shown = redacted(url)
        guard isPostgres(url), let components = URLComponents(string: url) else {
            throw APIError(.invalidRequest, localized: "\"\(shown)\" is not a postgres:// URL")
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        guard let user = components.user.flatMap({ $0.removingPercentEncoding }), !user.isEmpty else {
            throw APIError(.invalidRequest, localized: "\"\(shown)\" names no user (postgres://USER@HOST/DATABASE)")
        }
        let database = components.path.split(separator: "/").first.map { String($0).removingPercentEncoding ?? String($0) }
        let password = try password(components: components, query: query, environment: environment, shown: shown)
        if let socketFolder = query["host"], socketFolder.hasPrefix("/") {
            let port = components.port ?? 5432
            return PostgresClient.Configuration(
                unixSocketPath: "\(socketFolder)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        }
        guard let host = components.host, !host.isEmpty else {
            throw APIError(.invalidRequest, localized: "\"\(shown)\" names no host")
        }
        let port = components.port ?? 5432
        guard (1...65_535).contains(port) else { throw APIError(.invalidRequest, localized: "\"\(shown)\" has no valid port") }
        let loopback = ["127.0.0.1", "::1", "[::1]", "localhost"].contains(host.lowercased())
        let tls: PostgresClient.Configuration.TLS
        switch query["sslmode"] ?? (loopback ? "disable" : "prefer") {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        case let other:
            throw APIError(.invalidRequest, localized: "sslmode=\(other) is not one of disable, prefer, require")
        }
        return PostgresClient.Configuration(
            host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port, username: user, password: password,
            database: database, tls: tls)
    }

    /// `url` with its password replaced by `***`, for messages and logs.
    public static func redacted(_ url: String) -> String {
        // Read from the text itself, not from a parser's view of it: what a parser does not see
        // as a password (in a malformed URL) is still hidden. The user information is what
        // precedes the last "@" of the authority; its password follows the first ":".
        // Bytes, not characters: "@" followed by a combining mark is one Character that is not "@".
        let bytes = Array(url.utf8)
        guard let scheme = bytes.indices.first(where: { bytes[$0...].starts(with: Array("://".utf8)) }) else { return url }
        let start = scheme + 3
        let authorityEnd = bytes[start...].firstIndex { [UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains($0) } ?? bytes.endIndex
        guard let at = bytes[start..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) ?? bytes[start...].lastIndex(of: UInt8(ascii: "@")),
            let colon = bytes[start..<at].firstIndex(of: UInt8(ascii: ":"))
        else { return url }
        return String(decoding: bytes[..<(colon + 1)], as: UTF8.self) + "***" + String(decoding: bytes[at...], as: UTF8.self)
    }

    private static func password(
        components: URLComponents, query: [String: String], environment: [String: String], shown: String
    ) throws(APIError) -> String? {
        if let given = components.password { return given.removingPercentEncoding ?? given }
        if let variable = environment["PGPASSWORD"], !variable.isEmpty { return variable }
        guard let file = query["passwordFile"] else { return nil }
        guard let data = FileManager.default.contents(atPath: file), data.count <= 4096,
            let line = String(data: data, encoding: .utf8)?.split(whereSeparator: \.isNewline).first
        else {
            throw APIError(.invalidRequest, localized: "the password file \(file) of \"\(shown)\" cannot be read (at most 4 KiB of UTF-8)")
        }
        return String(line)
    }
}
