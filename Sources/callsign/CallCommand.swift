import ArgumentParser
import Callsign
import CallsignSQLite
import Foundation
import HTTPTypes

struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Call an API by name and print its answer.",
        discussion: """
            Examples:
              callsign call UserProfile --definitions api.yaml -p user_id=42
              callsign call TopicList -D api.json -p page:=2 --include

            -p key=value sends a string; -p key:=json sends a JSON value (a number, true, [1,2], …). \
            --user USER:PASSWORD or --bearer TOKEN send credentials; otherwise a definitions file may name \
            environment variables that hold them (DEFAULT: authentication: {scheme: bearer, tokenEnvironment: API_TOKEN}).

            The body goes to stdout exactly as the server sent it (after content decoding) when stdout is \
            not a terminal, so `callsign call X > out.json` saves what the server sent. On a terminal, \
            JSON is re-indented without changing keys, numbers or escapes, in colour unless NO_COLOR is \
            set (--pretty, --raw and --color choose for yourself).

            A status the API does not accept prints the body and exits 22 (--fail-with-body, the default); \
            --fail prints nothing, --no-fail exits 0. See `callsign --help` for every exit status.
            """
    )

    /// What a status the API does not accept does, as in curl.
    enum FailMode: String, EnumerableFlag {
        case fail, failWithBody, noFail

        static func help(for value: FailMode) -> ArgumentHelp? {
            switch value {
            case .fail: "On a status the API does not accept, print nothing and exit 22."
            case .failWithBody: "On a status the API does not accept, print the body and exit 22 (the default)."
            case .noFail: "Print any answer and exit 0, whatever its status."
            }
        }
    }

    @Argument(help: "The API name, as defined in the definitions file.")
    var name: String

    @Option(
        name: [.customShort("D"), .long],
        help: "The definitions file (.json, .plist, .yaml or .yml). Default: $CALLSIGN_DEFINITIONS, else callsign.yaml or callsign.json here.")
    var definitions: String?

    @Option(name: [.customShort("p"), .customLong("param")], help: "A parameter: key=value or key:=json. Repeatable.")
    var parameters: [String] = []

    @Option(name: [.customShort("H"), .customLong("header")], help: "A header: 'Name: value'. Repeatable.")
    var headers: [String] = []

    @Option(name: .customLong("base-url"), help: "Replace the DEFAULT definition's base URL.")
    var baseURL: String?

    @OptionGroup var credentials: CredentialOptions

    @Option(help: "The request body: @FILE streams a file from disk, @- streams standard input; anything else is sent as text.")
    var body: String?

    @Option(help: "A JSON body, sent exactly as written (Content-Type: application/json).")
    var json: String?

    @Option(name: [.customShort("X"), .customLong("method")], help: "The HTTP method, instead of the definition's.")
    var method: String?

    @Option(name: [.short, .long], help: "Write the body to this file instead of standard output (exactly as received).")
    var output: String?

    @Flag(name: [.short, .long], help: "No notes on standard error beyond the one line of an error.")
    var quiet = false

    @Option(name: [.customShort("F"), .customLong("form")], help: "A multipart form field: name=value, or name=@FILE to upload a file (streamed). Repeatable.")
    var form: [String] = []

    @Option(help: "Time limit in seconds for one attempt.")
    var timeout: Double?

    @Option(help: "Attempts in all for a failing idempotent call (1 = no retry). Default: the definitions' policy, else 3.")
    var retry: Int?

    @Option(help: "One time limit in seconds for the whole call, retries included.")
    var deadline: Double?

    @Flag(name: [.short, .long], help: "Print each attempt (status or error, and the wait before the next) to stderr.")
    var verbose = false

    @Option(help: "Record the exchange to this HAR file (secrets redacted).")
    var har: String?

    @Option(help: "Answer from mocks instead of the network: a HAR file to replay, or a folder of fixtures (a definition's `mock:` file, else <API name>.json).")
    var mock: String?

    @Flag(name: [.short, .long], help: "Print the status line and headers before the body.")
    var include = false

    @Flag var failMode: FailMode = .failWithBody

    @OptionGroup var display: OutputOptions

    @Option(help: "Use the HTTP cache stored in this folder (created if needed); --verbose says whether the answer was a fresh hit, revalidated (304) or from the network.")
    var cache: String?

    @Flag(help: "If the server cannot be reached, queue the request (exit status 75) for `callsign queue replay`.")
    var offline = false

    @OptionGroup var queue: QueueOption

    func run() async throws {
        try await reportingErrors {
            let definitions = try DefinitionsArgument.load(self.definitions, baseURL: baseURL)
            let explicit = try credentials.authentication()
            let configuration = try makeConfiguration(definitions: definitions, explicit: explicit)
            let client = APIClient(definitions: definitions, configuration: configuration)
            var request = try definitions.definition(named: name).request(
                parameters: try ParameterArguments.parse(parameters), headers: try ParameterArguments.headers(headers))
            // Credentials given on the command line are meant to be sent, whatever the definition says.
            if explicit != nil { request.needsAuthorization = true }
            try adjust(&request, retryPolicy: configuration.retry)
            let response: Response
            do {
                response = try await client.send(request)
            } catch let error as APIError where error.code == .queuedOffline {
                Terminal.error("callsign: \(error.message)")
                if !quiet { Terminal.error("callsign: queue: \(queue.storage.url.path); send it with: callsign queue replay") }
                throw ExitCode(75)
            }
            if verbose, cache != nil { Terminal.error("cache: \(CacheReport.describe(response.source))") }
            if include { ResponsePrinter.printHead(response) }
            try show(response)
        }
    }

    /// The client's settings from the options.
    private func makeConfiguration(definitions: APIDefinitions, explicit: Authentication?) throws -> APIClient.Configuration {
        var configuration = APIClient.Configuration()
        if let timeout {
            guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout takes more than 0 and at most 86400 seconds") }
            configuration.timeouts.attempt = .milliseconds(Int64(timeout * 1000))
        }
        if let deadline {
            guard deadline > 0, deadline <= 86_400 else { throw ValidationError("--deadline takes more than 0 and at most 86400 seconds") }
            configuration.timeouts.deadline = .milliseconds(Int64(deadline * 1000))
        }
        if let retry {
            guard (1...100).contains(retry) else { throw ValidationError("--retry takes 1 to 100 attempts") }
        }
        if verbose { AttemptPrinter.install(in: &configuration) }
        configuration.authentication = try explicit ?? definitions.authenticationSource?.authentication()
        if let har { configuration.observability.recorder = HARRecorder(fileURL: URL(fileURLWithPath: har)) }
        if let mock { configuration.mocks = try MockArgument.mocks(mock, definitions: definitions) }
        if let cache {
            configuration.cache = HTTPCache(storage: SQLiteCacheStorage(directory: URL(fileURLWithPath: cache)))
        }
        if offline { configuration.offline.queue = queue.storage }
        return configuration
    }

    /// The request as the options change it: method, retry, offline store, body.
    private func adjust(_ request: inout Request, retryPolicy: RetryPolicy) throws {
        if let method {
            guard let parsed = HTTPRequest.Method(method.uppercased()) else { throw ValidationError("-X: \(method) is not an HTTP method") }
            request.method = parsed
        }
        if let retry { request.retry = (request.retry ?? retryPolicy).with { $0.maximumAttempts = retry } }
        if offline { request.storePolicy = .offline }
        if let explicitBody = try BodyArguments.body(body, json: json, form: form) { request.body = explicitBody }
    }
}

extension CallCommand {
    /// The body to `--output`, exactly as received, or to standard output.
    private func emit(_ response: Response) throws(APIError) {
        guard let output else {
            ResponsePrinter.printBody(response, output: display)
            return
        }
        do {
            try response.body.write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw APIError(.storage, "--output: \(output) cannot be written", underlyingError: error)
        }
    }

    /// Prints the body as the validation and `--fail` choices say, and throws what the exit
    /// status reports.
    func show(_ response: Response) throws(APIError) {
        do {
            try response.validate()
        } catch {
            let statusFailure = error.code == .unacceptableStatus || error.code == .envelope
            switch (statusFailure, failMode) {
            case (true, .noFail):
                try emit(response)
                return
            case (true, .failWithBody):
                try emit(response)
            case (true, .fail):
                break
            case (false, _):
                // Not what the API declares: shown only when asked for with --include.
                if include { try emit(response) }
            }
            throw error
        }
        try emit(response)
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the APIs of a definitions file with their method and URL."
    )

    @Option(
        name: [.customShort("D"), .long],
        help: "The definitions file (.json, .plist, .yaml or .yml). Default: $CALLSIGN_DEFINITIONS, else callsign.yaml or callsign.json here.")
    var definitions: String?

    @Option(name: .customLong("base-url"), help: "Replace the DEFAULT definition's base URL.")
    var baseURL: String?

    func run() async throws {
        try await reportingErrors {
            let loaded = try DefinitionsArgument.load(definitions, baseURL: baseURL)
            var rows: [(name: String, method: String, url: String)] = []
            for name in loaded.names {
                let definition = try loaded.definition(named: name)
                rows.append(
                    (name, (definition.method ?? .get).rawValue, definition.urlTemplate() ?? "(no base URL) \(definition.path ?? "")"))
            }
            let nameWidth = max(4, rows.map(\.name.count).max() ?? 0)
            let methodWidth = max(6, rows.map(\.method.count).max() ?? 0)
            func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
            Terminal.out("\(pad("NAME", nameWidth))  \(pad("METHOD", methodWidth))  URL")
            for row in rows { Terminal.out("\(pad(row.name, nameWidth))  \(pad(row.method, methodWidth))  \(row.url)") }
            for warning in loaded.warnings { Terminal.error("warning: \(warning)") }
        }
    }
}
