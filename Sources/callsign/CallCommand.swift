import ArgumentParser
import Callsign
import CallsignOpenAPI
import Foundation

struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: localized("Call an API by name and print its answer."),
        discussion: localized("""
            Examples:
              callsign call UserProfile --definitions api.yaml -p user_id=42
              callsign call TopicList -D api.json -p page:=2 --include
              callsign call CreateTopic -D api.json title=Hello tags:='["a"]' X-Trace:1

            Items as HTTPie writes them (key=value, key:=json, key==value, Name:value), or -p key=value and \
            -p key:=json, send parameters; piped standard input is the body when nothing else gives one. \
            --user USER:PASSWORD or --bearer TOKEN send credentials; otherwise a definitions file may name \
            environment variables that hold them (DEFAULT: authentication: {scheme: bearer, tokenEnvironment: API_TOKEN}). \
            With an OpenAPI document, --api-key KEY is sent as its apiKey security scheme (header, query or \
            cookie), and --security-scheme NAME chooses the scheme for --api-key, --bearer or --user.

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

    @OptionGroup var items: ItemArguments

    @OptionGroup var file: DefinitionsFileOption

    @Option(name: [.customShort("p"), .customLong("param")], help: .localized("A parameter: key=value or key:=json. Repeatable."))
    var parameters: [String] = []

    @Option(name: .customLong("base-url"), help: .localized("Replace the DEFAULT definition's base URL."))
    var baseURL: String?

    @OptionGroup var exchange: ExchangeOptions

    func run() async throws {
        try await reportingErrors {
            guard let choice = DefinitionsArgument.choice(file.definitions) else {
                _ = try DefinitionsArgument.path(nil)  // throws: no definitions file
                return
            }
            DefinitionsArgument.announce(choice, quiet: exchange.quiet)
            // A --base-url is typed: credentials may go there, whichever file lends the rest.
            try DefinitionsArgument.checkCredentials(exchange.clientOptions.credentials, choice: choice, typedOrigin: baseURL != nil)
            var loaded = try DefinitionsArgument.loaded(choice.path, baseURL: baseURL, strict: file.strict)
            // A file found, not named, lends its definitions, never its hosts' trust: credentials
            // go to the --base-url typed, nowhere else it names.
            DefinitionsArgument.distrust(&loaded.definitions, choice: choice, quiet: exchange.quiet)
            let typed = baseURL.flatMap { URL(string: $0) }.map { [$0] } ?? []
            let items = try self.items.parsed(form: exchange.input.formItems)
            let request = try self.request(from: loaded, items: items)
            try await exchange.perform(
                request, definitions: loaded.definitions, openAPI: loaded.openAPI, typedOrigins: typed, files: items.files,
                itemHeaders: items.headers)
        }
    }
}

extension CallCommand {
    /// The request the named definition (or OpenAPI operation) makes with the parameters and
    /// items given: what `perform` then limits and sends.
    func request(from loaded: DefinitionsArgument.Loaded, items: AdHocItems) throws(APIError) -> Request {
        // Items and -p parameters alike; an item given after a -p of the same key wins.
        let given = try ParameterArguments.parse(parameters).merging(items.parameters) { _, item in item }
        // An OpenAPI operation places and checks its parameters as its document says.
        var request =
            if let operations = loaded.openAPI { try operations.request(name, parameters: given) }
            else { try loaded.definitions.definition(named: name).request(parameters: given) }
        items.addQuery(to: &request)
        request.headers = request.headers.merging(items.headers)
        return request
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: localized("List the APIs of a definitions file with their method and URL.")
    )

    @OptionGroup var file: DefinitionsFileOption

    @Option(name: .customLong("base-url"), help: .localized("Replace the DEFAULT definition's base URL."))
    var baseURL: String?

    @OptionGroup var config: ConfigFileOption

    func run() async throws {
        try await reportingErrors {
            let document = try DefinitionsArgument.loaded(file.definitions, baseURL: baseURL, strict: file.strict)
            let loaded = document.definitions
            if let operations = document.openAPI {
                printOperations(operations)
                return
            }
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

    /// An OpenAPI document's operations: name, method, path and summary.
    private func printOperations(_ operations: OpenAPIOperations) {
        let nameWidth = max(9, operations.operations.map(\.name.count).max() ?? 0)
        let methodWidth = max(6, operations.operations.map(\.method.count).max() ?? 0)
        let pathWidth = max(4, operations.operations.map(\.path.count).max() ?? 0)
        func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
        Terminal.out("\(pad("OPERATION", nameWidth))  \(pad("METHOD", methodWidth))  \(pad("PATH", pathWidth))  SUMMARY")
        for operation in operations.operations {
            Terminal.out("\(pad(operation.name, nameWidth))  \(pad(operation.method, methodWidth))  \(pad(operation.path, pathWidth))  \(operation.summary ?? "")")
        }
        for warning in operations.warnings { Terminal.error(localized("warning: \(warning)")) }
    }
}

/// `callsign describe NAME`: what an OpenAPI operation takes.
struct DescribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "describe",
        abstract: localized("Print an OpenAPI operation's parameters and request body schema."),
        discussion: localized("""
            Examples:
              callsign describe showPetById -D petstore.yaml
              callsign describe createPet -D petstore.yaml --json | jq .parameters

            One line per parameter: its name, where it goes, its type, whether it is required and \
            the values it may take; then the request body's media type and schema, indented. \
            --json prints the same as one JSON object, for scripts.
            """))

    @Argument(help: .localized("The operation, by operationId."))
    var name: String

    @OptionGroup var file: DefinitionsFileOption

    @Flag(help: .localized("Print the operation as JSON."))
    var json = false

    @OptionGroup var config: ConfigFileOption

    func run() async throws {
        try await reportingErrors {
            guard let operations = try DefinitionsArgument.loaded(file.definitions, baseURL: nil, strict: file.strict).openAPI else {
                throw cliError(.invalidDefinition, "describe reads OpenAPI documents; this definitions file is not one")
            }
            let operation = try operations.operation(named: name)
            if json {
                // Line by line: each is made safe for a terminal like any text from a document.
                let text = String(decoding: Self.json(operation).jsonData(prettyPrinted: true), as: UTF8.self)
                for line in text.split(separator: "\n") { Terminal.out(String(line)) }
                return
            }
            Terminal.out("\(operation.name): \(operation.method) \(operation.path)\(operation.needsAuthorization ? localized(" (needs authorization)") : "")")
            if let summary = operation.summary { Terminal.out("  \(summary)") }
            if !operation.parameters.isEmpty {
                Terminal.out(localized("Parameters:"))
                let width = operation.parameters.map(\.name.count).max() ?? 0
                for parameter in operation.parameters {
                    var line = "  " + parameter.name + String(repeating: " ", count: max(0, width - parameter.name.count))
                    line += "  \(parameter.location.rawValue)  \(parameter.type ?? "any")"
                    if parameter.required { line += localized(", required") }
                    if let allowed = parameter.allowedValues { line += localized(", one of \(allowed.joined(separator: " | "))") }
                    if let summary = parameter.summary { line += "  — \(summary)" }
                    Terminal.out(line)
                }
            }
            if let type = operation.bodyContentType {
                Terminal.out(localized("Body: \(type)") + (operation.bodyRequired ? localized(", required") : ""))
                if let schema = operation.bodySchema { Self.printSchema(schema) }
            }
            if !operation.responses.isEmpty {
                Terminal.out(localized("Responses:"))
                for response in operation.responses {
                    Terminal.out("  \(response.status)  \(response.contentType ?? "-")\(response.summary.map { "  — " + $0 } ?? "")")
                    if let schema = response.schema { Self.printSchema(schema, indent: "    ") }
                }
            }
            switch operation.eventStream {
            case .only?: Terminal.out(localized("Answers with server-sent events: callsign call prints each event's data as it arrives."))
            case .optional?: Terminal.out(localized("Answers with server-sent events when asked: callsign call --stream prints each event's data as it arrives."))
            case nil: break
            }
        }
    }

    /// A schema, indented under what it belongs to.
    private static func printSchema(_ schema: String, indent: String = "  ") {
        let text = JSONText.prettyPrinted(Data(schema.utf8)).flatMap { String(data: $0, encoding: .utf8) } ?? schema
        for line in text.split(separator: "\n") { Terminal.out(indent + line) }
    }

    /// The operation as one JSON object: what `--json` prints.
    static func json(_ operation: OpenAPIOperations.Operation) -> JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(operation.name), "method": .string(operation.method), "path": .string(operation.path),
            "needsAuthorization": .bool(operation.needsAuthorization),
            "parameters": .array(operation.parameters.map { parameter in
                var entry: [String: JSONValue] = [
                    "name": .string(parameter.name), "in": .string(parameter.location.rawValue), "required": .bool(parameter.required),
                    "style": .string(parameter.style), "explode": .bool(parameter.explode),
                ]
                entry["type"] = parameter.type.map(JSONValue.string)
                entry["enum"] = parameter.allowedValues.map { .array($0.map(JSONValue.string)) }
                entry["summary"] = parameter.summary.map(JSONValue.string)
                return .object(entry)
            }),
        ]
        object["summary"] = operation.summary.map(JSONValue.string)
        object["eventStream"] = operation.eventStream.map { .string($0.rawValue) }
        object["responses"] = .array(operation.responses.map { response in
            var entry: [String: JSONValue] = ["status": .string(response.status)]
            entry["summary"] = response.summary.map(JSONValue.string)
            entry["contentType"] = response.contentType.map(JSONValue.string)
            entry["schema"] = response.schema.flatMap { try? JSONValue(parsing: Data($0.utf8)) }
            return .object(entry)
        })
        if let type = operation.bodyContentType {
            var body: [String: JSONValue] = ["contentType": .string(type), "required": .bool(operation.bodyRequired)]
            body["schema"] = operation.bodySchema.flatMap { try? JSONValue(parsing: Data($0.utf8)) }
            object["body"] = .object(body)
        }
        return .object(object)
    }
}

/// `-D/--definitions FILE`: the definitions file (or OpenAPI document) of `call`, `list` and `describe`.
struct DefinitionsFileOption: ParsableArguments {
    @Option(
        name: [.customShort("D"), .long],
        help: .localized("The definitions file (.json, .plist, .yaml or .yml). Default: $CALLSIGN_DEFINITIONS, else callsign.yaml or callsign.json here."))
    var definitions: String?

    @Flag(
        help: .localized(
            "Refuse an OpenAPI document that strays from the specification, listing every problem, instead of repairing what it can and leaving out what it cannot."))
    var strict = false
}
