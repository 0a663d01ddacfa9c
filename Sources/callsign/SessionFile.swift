import Callsign
import Foundation

// A `--session` file as stored, kept free of ArgumentParser and of the sealing key so the fuzz
// package can compile this file as it is (Fuzz/Sources/CallsignFuzz/CLI/ links to it). Reading
// one is bounded and strict: anything unexpected is an error that names the field, never the value.

/// What a session keeps between commands, as HTTPie's sessions do: the origin it belongs to, the
/// custom headers and the credentials given on the command line, and the cookies the server set
/// (Callsign's own ``Cookie`` values, attributes and all).
///
/// Secret values — the credential, the value of a header with a secret name, every cookie value —
/// are stored sealed (``SessionFile/sealedPrefix`` + Base64 of AES-GCM), so the file alone, copied
/// or committed by mistake, gives no secret away. A value without the prefix is clear text a
/// person wrote; it is sealed when the session is next written.
struct SessionFile: Codable, Equatable, Sendable {
    /// The layout of this file; another is refused.
    static let currentFormat = "callsign-session/1"
    /// The most cookies a session keeps: the jar's own bound (``CookieJar/maximumCookies``), so
    /// whatever the jar holds is saved.
    static let maximumCookies = CookieJar.maximumCookies
    /// The most headers a session keeps.
    static let maximumHeaders = 100
    /// The longest header value or credential kept (sealed values are longer).
    static let maximumValueBytes = 16_384
    /// The largest session file read or written, in bytes. A session at the jar's bounds with
    /// every cookie at its largest would be larger still (a few hundred MiB): past this size the
    /// oldest cookies are left out on writing, as the jar itself lets its oldest go, so every
    /// session Callsign writes reads back. One cookie the jar takes is at most ~23 KiB here (its
    /// name and sealed value within ``CookieJar/maximumCookieSize``, a path as long as a whole
    /// `Set-Cookie` field with each byte escaped), so hundreds of the largest still fit.
    static let maximumSize = 16 << 20
    /// What marks a sealed value.
    static let sealedPrefix = "sealed:"

    var format: String = currentFormat
    /// The origin (`scheme://host:port`) whose requests get the headers and credentials.
    var origin: String
    var headers: [Header] = []
    var authentication: StoredAuthentication?
    var cookies: [Cookie] = []

    /// One custom header.
    struct Header: Codable, Equatable, Sendable {
        var name: String
        var value: String
    }

    /// The credentials of `--user` or `--bearer`.
    struct StoredAuthentication: Codable, Equatable, Sendable {
        /// `basic` or `bearer`.
        var type: String
        /// The user name of basic credentials.
        var username: String?
        /// The password or the token.
        var secret: String
    }

    /// The headers a session never keeps, as HTTPie: they describe one request's body or
    /// condition, or are kept in their own form (credentials, cookies).
    static func isKept(header name: String) -> Bool {
        let lowered = name.lowercased()
        return !["content-type", "content-length", "content-encoding", "transfer-encoding", "host", "cookie", "authorization"].contains(lowered)
            && !lowered.hasPrefix("if-")
    }

    /// Reads a session file's bytes: bounded, strict, every field checked.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/storage``) naming `path` and what is wrong — never a value.
    static func decode(_ data: Data, path: String) throws(APIError) -> SessionFile {
        guard data.count <= maximumSize else {
            throw cliError(.storage, "the session file \(path) is larger than \(maximumSize) bytes; remove it")
        }
        let file: SessionFile
        do {
            file = try KeptJSON.decoder().decode(SessionFile.self, from: data)
        } catch {
            throw cliError(.storage, "the session file \(path) is damaged (not a Callsign session); remove it or name another")
        }
        try file.check(path: path)
        return file
    }

    /// The file's bytes: pretty JSON, keys sorted, dates as seconds.
    func encoded() -> Data {
        (try? KeptJSON.encoder(readable: true).encode(self)) ?? Data()
    }

    /// The file's bytes within ``maximumSize``: when they would be larger, the oldest cookies are
    /// left out until they fit, as the jar lets its oldest go when it is full.
    mutating func encodedWithinBounds() -> Data {
        var data = encoded()
        while data.count > Self.maximumSize, !cookies.isEmpty {
            cookies.sort { $0.created < $1.created }
            cookies.removeFirst(max(1, cookies.count / 8))
            data = encoded()
        }
        return data
    }

    /// Every field within its bounds and of its form.
    private func check(path: String) throws(APIError) {
        guard format == Self.currentFormat else {
            throw cliError(.storage, "the session file \(path) has format \(Self.printable(format)), not \(Self.currentFormat); remove it or name another")
        }
        guard let url = URL(string: origin), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = url.host, !host.isEmpty, origin.utf8.count <= 2_048, url.path.isEmpty, url.query == nil
        else {
            throw cliError(.storage, "the session file \(path) is damaged: its origin is not scheme://host:port")
        }
        guard headers.count <= Self.maximumHeaders, cookies.count <= Self.maximumCookies else {
            throw cliError(.storage, "the session file \(path) holds more than \(Self.maximumHeaders) headers or \(Self.maximumCookies) cookies")
        }
        for header in headers {
            guard Self.isToken(header.name), Self.isFieldValue(header.value) else {
                throw cliError(.storage, "the session file \(path) is damaged: a header is not a valid field")
            }
        }
        if let authentication {
            let valid = switch authentication.type {
            case "bearer": authentication.username == nil
            case "basic": authentication.username.map { !$0.contains(":") && Self.isFieldValue($0) } ?? false
            default: false
            }
            guard valid, Self.isFieldValue(authentication.secret), !authentication.secret.isEmpty else {
                throw cliError(.storage, "the session file \(path) is damaged: its authentication is not basic or bearer credentials")
            }
        }
        // A cookie is judged by the jar's own rules once its value is opened (``admitted(_:now:)``):
        // one that is not a cookie a server could set costs the session that cookie, not its
        // credentials. Only what any cookie is read under is checked here.
    }

    /// The cookies of `cookies` the jar takes — under its rules for cookies from outside
    /// (``CookieJar/init(_:now:)``: names, values, prefixes, public suffixes, its per-domain and
    /// total bounds), the newest first where a bound leaves some out — oldest first, as stored.
    /// The one judge of a session's cookies, on reading and on writing.
    static func admitted(_ cookies: [Cookie], now: Date = Date()) -> [Cookie] {
        let newestFirst = cookies.sorted { $0.created > $1.created }
        return CookieJar(newestFirst, now: now).all(now: now).sorted { $0.created < $1.created }
    }

    /// An RFC 9110 token of at most 256 bytes.
    static func isToken(_ text: String) -> Bool {
        let separators = Set("()<>@,;:\\\"/[]?={}".utf8)
        return !text.isEmpty && text.utf8.count <= 256 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && !separators.contains($0) }
    }

    /// A field value: no control character but tab, bounded (sealed text is Base64, a little longer).
    static func isFieldValue(_ text: String) -> Bool {
        text.utf8.count <= maximumValueBytes * 2
            && text.unicodeScalars.allSatisfy { ($0.value >= 0x20 && $0.value != 0x7F) || $0 == "\t" }
    }

    /// A short, printable excerpt of text read from a file, for a message.
    private static func printable(_ text: String) -> String {
        let excerpt = text.unicodeScalars.prefix(40).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }
        return "\"" + String(excerpt) + "\""
    }
}
