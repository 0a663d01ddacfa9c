import ArgumentParser
import Callsign
import Foundation

struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Call an API by name and print its answer.",
        discussion: """
            Examples:
              callsign call UserProfile --definitions api.yaml -p user_id=42
              callsign call TopicList -d api.json -p page:=2 --include
            -p key=value sends a string; -p key:=json sends a JSON value (a number, true, [1,2], …).
            --user USER:PASSWORD or --bearer TOKEN send credentials; otherwise a definitions file may name
            environment variables that hold them (DEFAULT: authentication: {scheme: bearer, tokenEnvironment: API_TOKEN}).
            JSON answers are pretty-printed. Exit status: 0 on success, 1 on any error (one line on stderr).
            """
    )

    @Argument(help: "The API name, as defined in the definitions file.")
    var name: String

    @Option(name: [.short, .long], help: "The definitions file (.json, .plist, .yaml or .yml).")
    var definitions: String

    @Option(name: [.customShort("p"), .customLong("param")], help: "A parameter: key=value or key:=json. Repeatable.")
    var parameters: [String] = []

    @Option(name: [.customShort("H"), .customLong("header")], help: "A header: 'Name: value'. Repeatable.")
    var headers: [String] = []

    @Option(name: .customLong("base-url"), help: "Replace the DEFAULT definition's base URL.")
    var baseURL: String?

    @Option(name: [.short, .long], help: "HTTP basic credentials: USER:PASSWORD.")
    var user: String?

    @Option(help: "A bearer token.")
    var bearer: String?

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

    func run() async throws {
        try await reportingErrors {
            let definitions = try DefinitionsArgument.load(self.definitions, baseURL: baseURL)
            var configuration = APIClient.Configuration()
            if let timeout {
                guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be more than 0") }
                configuration.timeout = .milliseconds(Int64(timeout * 1000))
            }
            if let deadline {
                guard deadline > 0, deadline.isFinite else { throw ValidationError("--deadline must be more than 0") }
                configuration.deadline = .milliseconds(Int64(deadline * 1000))
            }
            if let retry {
                guard (1...100).contains(retry) else { throw ValidationError("--retry takes 1 to 100 attempts") }
            }
            if verbose { AttemptPrinter.install(in: &configuration) }
            let explicit = try explicitAuthentication()
            configuration.authentication = try explicit ?? definitions.authenticationSource?.authentication()
            if let har { configuration.insert(HARRecorder(fileURL: URL(fileURLWithPath: har)), before: .transport) }
            let client = APIClient(
                definitions: definitions, configuration: configuration, transport: try mock.map { try MockArgument.transport($0, definitions: definitions) })
            let definition = try definitions.definition(named: name)
            var request = definition.request(
                parameters: try ParameterArguments.parse(parameters), headers: try ParameterArguments.headers(headers))
            // Credentials given on the command line are meant to be sent, whatever the definition says.
            if explicit != nil { request.needsAuthorization = true }
            if let retry { request.retry = (request.retry ?? configuration.retry).with { $0.maximumAttempts = retry } }
            let response = try await client.send(request)
            if include { ResponsePrinter.printHead(response) }
            do {
                try response.validate()
            } catch {
                if !include { ResponsePrinter.printBody(response) }
                throw error
            }
            ResponsePrinter.printBody(response)
        }
    }

    private func explicitAuthentication() throws -> Authentication? {
        switch (user, bearer) {
        case (.some, .some):
            throw ValidationError("give --user or --bearer, not both")
        case (let user?, nil):
            guard let colon = user.firstIndex(of: ":") else { throw ValidationError("--user takes USER:PASSWORD") }
            return .basic(username: String(user[..<colon]), password: String(user[user.index(after: colon)...]))
        case (nil, let token?):
            return .bearer(token)
        case (nil, nil):
            return nil
        }
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the APIs of a definitions file with their method and URL."
    )

    @Option(name: [.short, .long], help: "The definitions file (.json, .plist, .yaml or .yml).")
    var definitions: String

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
