import ArgumentParser
import Callsign
import CallsignOpenAPI
import Foundation
import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing to the terminal, a file or a pipe.
///
/// Raw `write(2)` calls rather than `FileHandle.write`, which traps when the reader has gone
/// (`callsign call X | head -1`). A closed stdout ends the program as `cat` or `curl` would:
/// quietly, by the default action of SIGPIPE (status 141 in a shell), with nothing on stderr.
///
/// Every line of text goes through ``TerminalText/line(_:)``: a control character or a line
/// feed in it — from a server, a document or a stored row — is shown escaped, never obeyed.
/// Only ``write(_:)`` (a body, already made safe for a terminal or going to a pipe) and
/// ``redraw(_:)`` (the progress bar's own cursor control) send bytes as they are.
enum Terminal {
    /// One line on standard output, its control characters escaped.
    static func out(_ text: String) {
        write(Data((TerminalText.line(text) + "\n").utf8))
    }

    /// A line whose pieces were escaped as they were appended (``StyledLine``), with its colours.
    static func out(_ line: StyledLine) {
        write(Data((line.text + "\n").utf8))
    }

    /// A line on standard error whose pieces were escaped as they were appended (``StyledLine``).
    static func error(_ line: StyledLine) {
        write(Data((line.text + "\n").utf8), to: STDERR_FILENO)
    }

    /// Bytes on standard output exactly as given: a body (see ``ResponsePrinter/printBody(_:output:)``).
    static func write(_ data: Data) {
        write(data, to: STDOUT_FILENO)
    }

    /// One line on standard error, its control characters escaped.
    static func error(_ text: String) {
        write(Data((TerminalText.line(text) + "\n").utf8), to: STDERR_FILENO)
    }

    /// Redraws the current line of standard error (a progress bar on a terminal): the cursor goes
    /// back to the start of the line, the line is cleared, and `text` — escaped — is drawn.
    static func redraw(_ text: String) {
        write(Data(("\r\u{1B}[2K" + TerminalText.line(text)).utf8), to: STDERR_FILENO)
    }

    /// Ends a line drawn by ``redraw(_:)``.
    static func endRedrawnLine() {
        write(Data("\n".utf8), to: STDERR_FILENO)
    }

    private static func write(_ data: Data, to descriptor: Int32) {
        // A full disk or a closed descriptor: nothing better to do than stop writing. A reader
        // that went away ends the program as a pipeline member conventionally ends.
        if FileWriter.writeAll(data, to: descriptor) == EPIPE { readerClosed() }
    }

    /// The reader went away: end as a pipeline member conventionally does.
    private static func readerClosed() -> Never {
        signal(SIGPIPE, SIG_DFL)
        raise(SIGPIPE)
        exit(141)  // only if the signal was blocked
    }
}


/// `--body` and `-F`: a text body, a file streamed from disk, or a multipart form.
enum BodyArguments {
    static func body(_ body: String?, json: String? = nil, form fields: [String]) throws(APIError) -> RequestBody? {
        guard [body != nil, json != nil, !fields.isEmpty].filter({ $0 }).count <= 1 else {
            throw cliError(.invalidRequest, "give one of --body, --json or -F fields")
        }
        if let json {
            // Sent exactly as written, once it is known to be JSON.
            guard JSONText.isValid(Data(json.utf8)) else { throw cliError(.invalidRequest, "--json: the text is not one valid JSON value") }
            return .data(Data(json.utf8), contentType: "application/json")
        }
        if let body {
            // Standard input through the same door as any file (BodyFile): a redirected regular
            // file is sent with its length, a pipe or a terminal streamed within the limit.
            if body == "@-" { return .file(URL(fileURLWithPath: "/dev/stdin")) }
            guard body.hasPrefix("@") else { return .text(body) }
            return .file(try existingFile(String(body.dropFirst()), option: "--body"))
        }
        guard !fields.isEmpty else { return nil }
        return .multipart(try multipart(fields))
    }

    /// The `-F` fields as a multipart form (empty for none).
    static func multipart(_ fields: [String]) throws(APIError) -> MultipartFormData {
        var form = MultipartFormData()
        for field in fields {
            guard let equals = field.firstIndex(of: "="), equals != field.startIndex else {
                throw cliError(.invalidRequest, "-F takes name=value or name=@FILE, not \(field)")
            }
            let name = String(field[..<equals])
            let value = String(field[field.index(after: equals)...])
            if value.hasPrefix("@") {
                form.append(fileAt: try existingFile(String(value.dropFirst()), option: "-F \(name)"), name: name)
            } else {
                form.append(field: name, value: value)
            }
        }
        return form
    }

    static func existingFile(_ path: String, option: String) throws(APIError) -> URL {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue,
            FileManager.default.isReadableFile(atPath: path)
        else {
            throw cliError(.invalidRequest, "\(option): \(path) is not a readable file")
        }
        return URL(fileURLWithPath: path)
    }
}

/// Loads a definitions file and applies `--base-url`.
enum DefinitionsArgument {
    /// The definitions file to use: the one given, else `$CALLSIGN_DEFINITIONS`, else
    /// `callsign.yaml` or `callsign.json` in the current folder.
    static func path(_ given: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(APIError) -> String {
        guard let choice = choice(given, environment: environment) else {
            throw cliError(
                .invalidDefinition,
                "no definitions file: give --definitions FILE (-D), set CALLSIGN_DEFINITIONS, or put callsign.yaml in this folder")
        }
        return choice.path
    }

    /// The definitions file to use if there is one: the one given, else the defaults `path`
    /// looks for; `nil` when none of them exists (for ad-hoc calls, which need none).
    static func optionalPath(_ given: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        choice(given, environment: environment)?.path
    }

    /// A definitions file and whether the user named it.
    struct Choice: Equatable {
        var path: String
        /// `true` for `-D FILE` and `$CALLSIGN_DEFINITIONS`; `false` for a `callsign.yaml` or
        /// `callsign.json` that merely lies in the current folder — perhaps a cloned repository's,
        /// written by someone else. Command-line credentials never go to such a file's hosts.
        var named: Bool
    }

    /// The definitions file to use, and how it was chosen; `nil` when there is none.
    static func choice(_ given: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> Choice? {
        if let given { return Choice(path: given, named: true) }
        if let named = environment["CALLSIGN_DEFINITIONS"], !named.isEmpty { return Choice(path: named, named: true) }
        for candidate in ["callsign.yaml", "callsign.json"] where FileManager.default.fileExists(atPath: candidate) {
            return Choice(path: candidate, named: false)
        }
        return nil
    }

    /// Says on stderr which definitions file was picked up without being named, so a file
    /// planted in a folder never acts unseen.
    static func announce(_ choice: Choice, quiet: Bool) {
        guard !choice.named, !quiet else { return }
        Terminal.error(localized("callsign: using \(choice.path), found in this folder (name a file with -D to choose)"))
    }

    /// A definitions file found, not named, lends its definitions but none of its hosts' trust:
    /// neither command-line credentials nor the credentials it names itself (a token from an
    /// environment variable) are sent to them. Says so when the file names credentials.
    static func distrust(_ definitions: inout APIDefinitions, choice: Choice, quiet: Bool) {
        guard !choice.named else { return }
        definitions.trustsItsOrigins = false
        if definitions.authenticationSource != nil, !quiet {
            Terminal.error(localized("callsign: the credentials \(choice.path) names are sent only when you name it with -D"))
        }
    }

    /// Refuses command-line credentials when they would go to the hosts of a definitions file
    /// the user did not name: only an origin typed on the command line, or the origins of a
    /// file named with `-D` or `$CALLSIGN_DEFINITIONS`, receive them.
    static func checkCredentials(_ credentials: CredentialOptions, choice: Choice?, typedOrigin: Bool) throws {
        guard let choice, !choice.named, credentials.given, !typedOrigin else { return }
        throw ValidationError(
            localized("command-line credentials go only to a URL you type or to a definitions file you name: \(choice.path) was found in this folder; give -D \(choice.path) to send them to its hosts, or a full URL"))
    }

    /// Loads the definitions file `path(given)` names.
    static func load(_ given: String?, baseURL: String?) throws(APIError) -> APIDefinitions {
        try load(path(given), baseURL: baseURL)
    }

    static func load(_ path: String, baseURL: String?) throws(APIError) -> APIDefinitions {
        try loaded(path, baseURL: baseURL).definitions
    }

    /// A definitions file, or an OpenAPI document (recognised by its `openapi` key) with its operations.
    struct Loaded {
        var definitions: APIDefinitions
        var openAPI: OpenAPIOperations?
    }

    static func loaded(_ given: String?, baseURL: String?, strict: Bool = false) throws(APIError) -> Loaded {
        try loaded(path(given), baseURL: baseURL, strict: strict)
    }

    /// `strict` refuses an OpenAPI document that strays from the specification, listing every problem.
    static func loaded(_ path: String, baseURL: String?, strict: Bool = false) throws(APIError) -> Loaded {
        // An OpenAPI document is read back from the user's description cache when it is there.
        let file = try DefinitionsFile.load(contentsOf: URL(fileURLWithPath: path), strict: strict, cache: .user)
        var loaded = Loaded(definitions: file.definitions, openAPI: file.openAPI)
        if let baseURL {
            guard let base = URL(string: baseURL), base.scheme != nil else {
                throw cliError(.invalidRequest, "--base-url must be an absolute http(s) URL, not \(baseURL)")
            }
            loaded.definitions.defaultDefinition.baseURL = base
            loaded.openAPI?.baseURL = base
        }
        return loaded
    }
}

/// Printing responses.
enum ResponsePrinter {
    /// The status line and header fields, as received, and the blank line that ends them;
    /// in `colors` when given (on a terminal).
    static func printHead(_ response: Response, colors: HeadColors? = nil) {
        let fields = response.headers.map { (name: $0.name.rawName, value: $0.value) }
        for line in headLines(start: statusLine(response), fields: fields, colors: colors) { Terminal.out(line) }
    }

    /// An HTTP head as lines: the start line (request or status line), one line per field, and
    /// the empty line that ends a head, each after `prefix` (`> ` or `< ` on standard error).
    static func headLines(
        start: String, fields: [(name: String, value: String)], colors: HeadColors?, prefix: String = ""
    ) -> [StyledLine] {
        var lines = [StyledLine(prefix)]
        lines[0].append(start, style: colors?.startLine)
        for field in fields {
            var line = StyledLine(prefix)
            line.append(field.name, style: colors?.name)
            line.append(": " + field.value)
            lines.append(line)
        }
        lines.append(StyledLine(String(prefix.prefix { $0 != " " })))
        return lines
    }

    /// The status line with the protocol the response came over, as curl prints it:
    /// `HTTP/1.1 200 OK`, and `HTTP/2 200` (HTTP/2 has no reason phrase).
    static func statusLine(_ response: Response) -> String {
        statusLine(version: response.httpVersion, status: response.status)
    }

    /// The status line of a head that came over `version`.
    static func statusLine(version: String, status: HTTPResponse.Status) -> String {
        guard version.hasPrefix("HTTP/1") else { return "\(version) \(status.code)" }
        return "\(version) \(status.code) \(status.reasonPhrase)"
    }

    /// The body exactly as received (after content decoding), or — for a person — JSON
    /// re-indented token by token, never re-serialized: key order, number text and string escapes
    /// stay as the server sent them.
    ///
    /// On a terminal (unless `--raw` asks for the bytes as they are), the body is first made safe
    /// by ``TerminalText/body(_:)``: control characters a server could use to clear the screen,
    /// set the window title or forge lines are shown escaped, and binary content is not shown at
    /// all, only its size (as HTTPie does). To a file or a pipe the body is byte-exact.
    static func printBody(_ response: Response, output: OutputOptions) {
        guard !response.body.isEmpty else { return }
        var body = response.body
        if output.showsOnTerminal {
            switch TerminalText.body(body) {
            case .text(let safe):
                body = safe
            case .binary(let count):
                Terminal.out(localized("[binary body of \(count) bytes not shown on a terminal: use -o FILE, a pipe, or --raw]"))
                return
            }
        }
        if output.prettyPrints, let pretty = JSONText.prettyPrinted(body, colors: output.colors) {
            Terminal.write(pretty)
            return
        }
        Terminal.write(body)
        if output.prettyPrints, body.last != UInt8(ascii: "\n") { Terminal.write(Data("\n".utf8)) }
    }

    static func isTerminal(_ descriptor: Int32) -> Bool { isatty(descriptor) == 1 }
}

/// `--verbose`: one line per attempt on stderr, and the wait before the next.
enum AttemptPrinter {
    static func install(in configuration: inout APIClient.Configuration) {
        configuration.insert(
            AnyMiddleware { request, _, next in
                let clock = ContinuousClock()
                let started = clock.now
                Terminal.error("> \(request.method.rawValue) \(Redaction.redact(request.path))")
                do {
                    let response = try await next(request)
                    Terminal.error("< \(response.status.code) \(response.status.reasonPhrase) (\(milliseconds(clock.now - started)) ms)")
                    return response
                } catch let error as APIError {
                    Terminal.error("< \(error.code): \(error.message) (\(milliseconds(clock.now - started)) ms)")
                    throw error
                }
            }, before: .redirects)
        configuration.observability.observers.append(RetryPrinter { report in
            Terminal.error(localized("  attempt \(report.attempt) failed (\(report.outcome)); next attempt in \(milliseconds(report.wait)) ms"))
        })
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        // Bounded before the conversion: a Retry-After of centuries must not trap.
        let value = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        return value.isFinite ? Int(min(max(value, 0), 1e15)) : 0
    }
}

/// Says each retry the client is about to make (`--verbose`, the demo).
struct RetryPrinter: CallObserver {
    let say: @Sendable (AttemptReport) -> Void

    func callWillRetry(_ call: ObservedCall, after report: AttemptReport) { say(report) }
}

/// `--mock`: a HAR file to replay, or a folder of fixtures.
enum MockArgument {
    static func mocks(_ path: String, definitions: APIDefinitions) throws(APIError) -> Mocks {
        let url = URL(fileURLWithPath: path)
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) else {
            throw cliError(.invalidRequest, "--mock: \(path) does not exist")
        }
        guard isFolder.boolValue else {
            let replay = try HARReplay(contentsOf: url)
            // An archive from another tool may hold entries replay cannot serve: say which, so a
            // missing answer later is not a mystery (the first 20; a browser's export can hold hundreds).
            for skipped in replay.skippedEntries.prefix(20) {
                Terminal.error(localized("callsign: --mock \(path): not replayed: \(skipped.message)"))
            }
            if replay.skippedEntryCount > 20 {
                Terminal.error(localized("callsign: --mock \(path): \(replay.skippedEntryCount - 20) more entries not replayed"))
            }
            return Mocks(replaying: replay)
        }
        let files = Dictionary(uniqueKeysWithValues: definitions.names.map { name in
            (name, definitions[name]?.mock ?? "\(name).json")
        })
        return Mocks(directory: url, realRequests: false) { request in
            request.apiName.flatMap { files[$0] }.map { Mock.confinedFile($0) }
        }
    }
}
