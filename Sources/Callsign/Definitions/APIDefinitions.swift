public import Foundation

/// A set of API definitions: a `DEFAULT` definition plus named ones (RFAPI's define manager).
///
/// Load them from a file — RFAPI's own `APIDefine.plist` / JSON files load unchanged — or build
/// them in code:
///
/// ```swift
/// let definitions = try APIDefinitions(contentsOf: URL(fileURLWithPath: "api.yaml"))
/// let client = APIClient(definitions: definitions)
/// let topics = try await client.call("TopicListRecommended", parameters: ["page": 1], as: [Topic].self)
/// ```
///
/// A file is a dictionary from API name to its fields; `DEFAULT` holds the default definition:
///
/// ```yaml
/// DEFAULT:
///   baseURL: https://example.com/
///   pathPrefix: api/v2/
///   needsAuthorization: true
/// UserProfile:
///   path: user/{user_id}/profile
///   responseType: object
/// ```
///
/// Keys may be RFAPI's (`Base`, `Path Prefix`, `Path`, `Method`, `Headers`, `Parameters`,
/// `Authorization`, `Serializer`, `Response Type`, `Response Class`, `Response Accept Null`,
/// `User Info`, `Notes`) or camelCase (`baseURL`, `pathPrefix`, `path`, `method`, `headers`,
/// `parameters`, `needsAuthorization`, `contentType`, `responseType`, `responseClass`, `errorClass`,
/// `acceptsNullResponse`, `acceptedStatusCodes`, `timeout`, `tag`, `envelope`, `userInfo`,
/// `notes`, `pagination`). A malformed file, an unknown key, a value of the wrong type, an unbalanced
/// template brace or an unknown method fails the load with an ``APIError``
/// (``APIError/Code/invalidDefinition``) that names the API, the key and, where the parser knows
/// it, the line.
public struct APIDefinitions: Sendable {
    /// The name of the default definition in a file.
    public static let defaultName = "DEFAULT"

    /// The default definition, merged under every named one.
    public var defaultDefinition: APIDefinition {
        didSet { mergeAll() }
    }
    /// The named definitions as written (not merged).
    public private(set) var definitions: [String: APIDefinition]
    /// Each named definition merged over the default, kept up to date with both: a call by name
    /// looks its definition up here instead of merging it again.
    private var mergedDefinitions: [String: APIDefinition] = [:]
    /// Things the load noticed that are not errors (for example RFAPI keys Callsign does not act
    /// on yet). Also logged by ``APIClient`` at `warning` level.
    /// In the process's language; ``APIClient/warnings`` has them in the client's.
    public var warnings: [String] { warningMessages.map(\.description) }
    /// The warnings before translation.
    var warningMessages: [LocalizedMessage] = []
    /// Whether the base URLs and absolute paths in these definitions are trusted origins, which
    /// may receive the client's credentials (``Authentication``). `true` for definitions built in
    /// code or loaded from a local file; `false` for definitions fetched from a server
    /// (``fetch(from:using:trustingOrigins:keepingCopyAt:expectedSHA256:)``) unless the caller says otherwise, so a
    /// definitions server cannot widen where credentials go.
    public var trustsItsOrigins: Bool = true

    /// The file formats definitions load from.
    public enum Format: String, Sendable, CaseIterable {
        case json, plist, yaml

        /// The format for a file extension (`json`, `plist`, `yaml`, `yml`), or `nil`.
        public init?(pathExtension: String) {
            switch pathExtension.lowercased() {
            case "json": self = .json
            case "plist": self = .plist
            case "yaml", "yml": self = .yaml
            default: return nil
            }
        }
    }

    /// No definitions at all: requests then need a full URL or a base URL in the configuration.
    public init() {
        defaultDefinition = APIDefinition()
        definitions = [:]
    }

    /// Definitions built in code. Every definition needs a unique name.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/invalidDefinition``) for a missing or repeated
    ///   name, a malformed path template, or a base URL whose path does not end in `/`.
    public init(default defaultDefinition: APIDefinition = APIDefinition(), _ definitions: [APIDefinition]) throws(APIError) {
        self.init()
        try Self.check(defaultDefinition, name: Self.defaultName, line: nil)
        self.defaultDefinition = defaultDefinition
        reserveCapacity(definitions.count)
        for definition in definitions { try add(definition) }  // add(_:) merges each
    }

    /// Loads definitions from a `.json`, `.plist`, `.yaml` or `.yml` file.
    ///
    /// - Parameters:
    ///   - url: The file.
    ///   - format: The format; `nil` picks it from the file's extension.
    ///   - limits: How deep and how large the file may expand (``Limits/maximumJSONDepth``,
    ///     ``Limits/maximumDefinitionNodes``). Default ``Limits/default``.
    /// - Throws: ``APIError`` (``APIError/Code/invalidDefinition``) when the file cannot be read,
    ///   is malformed, or is past a limit.
    public init(contentsOf url: URL, format: Format? = nil, limits: Limits = .default) throws(APIError) {
        guard let format = format ?? Format(pathExtension: url.pathExtension) else {
            throw APIError(
                .invalidDefinition,
                localized: "cannot tell the format of \"\(url.lastPathComponent)\": use a .json, .plist, .yaml or .yml file, or pass the format")
        }
        try self.init(data: Self.read(url, limits: limits), format: format, limits: limits)
    }

    /// The bytes of a definitions file: at most ``Limits/maximumDocumentSize``, through the one
    /// bounded door for files (a FIFO or `/dev/zero` fails without being read whole).
    package static func read(_ url: URL, limits: Limits) throws(APIError) -> Data {
        try FileReader.readDocument(url, limits: limits) { error in
            APIError(.invalidDefinition, localized: "the definitions file \"\(url.path)\" cannot be read", underlyingError: error)
        }
    }

    /// Loads definitions from the bytes of a file in the given format.
    ///
    /// - Parameters:
    ///   - data: The file's bytes.
    ///   - format: Their format.
    ///   - limits: How deep and how large the file may expand. Default ``Limits/default``.
    public init(data: Data, format: Format, limits: Limits = .default) throws(APIError) {
        let document = try DefinitionDocument(data: data, format: format, limits: limits)
        if document.root["openapi"]?.stringValue != nil {
            throw APIError(
                .invalidDefinition,
                localized: "this is an OpenAPI document: read it with OpenAPIOperations (import CallsignOpenAPI), whose definitions are these APIs")
        }
        try self.init(document: document)
    }

    /// Loads definitions from a dictionary shaped like a file: API name → fields.
    ///
    /// ```swift
    /// let definitions = try APIDefinitions(values: [
    ///     "DEFAULT": ["Base": "https://example.com/", "Method": "GET"],
    ///     "Topics": ["Path": "topics", "Response Type": 3],
    /// ])
    /// ```
    public init(values: [String: JSONValue]) throws(APIError) {
        try self.init(document: DefinitionDocument(root: values, lines: [:]))
    }

    /// Loads definitions from a Foundation dictionary, as `PropertyListSerialization` or
    /// `JSONSerialization` return it.
    public init(dictionary: [String: Any]) throws(APIError) {
        var values: [String: JSONValue] = [:]
        for (name, value) in dictionary {
            guard let converted = JSONValue(foundationValue: value) else {
                throw APIError(
                    .invalidDefinition, localized: "definition \"\(name)\": holds a value that is not a string, number, Boolean, array or dictionary")
            }
            values[name] = converted
        }
        try self.init(values: values)
    }

    package init(document: DefinitionDocument) throws(APIError) {
        self.init()
        let parser = DefinitionParser(document: document)
        let parsed = try parser.parse()
        defaultDefinition = parsed.defaultDefinition
        definitions = parsed.definitions
        mergeAll()
        warningMessages = parsed.warnings
    }

    /// Where the definitions say credentials come from (the `DEFAULT` definition's
    /// `authentication`), if they say. Turn it into credentials with
    /// ``AuthenticationSource/authentication(environment:)``.
    public var authenticationSource: AuthenticationSource? { defaultDefinition.authentication }

    /// The names of the named definitions, sorted.
    public var names: [String] { definitions.keys.sorted() }

    /// The named definition merged over the default, or `nil` if there is none by that name.
    public subscript(name: String) -> APIDefinition? {
        mergedDefinitions[name]
    }

    /// The named definition merged over the default.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/unknownAPI``) naming near matches when the name
    ///   is not defined.
    public func definition(named name: String) throws(APIError) -> APIDefinition {
        if let definition = self[name] { return definition }
        throw unknownAPI(name)
    }

    /// Out of line, so callers' async frames stay small.
    @inline(never)
    private func unknownAPI(_ name: String) -> APIError {
        let suggestions = NearMatch.suggestions(for: name, among: Array(definitions.keys))
        var error = APIError(
            .unknownAPI,
            localized: !suggestions.isEmpty
                ? "no API is defined with the name \"\(name)\"; did you mean \(NearMatch.alternatives(suggestions))?"
                : definitions.isEmpty
                    ? "no API is defined with the name \"\(name)\" (no APIs are defined)" : "no API is defined with the name \"\(name)\"")
        error.apiName = name
        return error
    }

    /// Adds or replaces a named definition.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/invalidDefinition``) if it has no name, a
    ///   malformed template or a base URL whose path does not end in `/`.
    public mutating func add(_ definition: APIDefinition) throws(APIError) {
        guard let name = definition.name, !name.isEmpty, name != Self.defaultName else {
            throw APIError(.invalidDefinition, localized: "a definition needs a name other than \"\(Self.defaultName)\"")
        }
        try Self.check(definition, name: name, line: nil)
        definitions[name] = definition
        mergedDefinitions[name] = definition.merged(over: defaultDefinition)
    }

    /// Makes room for `count` definitions at once, so that a large table (an OpenAPI document's
    /// operations) is not grown step by step with the old and the new storage alive together.
    package mutating func reserveCapacity(_ count: Int) {
        definitions.reserveCapacity(count)
        mergedDefinitions.reserveCapacity(count)
    }

    /// Merges every named definition over the default again (the default changed).
    private mutating func mergeAll() {
        mergedDefinitions = definitions.mapValues { $0.merged(over: defaultDefinition) }
    }

    /// Checks the parts of a definition that can be wrong even when every value has the right type.
    static func check(_ definition: APIDefinition, name: String, line: Int?) throws(APIError) {
        if let baseURL = definition.baseURL {
            if let problem = BaseURLRule.problem(with: baseURL) {
                throw DefinitionParser.error(name, key: "baseURL", line: line, localized: problem)
            }
        }
        for (key, text) in [("pathPrefix", definition.pathPrefix), ("path", definition.path)] {
            guard let text else { continue }
            do {
                _ = try PathTemplate(parsing: text)
            } catch {
                throw DefinitionParser.error(name, key: key, line: line, localized: "the template \"\(text)\" has \(error.reason)")
            }
        }
    }
}

/// The rule every base URL must follow.
enum BaseURLRule {
    /// Why a base URL is unusable, or `nil` if it is fine.
    static func problem(with url: URL) -> LocalizedMessage? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            URLScheme.isSupported(components.scheme) || WebSocketScheme.isWebSocket(components.scheme)
        else {
            return "the base URL \"\(url.absoluteString)\" must start with http://, https://, http+unix://, ws:// or wss://" as LocalizedMessage
        }
        do {
            _ = try HostName.wireForm(of: components, described: url.absoluteString)
        } catch {
            return error.text
        }
        if components.query != nil || components.fragment != nil {
            return "the base URL \"\(url.absoluteString)\" must not have a query or a fragment" as LocalizedMessage
        }
        let path = components.percentEncodedPath
        if !path.isEmpty && !path.hasSuffix("/") {
            return "the base URL \"\(url.absoluteString)\" has a path that does not end in \"/\", so relative paths would replace its last segment; write \"\(url.absoluteString)/\"" as LocalizedMessage
        }
        return nil
    }
}

/// Finds names close to a misspelt one.
enum NearMatch {
    /// `"a"`, `"a" or "b"`, `"a" or "b" or "c"`.
    static func alternatives(_ names: [String]) -> LocalizedMessage {
        guard let first = names.first else { return LocalizedMessage(sentence: "") }
        return names.dropFirst().reduce(LocalizedMessage(sentence: "\"\(first)\"")) { list, name in
            "\(list) or \"\(name)\"" as LocalizedMessage
        }
    }

    static func suggestions(for name: String, among candidates: [String], limit: Int = 3) -> [String] {
        let lowered = name.lowercased()
        let scored = candidates.map { candidate -> (String, Int) in
            let other = candidate.lowercased()
            var distance = editDistance(lowered, other)
            if other.contains(lowered) || lowered.contains(other) { distance = min(distance, 1) }
            return (candidate, distance)
        }
        let threshold = max(2, name.count / 3)
        return scored.filter { $0.1 <= threshold }.sorted { ($0.1, $0.0) < ($1.1, $1.0) }.prefix(limit).map(\.0)
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = Array(repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

extension JSONValue {
    /// Converts a Foundation property-list or JSON object; `nil` for other types, and for dates
    /// and data unless `convertingDatesAndData` (then as `JSONDecoder`'s default strategies read
    /// them: seconds since 2001-01-01, Base64 text).
    init?(foundationValue value: Any, convertingDatesAndData: Bool = false) {
        // Exact Swift types first: on Apple platforms an NSNumber also casts to Bool and Int.
        if type(of: value) == Bool.self, let bool = value as? Bool {
            self = .bool(bool)
            return
        }
        if type(of: value) == Int.self, let int = value as? Int {
            self = .int(int)
            return
        }
        if type(of: value) == Double.self, let double = value as? Double {
            self = .double(double)
            return
        }
        switch value {
        case is NSNull: self = .null
        case let string as String: self = .string(string)
        case let date as Date where convertingDatesAndData: self = .double(date.timeIntervalSinceReferenceDate)
        case let data as Data where convertingDatesAndData: self = .string(data.base64EncodedString())
        case let number as NSNumber:
            let objCType = String(cString: number.objCType)
            if objCType == "c" || objCType == "B" {
                self = .bool(number.boolValue)
            } else if objCType == "d" || objCType == "f" {
                self = .double(number.doubleValue)
            } else {
                self = .int(number.intValue)
            }
        case let array as [Any]:
            var result: [JSONValue] = []
            for element in array {
                guard let converted = JSONValue(foundationValue: element, convertingDatesAndData: convertingDatesAndData) else { return nil }
                result.append(converted)
            }
            self = .array(result)
        case let dictionary as [String: Any]:
            var result: [String: JSONValue] = [:]
            for (key, element) in dictionary {
                guard let converted = JSONValue(foundationValue: element, convertingDatesAndData: convertingDatesAndData) else { return nil }
                result[key] = converted
            }
            self = .object(result)
        default:
            return nil
        }
    }
}
