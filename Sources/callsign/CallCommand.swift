import ArgumentParser
import Callsign
import Foundation

struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: localized("Call an API by name and print its answer."),
        discussion: localized("""
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
            """)
    )

    @Argument(help: .localized("The API name, as defined in the definitions file."))
    var name: String

    @Option(
        name: [.customShort("D"), .long],
        help: .localized("The definitions file (.json, .plist, .yaml or .yml). Default: $CALLSIGN_DEFINITIONS, else callsign.yaml or callsign.json here."))
    var definitions: String?

    @Option(name: [.customShort("p"), .customLong("param")], help: .localized("A parameter: key=value or key:=json. Repeatable."))
    var parameters: [String] = []

    @Option(name: .customLong("base-url"), help: .localized("Replace the DEFAULT definition's base URL."))
    var baseURL: String?

    @OptionGroup var exchange: ExchangeOptions

    func run() async throws {
        try await reportingErrors {
            let definitions = try DefinitionsArgument.load(self.definitions, baseURL: baseURL)
            let request = try definitions.definition(named: name).request(parameters: try ParameterArguments.parse(parameters))
            try await exchange.perform(request, definitions: definitions)
        }
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: localized("List the APIs of a definitions file with their method and URL.")
    )

    @Option(
        name: [.customShort("D"), .long],
        help: .localized("The definitions file (.json, .plist, .yaml or .yml). Default: $CALLSIGN_DEFINITIONS, else callsign.yaml or callsign.json here."))
    var definitions: String?

    @Option(name: .customLong("base-url"), help: .localized("Replace the DEFAULT definition's base URL."))
    var baseURL: String?

    func run() async throws {
        try await reportingErrors {
            let loaded = try DefinitionsArgument.load(definitions, baseURL: baseURL)
            var rows: [(name: String, method: String, url: String)] = []
            for name in loaded.names {
                let definition = try loaded.definition(named: name)
                rows.append(
                    (name, (definition.method ?? .get).rawValue, definition.urlTemplate() ?? localized("(no base URL) \(definition.path ?? "")")))
            }
            let nameWidth = max(4, rows.map(\.name.count).max() ?? 0)
            let methodWidth = max(6, rows.map(\.method.count).max() ?? 0)
            func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
            Terminal.out("\(pad("NAME", nameWidth))  \(pad("METHOD", methodWidth))  URL")
            for row in rows { Terminal.out("\(pad(row.name, nameWidth))  \(pad(row.method, methodWidth))  \(row.url)") }
            for warning in loaded.warnings { Terminal.error(localized("warning: \(warning)")) }
        }
    }
}
