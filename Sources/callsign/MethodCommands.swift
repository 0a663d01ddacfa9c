import ArgumentParser
import Callsign
import Foundation
import HTTPTypes

/// `callsign get|post|put|patch|delete|head URL items…`: one command, its method a type parameter.
/// It takes, besides the shared options, the URL, HTTPie-style items, and an optional definitions
/// file whose DEFAULT (base URL, headers, authentication) applies.
struct MethodCommand<Method: AdHocMethod>: AsyncParsableCommand {
    static var configuration: CommandConfiguration { adHocConfiguration(Method.method, example: Method.example) }

    @Argument(help: .localized("An http(s) URL; without a scheme, a path under the definitions' base URL, else http://."))
    var url: String

    @OptionGroup var items: ItemArguments

    @Option(
        name: [.customShort("D"), .long],
        help: .localized("A definitions file whose DEFAULT (base URL, headers, authentication) applies. Default: $CALLSIGN_DEFINITIONS, else callsign.yaml or callsign.json here, if any."))
    var definitions: String?

    @OptionGroup var exchange: ExchangeOptions

    /// Builds the request from the URL and items over the DEFAULT definition, and sends it
    /// through the same client path as `callsign call`.
    func run() async throws {
        let method = Method.method
        try await reportingErrors {
            let choice = DefinitionsArgument.choice(definitions)
            if let choice { DefinitionsArgument.announce(choice, quiet: exchange.quiet) }
            let file = try choice.map { choice throws(APIError) in try DefinitionsArgument.loaded(choice.path, baseURL: nil) }
            var loaded = file?.definitions
            let defaults = loaded?.defaultDefinition ?? APIDefinition()
            let items = try self.items.parsed(form: exchange.input.formItems)
            let target = try AdHocCall.target(url, base: defaults.baseURL)
            try DefinitionsArgument.checkCredentials(exchange.clientOptions.credentials, choice: choice, typedOrigin: AdHocCall.isAbsolute(target))
            // A file found, not named, lends its base URL and headers, never its hosts' trust.
            if let choice, var distrusted = loaded {
                DefinitionsArgument.distrust(&distrusted, choice: choice, quiet: exchange.quiet)
                loaded = distrusted
            }
            var definition = APIDefinition(path: target, method: method)
            // Parameters go where the method puts them (the query for GET, HEAD and DELETE, a
            // JSON body otherwise), as in the library's Request.get/post.
            if [.post, .put, .patch].contains(method) { definition.contentType = .json }
            definition = definition.merged(over: defaults)
            var request = definition.request(parameters: items.parameters, headers: items.headers)
            items.addQuery(to: &request)
            // `head` prints the response head: a HEAD answer has nothing else to show.
            var exchange = exchange
            if method == .head { exchange.include = true }
            try await exchange.perform(
                request, definitions: loaded ?? APIDefinitions(), openAPI: file?.openAPI, files: items.files, itemHeaders: items.headers)
        }
    }
}

/// How an ad-hoc command reads the URL it is given.
enum AdHocCall {
    /// The URL to call: absolute as given, a path under the definitions' base URL, or
    /// `http://` + the text (as curl and HTTPie read `example.com/x`); `:8080/x` is localhost.
    /// Text that looks like a host (see ``looksLikeHost(_:)``) is always a host, never a path
    /// under a base URL: `127.0.0.1:8080/x` goes to 127.0.0.1, whatever file lies in the folder.
    static func target(_ text: String, base: URL?) throws(APIError) -> String {
        let lowered = text.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") { return text }
        if text.contains("://") { throw cliError(.invalidRequest, "\(text): only http and https URLs can be called") }
        if text.hasPrefix(":") { return "http://localhost" + text }
        if looksLikeHost(text) { return "http://" + text }
        if base != nil { return text }
        guard !text.isEmpty, !text.hasPrefix("/") else {
            throw cliError(.invalidRequest, "\(text) is a path, and no definitions file gives a base URL: give a full URL")
        }
        return "http://" + text
    }
}

extension AdHocCall {
    /// Whether `target` is an absolute http(s) URL.
    static func isAbsolute(_ target: String) -> Bool {
        let lowered = target.lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    }

    /// Whether the text before the first `/`, `?` or `#` names a host: `host:port`,
    /// `localhost`, a bracketed IPv6 literal, or a dotted name (`example.com`, `bücher.test`, `127.0.0.1`) —
    /// as curl and HTTPie read them. Such an argument is always a host, never a path under a
    /// definitions file's base URL.
    static func looksLikeHost(_ text: String) -> Bool {
        let authority = text.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty else { return false }
        if authority.hasPrefix("[") { return true }  // [::1]:8080
        var host = authority
        if let colon = authority.lastIndex(of: ":") {
            let port = authority[authority.index(after: colon)...]
            guard !port.isEmpty, port.allSatisfy(\.isASCIIDigit) else { return false }
            host = authority[..<colon]
            return !host.isEmpty && !host.contains(":")
        }
        if host.lowercased() == "localhost" { return true }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2
            && labels.allSatisfy { label in !label.isEmpty && label.allSatisfy { $0.isHostNameCharacter || $0 == "-" } }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
    /// A letter or digit of a host name in any script (`bücher.test` is a host: it is sent as
    /// `xn--bcher-kva.test`).
    fileprivate var isHostNameCharacter: Bool { isLetter || isNumber }
}

/// The ad-hoc commands' help: one text, the method's name in it.
private func adHocConfiguration(_ method: HTTPRequest.Method, example: String) -> CommandConfiguration {
    CommandConfiguration(
        commandName: method.rawValue.lowercased(),
        abstract: localized("Send a \(method.rawValue) request to a URL; no definitions file needed."),
        discussion: localized("""
            Examples:
              \(example)

            Items: key=value and key:=json are parameters (in the query for GET, HEAD and DELETE, in a JSON \
            body otherwise); key==value always goes into the query; Name:value is a header. Nothing typed is \
            dropped or reordered, as in HTTPie: key==value items are sent in the order typed, a repeated one \
            once per item (a==1 a==2 sends ?a=1&a=2); a repeated key=value becomes a JSON array \
            ({"a":["1","2"]}); a header given both as an item and with -H is sent twice, the item's first. The call takes \
            the same path as `callsign call`: retry, deadline, credentials, cache, HAR recording and mocks \
            all apply, and a definitions file found as `call` finds one lends its DEFAULT (base URL, headers, \
            authentication). --user and --bearer are sent to the URL you name.
            """))
}

/// One ad-hoc command per method, each a row of data: `callsign get`, `post`, `put`, `patch`,
/// `delete` and `head` are ``MethodCommand``s of these.
protocol AdHocMethod: SendableMetatype {
    static var method: HTTPRequest.Method { get }
    /// The example the command's help shows.
    static var example: String { get }
}

enum GetMethod: AdHocMethod { static let method = HTTPRequest.Method.get, example = "callsign get https://api.example.com/users q==swift per_page==5" }
enum PostMethod: AdHocMethod { static let method = HTTPRequest.Method.post, example = "callsign post https://api.example.com/users name=Ada admin:=true" }
enum PutMethod: AdHocMethod { static let method = HTTPRequest.Method.put, example = "callsign put https://api.example.com/users/1 --json '{\"name\":\"Ada\"}'" }
enum PatchMethod: AdHocMethod { static let method = HTTPRequest.Method.patch, example = "callsign patch https://api.example.com/users/1 name=Grace" }
enum DeleteMethod: AdHocMethod { static let method = HTTPRequest.Method.delete, example = "callsign delete https://api.example.com/users/1 --bearer-env API_TOKEN" }
enum HeadMethod: AdHocMethod { static let method = HTTPRequest.Method.head, example = "callsign head https://api.example.com/health" }

/// The items after `call`'s API name and an ad-hoc command's URL: one declaration for both.
struct ItemArguments: ParsableArguments {
    @Argument(help: .localized("Items, as HTTPie writes them: key=value (a string parameter), key:=json (a JSON value), key==value (a query parameter), Name:value (a header).", valueName: "item"))
    var items: [String] = []

    /// The items read; with `form`, `key=value` items are form fields (`--form`).
    func parsed(form: Bool) throws(APIError) -> AdHocItems {
        try AdHocItems(parsing: items, form: form)
    }
}
