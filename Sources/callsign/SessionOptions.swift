import ArgumentParser
import Callsign
import CallsignSQLite
import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `--session NAME|PATH` and `--session-read-only NAME|PATH`: cookies, credentials and custom
/// headers kept between commands, as HTTPie's sessions keep them.
struct SessionOption: ParsableArguments {
    @Option(
        name: .customLong("session"),
        help: .localized("Keep cookies, credentials (--user, --bearer) and custom headers between commands in a session: a NAME (kept per host under $XDG_CONFIG_HOME/callsign/sessions) or a PATH (with a /). Created on first use, updated after each answer.", valueName: "name-or-path"))
    var session: String?

    @Option(
        name: .customLong("session-read-only"),
        help: .localized("Use a session as --session does, without writing back what changed.", valueName: "name-or-path"))
    var readOnlySession: String?

    func validate() throws {
        if session != nil, readOnlySession != nil {
            throw ValidationError(localized("give --session or --session-read-only, not both"))
        }
    }

    /// The session the options name for a request to `target`, loaded; `nil` without `--session`.
    /// - Parameters:
    ///   - target: the request's URL (its origin chooses the folder of a named session).
    ///   - credentials: the command line's credentials, which replace the session's.
    ///   - headers: the custom headers given on the command line, which replace the session's of the same name.
    func open(for target: URL?, credentials: CredentialOptions, headers: Headers) throws -> ActiveSession? {
        guard let given = session ?? readOnlySession else { return nil }
        guard let target, let origin = SessionPlace.origin(of: target) else {
            throw cliError(.invalidRequest, "--session needs a request to an http(s) URL with a host")
        }
        let file = try SessionPlace.file(for: given, origin: origin)
        var session = try ActiveSession(file: file, origin: origin, writes: session != nil)
        try session.take(credentials: credentials, headers: headers)
        return session
    }
}

/// Where sessions live: `$XDG_CONFIG_HOME/callsign` (else `~/.config/callsign`), the key that
/// seals their secrets beside them.
enum SessionPlace {
    /// The per-user configuration folder of Callsign.
    static func configurationFolder(environment: [String: String] = ProcessInfo.processInfo.environment) throws(APIError) -> URL {
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg).appendingPathComponent("callsign")
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else {
            throw cliError(.storage, "no per-user folder for sessions: set HOME or XDG_CONFIG_HOME, or give --session a path")
        }
        return URL(fileURLWithPath: home).appendingPathComponent(".config/callsign")
    }

    /// `scheme://host:port` of an http(s) URL.
    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), let host = url.host?.lowercased(), !host.isEmpty
        else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        let shown = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(shown):\(port)"
    }

    /// The file of a session: a PATH (with a `/`) as given; a NAME in the folder of the
    /// request's host, so a session named for one host is never sent to another.
    static func file(for given: String, origin: String) throws(APIError) -> URL {
        if given.contains("/") { return URL(fileURLWithPath: given) }
        guard !given.isEmpty, given.utf8.count <= 64, !given.hasPrefix("."),
            given.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0)) })
        else {
            throw cliError(.invalidRequest, "--session \(given): a name is letters, digits, '-', '_' and '.' (up to 64, not starting with '.'); give a path with a / for a file of your own")
        }
        return try configurationFolder().appendingPathComponent("sessions").appendingPathComponent(folderName(origin))
            .appendingPathComponent(given + ".json")
    }

    /// The folder of a host's sessions: `host_port`, as HTTPie names them, in characters any file system takes.
    static func folderName(_ origin: String) -> String {
        let authority = origin.split(separator: "/").last.map(String.init) ?? origin
        let safe = authority.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || scalar == "." || scalar == "-") ? Character(scalar) : "_"
        }
        return String(safe)
    }

    /// The key that seals sessions' secrets: 32 random bytes in `session.key` beside them (0600),
    /// made on first use.
    static func key() throws -> SymmetricKey {
        let folder = try configurationFolder()
        try FileWriter.makePrivateFolder(folder)
        let bytes = try KeyFile.load(folder.appendingPathComponent("session.key").path) {
            SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        }
        return SymmetricKey(data: bytes)
    }
}

/// A session in use for one command: what it adds to the request and the client, and what it
/// writes back after the answer.
///
/// Several commands may use one session at once. Each writes back only what it changed — the
/// cookies its answers set, replaced or expired, the headers and credentials its command line
/// gave — over what the file holds at that moment, read again under an exclusive lock
/// (`flock(2)` on `.NAME.lock` beside the file, created as Callsign's own private files are:
/// `O_NOFOLLOW`, 0600). The last to finish no longer writes its stale copy over the others' cookies.
struct ActiveSession: Sendable {
    let file: URL
    /// The origin of the request.
    let origin: String
    /// Whether this command writes the session back (`--session`, not `--session-read-only`).
    let writes: Bool
    /// What the file held, secrets opened, with this command's changes; a new session when there was no file.
    private(set) var stored: SessionFile
    /// The cookies lent to the call: what its answers changed is told from them on saving.
    private let lentCookies: [Cookie]
    /// The credentials the command line gave, for the session's own origin.
    private var givenAuthentication: SessionFile.StoredAuthentication?
    /// The headers the command line gave (kept ones only), for the session's own origin.
    private var givenHeaders: [SessionFile.Header] = []
    /// The origin the session belongs to: its headers and credentials go only there.
    var belongsToRequest: Bool { stored.origin == origin }

    /// The longest wait for another command's turn at the session file.
    static let lockWait: Duration = .seconds(10)

    init(file: URL, origin: String, writes: Bool) throws {
        self.file = file
        self.origin = origin
        self.writes = writes
        let (read, dropped) = try Self.read(file) ?? (SessionFile(origin: origin), [])
        for note in dropped { Terminal.error(note) }
        stored = read
        lentCookies = read.cookies
    }

    /// The session file as it is now, secrets opened and cookies judged by the jar; `nil` when
    /// there is none. The notes say which cookies were left out, and why.
    private static func read(_ file: URL) throws -> (SessionFile, notes: [String])? {
        guard let data = try FileWriter.readPrivate(file, limit: SessionFile.maximumSize) else { return nil }
        var read = try SessionFile.decode(data, path: file.path)
        let sealing = try SessionSealing(origin: read.origin, path: file.path)
        var notes = try sealing.open(&read)
        let opened = read.cookies
        read.cookies = SessionFile.admitted(opened)
        let now = Date()
        let kept = Set(read.cookies)
        let refused = opened.filter { !kept.contains($0) && ($0.expires.map { $0 > now } ?? true) }
        if !refused.isEmpty {
            notes.append(localized("callsign: the session file \(file.path): \(refused.count) cookie(s) left out, not ones a server could set or past the jar's bounds: \(Self.names(refused))"))
        }
        // Opened under the origin as written; compared (and sealed again) in one spelling.
        read.origin = URL(string: read.origin).flatMap(SessionPlace.origin) ?? read.origin
        return (read, notes)
    }

    /// Up to three cookie names, shortened, for a note (a name is not a secret; a value is).
    static func names(_ cookies: [Cookie]) -> String {
        let shown = cookies.prefix(3).map { $0.name.count > 40 ? String($0.name.prefix(40)) + "…" : $0.name }
        return shown.joined(separator: ", ") + (cookies.count > 3 ? ", …" : "")
    }

    /// The command line's credentials and headers replace the session's (HTTPie's rule), when the
    /// request goes to the session's own origin.
    mutating func take(credentials: CredentialOptions, headers: Headers) throws {
        guard belongsToRequest else { return }
        if let user = credentials.user, let colon = user.firstIndex(of: ":") {
            givenAuthentication = .init(type: "basic", username: String(user[..<colon]), secret: String(user[user.index(after: colon)...]))
        } else if let token = try credentials.bearerToken() {
            givenAuthentication = .init(type: "bearer", username: nil, secret: token)
        }
        givenHeaders = headers.fields.filter { SessionFile.isKept(header: $0.name) }.map { .init(name: $0.name, value: $0.value) }
        applyGiven(to: &stored)
    }

    /// Puts the command line's credentials and headers into `session`, if it belongs to the request's origin.
    private func applyGiven(to session: inout SessionFile) {
        guard session.origin == origin else { return }
        if let givenAuthentication { session.authentication = givenAuthentication }
        let names = Set(givenHeaders.map { $0.name.lowercased() })
        session.headers.removeAll { names.contains($0.name.lowercased()) }
        session.headers = Array((session.headers + givenHeaders).suffix(SessionFile.maximumHeaders))
    }

    /// The session's credentials, bound to its origin; `nil` when it has none or the request goes elsewhere.
    var authentication: Authentication? {
        guard belongsToRequest, let stored = stored.authentication else { return nil }
        var authentication: Authentication =
            stored.type == "basic" ? .basic(username: stored.username ?? "", password: stored.secret) : .bearer(stored.secret)
        authentication.additionalOrigins = URL(string: origin).map { [$0] } ?? []
        return authentication
    }

    /// Adds the session's headers the request does not set itself, when it goes to the session's origin.
    private func addHeaders(to request: inout Request) {
        guard belongsToRequest else { return }
        for header in stored.headers where !request.headers.contains(header.name) {
            request.headers.add(header.name, header.value)
        }
    }

    /// Lends the session to a call through the client's own stages: its headers the request does
    /// not set, its credentials unless the command line gave some, and a jar holding its cookies,
    /// returned for ``save(cookies:)``. Says on stderr when the session belongs to another origin.
    func lend(to request: inout Request, configuration: inout APIClient.Configuration, credentialsGiven: Bool, quiet: Bool) -> CookieJar {
        announce(quiet: quiet)
        addHeaders(to: &request)
        if !credentialsGiven, let lent = authentication {
            configuration.authentication = lent
            request.needsAuthorization = true
        }
        let jar = CookieJar(stored.cookies)
        configuration.cookies = jar
        return jar
    }

    /// Says on stderr that a session for another origin lends only its cookies.
    private func announce(quiet: Bool) {
        guard !belongsToRequest, !quiet else { return }
        Terminal.error(localized("callsign: the session \(file.path) belongs to \(stored.origin): its credentials and headers are not sent to \(origin)"))
    }

    /// The lock file beside the session: `.NAME.lock`.
    var lockFile: URL {
        file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).lock")
    }

    /// Writes this command's changes back (`--session`; nothing for `--session-read-only`): under
    /// the session's lock, over the file as it is now.
    func save(cookies jar: CookieJar) async throws {
        guard writes else { return }
        try FileWriter.makePrivateFolder(file.deletingLastPathComponent())
        // Callsign's own name beside the session: never a link, owner-only, made once and kept.
        let lock = try FileWriter.createPrivate(lockFile) ?? FileWriter.reopenPrivate(lockFile)
        guard try await lock.lockExclusively(waitingUpTo: Self.lockWait) else {
            throw cliError(
                .storage,
                "the session file \(file.path) stayed locked by another command for \(Self.lockWait.components.seconds) s; nothing was saved — try again")
        }
        var updated = try Self.read(file)?.0 ?? SessionFile(origin: stored.origin)
        applyGiven(to: &updated)
        updated.cookies = SessionFile.admitted(Self.merged(updated.cookies, lent: lentCookies, now: jar.all()))
        let sealing = try SessionSealing(origin: updated.origin, path: file.path)
        sealing.seal(&updated)
        try FileWriter.replacePrivate(file, with: updated.encodedWithinBounds())
        try lock.close()
    }

    /// The cookies on disk (`current`) with what this command's answers did to the ones it was
    /// lent: a cookie set or replaced (name, domain and path, RFC 6265 §5.3 step 11) is put
    /// over the one on disk; one the jar no longer holds (expired by an answer or by time, or
    /// let go at a bound) is taken away; any other cookie on disk — another command's — stays.
    static func merged(_ current: [Cookie], lent: [Cookie], now: [Cookie]) -> [Cookie] {
        struct Key: Hashable {
            let name: String, domain: String, path: String
            init(_ cookie: Cookie) { (name, domain, path) = (cookie.name, cookie.domain, cookie.path) }
        }
        let before = Dictionary(lent.map { (Key($0), $0) }, uniquingKeysWith: { first, _ in first })
        let after = Dictionary(now.map { (Key($0), $0) }, uniquingKeysWith: { first, _ in first })
        let removed = Set(before.keys.filter { after[$0] == nil })
        let changed = now.filter { before[Key($0)] != $0 }
        let changedKeys = Set(changed.map(Key.init))
        return current.filter { !removed.contains(Key($0)) && !changedKeys.contains(Key($0)) } + changed
    }
}

/// Seals and opens a session's secret values with AES-GCM under the per-user session key, each
/// bound to the session's origin and its place in the file: a sealed value moved to another
/// field or another session's file does not open.
struct SessionSealing {
    let key: SymmetricKey
    let origin: String
    let path: String

    init(origin: String, path: String) throws {
        key = try SessionPlace.key()
        self.origin = origin
        self.path = path
    }

    func seal(_ file: inout SessionFile) {
        for index in file.headers.indices where Redaction.default.isSecretHeader(file.headers[index].name) {
            file.headers[index].value = seal(file.headers[index].value, as: "header \(file.headers[index].name.lowercased())")
        }
        if let secret = file.authentication?.secret { file.authentication?.secret = seal(secret, as: "authentication") }
        for index in file.cookies.indices {
            file.cookies[index].value = seal(file.cookies[index].value, as: Self.place(of: file.cookies[index]))
        }
    }

    /// Opens every sealed value. A header or the credentials that do not open are an error: the
    /// user's own secrets are never dropped in silence. A cookie that does not open is left out
    /// with a note (returned): the server can set it again, and the rest of the session — the
    /// credentials above all — stays usable.
    func open(_ file: inout SessionFile) throws(APIError) -> [String] {
        for index in file.headers.indices {
            file.headers[index].value = try open(file.headers[index].value, as: "header \(file.headers[index].name.lowercased())")
        }
        if let secret = file.authentication?.secret { file.authentication?.secret = try open(secret, as: "authentication") }
        var notes: [String] = []
        file.cookies = file.cookies.compactMap { cookie in
            var opened = cookie
            do throws(APIError) {
                opened.value = try open(cookie.value, as: Self.place(of: cookie))
                return opened
            } catch {
                notes.append(localized("callsign: the session file \(path): the cookie \(ActiveSession.names([cookie])) was sealed with another key or altered; it is left out"))
                return nil
            }
        }
        return notes
    }

    private static func place(of cookie: Cookie) -> String { "cookie \(cookie.domain) \(cookie.path) \(cookie.name)" }

    private func seal(_ value: String, as place: String) -> String {
        guard !value.hasPrefix(SessionFile.sealedPrefix),
            let box = try? AES.GCM.seal(Data(value.utf8), using: key, authenticating: Data("\(origin)\n\(place)".utf8)).combined
        else { return value }
        return SessionFile.sealedPrefix + box.base64EncodedString()
    }

    private func open(_ value: String, as place: String) throws(APIError) -> String {
        guard value.hasPrefix(SessionFile.sealedPrefix) else { return value }
        guard let combined = Data(base64Encoded: String(value.dropFirst(SessionFile.sealedPrefix.count))),
            let box = try? AES.GCM.SealedBox(combined: combined),
            let opened = try? AES.GCM.open(box, using: key, authenticating: Data("\(origin)\n\(place)".utf8)),
            let text = String(data: opened, encoding: .utf8), SessionFile.isFieldValue(text)
        else {
            throw cliError(
                .storage,
                "the session file \(path) holds a secret sealed with another key or altered (\(place)); remove it, or log in again with a new session")
        }
        return text
    }
}

extension SessionPlace {
    /// The URL a request goes to, as far as it is known before it is sent: its own absolute
    /// path, else its base URL or the definitions' (enough for the origin).
    static func target(of request: Request, definitions: APIDefinitions) -> URL? {
        if let url = URL(string: request.path), url.host != nil { return url }
        return request.baseURL ?? definitions.defaultDefinition.baseURL
    }
}
