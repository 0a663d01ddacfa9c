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
        help: ArgumentHelp(
            localized("Keep cookies, credentials (--user, --bearer) and custom headers between commands in a session: a NAME (kept per host under $XDG_CONFIG_HOME/callsign/sessions) or a PATH (with a /). Created on first use, updated after each answer."),
            valueName: "name-or-path"))
    var session: String?

    @Option(
        name: .customLong("session-read-only"),
        help: ArgumentHelp(localized("Use a session as --session does, without writing back what changed."), valueName: "name-or-path"))
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

    /// Creates the folders down to `folder` that do not exist, owner-only (0700).
    static func makeFolder(_ folder: URL) throws(APIError) {
        var missing: [URL] = []
        var current = folder
        while !FileManager.default.fileExists(atPath: current.path), current.path != "/" {
            missing.append(current)
            current = current.deletingLastPathComponent()
        }
        for url in missing.reversed() {
            guard mkdir(url.path, 0o700) == 0 || errno == EEXIST else {
                throw cliError(.storage, "the folder \(url.path) cannot be created (\(String(cString: strerror(errno))))")
            }
        }
    }

    /// The key that seals sessions' secrets: 32 random bytes in `session.key` beside them (0600),
    /// made on first use.
    static func key() throws -> SymmetricKey {
        let folder = try configurationFolder()
        try makeFolder(folder)
        let bytes = try KeyFile.load(folder.appendingPathComponent("session.key").path) {
            SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        }
        return SymmetricKey(data: bytes)
    }
}

/// A session in use for one command: what it adds to the request and the client, and what it
/// writes back after the answer.
struct ActiveSession: Sendable {
    let file: URL
    /// The origin of the request.
    let origin: String
    /// Whether this command writes the session back (`--session`, not `--session-read-only`).
    let writes: Bool
    /// What the file held, secrets opened; a new session when there was no file.
    private(set) var stored: SessionFile
    /// The origin the session belongs to: its headers and credentials go only there.
    var belongsToRequest: Bool { stored.origin == origin }

    init(file: URL, origin: String, writes: Bool) throws {
        self.file = file
        self.origin = origin
        self.writes = writes
        guard let data = try FileWriter.readPrivate(file, limit: SessionFile.maximumSize) else {
            stored = SessionFile(origin: origin)
            return
        }
        var read = try SessionFile.decode(data, path: file.path)
        let sealing = try SessionSealing(origin: read.origin, path: file.path)
        try sealing.open(&read)
        // Opened under the origin as written; compared (and sealed again) in one spelling.
        read.origin = URL(string: read.origin).flatMap(SessionPlace.origin) ?? read.origin
        stored = read
    }

    /// The command line's credentials and headers replace the session's (HTTPie's rule), when the
    /// request goes to the session's own origin.
    mutating func take(credentials: CredentialOptions, headers: Headers) throws {
        guard belongsToRequest else { return }
        if let user = credentials.user, let colon = user.firstIndex(of: ":") {
            stored.authentication = .init(type: "basic", username: String(user[..<colon]), secret: String(user[user.index(after: colon)...]))
        } else if let token = try credentials.bearerToken() {
            stored.authentication = .init(type: "bearer", username: nil, secret: token)
        }
        for name in Set(headers.fields.map { $0.name.lowercased() }) where SessionFile.isKept(header: name) {
            stored.headers.removeAll { $0.name.lowercased() == name }
        }
        stored.headers += headers.fields.filter { SessionFile.isKept(header: $0.name) }.map { .init(name: $0.name, value: $0.value) }
        stored.headers = Array(stored.headers.suffix(SessionFile.maximumHeaders))
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

    /// Writes the session back with the jar's cookies (`--session`); nothing for `--session-read-only`.
    func save(cookies jar: CookieJar) throws {
        guard writes else { return }
        var updated = stored
        updated.cookies = Array(jar.all().prefix(SessionFile.maximumCookies))
        let sealing = try SessionSealing(origin: updated.origin, path: file.path)
        sealing.seal(&updated)
        try SessionPlace.makeFolder(file.deletingLastPathComponent())
        try FileWriter.replacePrivate(file, with: updated.encoded())
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

    func open(_ file: inout SessionFile) throws(APIError) {
        for index in file.headers.indices {
            file.headers[index].value = try open(file.headers[index].value, as: "header \(file.headers[index].name.lowercased())")
        }
        if let secret = file.authentication?.secret { file.authentication?.secret = try open(secret, as: "authentication") }
        for index in file.cookies.indices {
            file.cookies[index].value = try open(file.cookies[index].value, as: Self.place(of: file.cookies[index]))
        }
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
