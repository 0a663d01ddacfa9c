import Foundation
import HTTPTypes

/// Reads definition fields from a ``DefinitionDocument``, accepting RFAPI's keys and camelCase.
struct DefinitionParser {
    let document: DefinitionDocument

    struct Result {
        var defaultDefinition = APIDefinition()
        var definitions: [String: APIDefinition] = [:]
        var warnings: [LocalizedMessage] = []
    }

    /// The fields a definition has, each with every spelling a file may use.
    enum Field: CaseIterable {
        case name, baseURL, pathPrefix, path, method, headers, parameters, needsAuthorization, contentType
        case responseType, responseClass, acceptsNullResponse, acceptedStatusCodes, timeout, tag, envelope
        case userInfo, notes, authentication, retry, deadline, mock
        case cachePolicy, expire, offlinePolicy, responseSerializer

        var spellings: [String] {
            switch self {
            case .name: ["Name", "name"]
            case .baseURL: ["Base", "baseURL", "baseUrl", "base"]
            case .pathPrefix: ["Path Prefix", "pathPrefix"]
            case .path: ["Path", "path"]
            case .method: ["Method", "method"]
            case .headers: ["Headers", "headers"]
            case .parameters: ["Parameters", "parameters"]
            case .needsAuthorization: ["Authorization", "needsAuthorization"]
            case .contentType: ["Serializer", "contentType", "Content Type"]
            case .responseType: ["Response Type", "responseType"]
            case .responseClass: ["Response Class", "responseClass"]
            case .acceptsNullResponse: ["Response Accept Null", "acceptsNullResponse"]
            case .acceptedStatusCodes: ["Accepted Status Codes", "acceptedStatusCodes"]
            case .timeout: ["Timeout", "timeout"]
            case .tag: ["Tag", "tag"]
            case .envelope: ["Envelope", "envelope"]
            case .userInfo: ["User Info", "userInfo"]
            case .notes: ["Notes", "notes"]
            case .authentication: ["authentication"]
            case .retry: ["retry"]
            case .deadline: ["deadline"]
            case .mock: ["mock", "Mock"]
            case .cachePolicy: ["Cache Policy", "cachePolicy", "cache"]
            case .expire: ["Expire", "expire"]
            case .offlinePolicy: ["Offline Policy", "offlinePolicy", "storePolicy"]
            case .responseSerializer: ["Response Serializer", "responseSerializer"]
            }
        }

        static let bySpelling: [String: Field] = {
            var table: [String: Field] = [:]
            for field in allCases { for spelling in field.spellings { table[spelling] = field } }
            return table
        }()
    }

    /// Near matches for a misspelt key, one spelling per field, in the style of the key
    /// (camelCase for a lower-case key, RFAPI's words otherwise).
    static func keySuggestions(for key: String) -> [String] {
        let prefersLower = key.first?.isLowercase ?? true
        var chosen: [Field: String] = [:]
        for spelling in NearMatch.suggestions(for: key, among: Array(Field.bySpelling.keys), limit: 8) {
            guard let field = Field.bySpelling[spelling] else { continue }
            if let existing = chosen[field], (existing.first?.isLowercase ?? false) == prefersLower { continue }
            chosen[field] = spelling
        }
        let order = NearMatch.suggestions(for: key, among: Array(chosen.values), limit: 2)
        return order
    }

    static func error(_ api: String, key: String?, line: Int?, localized problem: LocalizedMessage) -> APIError {
        let location: LocalizedMessage =
            switch (key, line) {
            case let (key?, line?): "definition \"\(api)\", key \"\(key)\" (line \(line))" as LocalizedMessage
            case let (key?, nil): "definition \"\(api)\", key \"\(key)\"" as LocalizedMessage
            case let (nil, line?): "definition \"\(api)\" (line \(line))" as LocalizedMessage
            case (nil, nil): "definition \"\(api)\"" as LocalizedMessage
            }
        var error = APIError(.invalidDefinition, localized: "\(location): \(problem)")
        error.apiName = api
        error.key = key
        error.line = line
        return error
    }

    func parse() throws(APIError) -> Result {
        var result = Result()
        // Sorted, so the first error reported does not depend on dictionary order.
        for name in document.root.keys.sorted() {
            guard let value = document.root[name] else { continue }
            let line = document.lines[name]?[""]
            guard case .object(let fields) = value else {
                throw Self.error(name, key: nil, line: line, localized: "must be a dictionary of fields, not \(value.kindName)")
            }
            var definition = try parseDefinition(name: name, fields: fields, warnings: &result.warnings)
            try APIDefinitions.check(definition, name: name, line: line)
            if name == APIDefinitions.defaultName {
                definition.name = nil
                result.defaultDefinition = definition
            } else {
                definition.name = name
                result.definitions[name] = definition
            }
        }
        return result
    }

    private func parseDefinition(name: String, fields: [String: JSONValue], warnings: inout [LocalizedMessage]) throws(APIError)
        -> APIDefinition
    {
        var definition = APIDefinition()
        var seen: [Field: String] = [:]
        for key in fields.keys.sorted() {
            guard let value = fields[key] else { continue }
            let line = document.lines[name]?[key]
            guard let field = Field.bySpelling[key] else {
                let suggestions = Self.keySuggestions(for: key)
                throw Self.error(
                    name, key: key, line: line,
                    localized: suggestions.isEmpty ? "unknown key" : "unknown key; did you mean \(NearMatch.alternatives(suggestions))?")
            }
            if let other = seen[field] {
                throw Self.error(name, key: key, line: line, localized: "says the same as \"\(other)\"; keep one of them")
            }
            seen[field] = key
            let reader = ValueReader(api: name, key: key, line: line, value: value)
            try read(field, reader: reader, into: &definition, warnings: &warnings)
        }
        return definition
    }

    /// Reads one field's value into the definition.
    private func read(_ field: Field, reader: ValueReader, into definition: inout APIDefinition, warnings: inout [LocalizedMessage]) throws(APIError) {
        switch field {
        case .name:
            _ = try reader.string()
        case .baseURL:
            let text = try reader.string()
            guard let url = URL(string: text) else { throw reader.error("\"\(text)\" is not a URL") }
            definition.baseURL = url
        case .pathPrefix:
            definition.pathPrefix = try reader.string()
        case .path:
            definition.path = try reader.string()
        case .method:
            definition.method = try reader.method()
        case .headers:
            definition.headers = try reader.headers()
        case .parameters:
            guard case .object(let parameters) = reader.value else {
                throw reader.error("must be a dictionary, not \(reader.value.kindName)")
            }
            definition.parameters = parameters
        case .needsAuthorization:
            definition.needsAuthorization = try reader.bool()
        case .contentType, .responseType:
            try readWord(field, reader: reader, into: &definition)
        case .cachePolicy where reader.value.stringValue != nil || reader.key.first?.isLowercase == true:
            try readWord(field, reader: reader, into: &definition)
        case .offlinePolicy where reader.value.stringValue != nil || reader.key.first?.isLowercase == true:
            try readWord(field, reader: reader, into: &definition)
        case .responseClass:
            definition.responseClass = try reader.string()
        case .acceptsNullResponse:
            definition.acceptsNullResponse = try reader.bool()
        case .acceptedStatusCodes:
            definition.acceptedStatusCodes = try reader.statusCodes()
        case .timeout:
            definition.timeout = try reader.seconds()
        case .tag:
            definition.tag = try reader.string()
        case .envelope:
            definition.usesEnvelope = try reader.bool()
        case .userInfo:
            guard case .object(let info) = reader.value else {
                throw reader.error("must be a dictionary, not \(reader.value.kindName)")
            }
            definition.userInfo = info
        case .notes:
            definition.notes = try reader.string()
        case .retry:
            definition.retry = try reader.retryPolicy()
        case .deadline:
            definition.deadline = try reader.seconds()
        case .mock:
            definition.mock = try reader.string()
        case .authentication:
            guard reader.api == APIDefinitions.defaultName else {
                throw reader.error("belongs in the DEFAULT definition: one client has one way to authenticate")
            }
            definition.authentication = try reader.authenticationSource()
        case .cachePolicy, .expire, .offlinePolicy, .responseSerializer:
            if field == .responseSerializer, let text = reader.value.stringValue, text.lowercased().contains("json") {
                break  // JSON responses are what Callsign decodes anyway.
            }
            definition.recognizedButUnused = (definition.recognizedButUnused ?? [:]).merging([reader.key: reader.value]) { $1 }
            warnings.append("definition \"\(reader.api)\": \"\(reader.key)\" is recognised but not acted on yet; it was kept as written" as LocalizedMessage)
        }

    }

    /// Reads a field whose value is one word from a fixed set (content, response and cache
    /// types, store policies).
    private func readWord(_ field: Field, reader: ValueReader, into definition: inout APIDefinition) throws(APIError) {
        switch field {
        case .contentType:
            definition.contentType = try reader.word(
                ContentType.init(name:), what: "a content type; use query, form, json, text, multipart or a media type such as application/xml")
        case .responseType:
            // RFAPI wrote response types as numbers.
            let number = reader.value.intValue.map { ValueReader(api: reader.api, key: reader.key, line: reader.line, value: .string(String($0))) }
            definition.responseType = try (number ?? reader).word(
                ResponseType.init(name:), what: "a response type; use void, object, objects or raw (or RFAPI's 0-3)")
        case .cachePolicy:
            definition.cachePolicy = try reader.word(
                CachePolicy.init(name:), what: "a cache policy; use \(CachePolicy.names.joined(separator: ", "))")
        case .offlinePolicy:
            definition.storePolicy = try reader.word(
                StorePolicy.init(name:), what: "a store policy; use \(StorePolicy.names.joined(separator: ", "))")
        default:
            break
        }
    }
}

/// Reads one value of a definitions file, producing errors that name the API, key and line.
private struct ValueReader {
    let api: String
    let key: String
    let line: Int?
    let value: JSONValue

    func error(_ problem: LocalizedMessage) -> APIError {
        DefinitionParser.error(api, key: key, line: line, localized: problem)
    }

    /// A word from a fixed set, read by `parse`; `what` names the set for the error.
    func word<Word>(_ parse: (String) -> Word?, what: LocalizedMessage) throws(APIError) -> Word {
        let text = try string()
        guard let word = parse(text) else { throw error("\"\(text)\" is not \(what)") }
        return word
    }

    func string() throws(APIError) -> String {
        guard case .string(let text) = value else { throw error("must be a string, not \(value.kindName)") }
        return text
    }

    func bool() throws(APIError) -> Bool {
        switch value {
        case .bool(let flag): return flag
        // Property lists written by hand sometimes hold 0/1 for Booleans.
        case .int(let number) where number == 0 || number == 1: return number == 1
        default: throw error("must be true or false, not \(value.kindName)")
        }
    }

    func seconds() throws(APIError) -> Duration {
        let seconds: Double
        switch value {
        case .int(let number): seconds = Double(number)
        case .double(let number): seconds = number
        default: throw error("must be a number of seconds, not \(value.kindName)")
        }
        guard seconds > 0, seconds.isFinite, seconds <= 86_400 else {
            throw error("must be more than 0 and at most 86400 seconds")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    static let knownMethods: [String] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "QUERY"]

    func method() throws(APIError) -> HTTPRequest.Method {
        let text = try string()
        let upper = text.uppercased()
        guard Self.knownMethods.contains(upper), let method = HTTPRequest.Method(upper) else {
            guard let near = NearMatch.suggestions(for: upper, among: Self.knownMethods, limit: 1).first else {
                throw error("\"\(text)\" is not an HTTP method")
            }
            throw error("\"\(text)\" is not an HTTP method; did you mean \"\(near)\"?")
        }
        return method
    }

    func headers() throws(APIError) -> Headers {
        guard case .object(let members) = value else { throw error("must be a dictionary, not \(value.kindName)") }
        var headers = Headers()
        for name in members.keys.sorted() {
            guard let member = members[name] else { continue }
            guard let text = member.scalarText, !member.isNull else {
                throw error("the value of header \"\(name)\" must be a string, not \(member.kindName)")
            }
            guard HTTPField.Name(name) != nil else {
                throw error("\"\(name.escapedForMessage)\" is not a valid header name")
            }
            guard HTTPField.isValidValue(text) else {
                throw error("the value of header \"\(name)\" contains CR, LF, NUL or another control character")
            }
            headers.add(name, text)
        }
        return headers
    }

    /// `retry: 3` (attempts), `retry: false` (none), or a dictionary with `attempts`, `baseDelay`,
    /// `maxDelay`, `statusCodes`, `idempotencyKey`, `transportErrors`, `jitter`.
    func retryPolicy() throws(APIError) -> RetryPolicy {
        switch value {
        case .int(let attempts) where attempts >= 1 && attempts <= 100:
            return RetryPolicy(maximumAttempts: attempts)
        case .bool(let enabled):
            return enabled ? .default : .none
        case .object(let members):
            var policy = RetryPolicy.default
            for key in members.keys.sorted() {
                guard let member = members[key] else { continue }
                let nested = ValueReader(api: api, key: "\(self.key).\(key)", line: line, value: member)
                switch key {
                case "attempts":
                    guard let attempts = member.intValue, (1...100).contains(attempts) else {
                        throw nested.error("must be a whole number from 1 to 100")
                    }
                    policy.maximumAttempts = attempts
                case "baseDelay": policy.baseDelay = try nested.seconds()
                case "maxDelay": policy.maximumDelay = try nested.seconds()
                case "maxRetryAfter": policy.maximumRetryAfter = try nested.seconds()
                case "statusCodes":
                    policy.retryableStatusCodes = Set(try nested.statusCodes().ranges.flatMap { Array($0) })
                case "idempotencyKey": policy.addsIdempotencyKey = try nested.bool()
                case "transportErrors": policy.retriesTransportErrors = try nested.bool()
                case "jitter":
                    guard let text = member.stringValue, text == "full" || text == "none" else {
                        throw nested.error("must be full or none")
                    }
                    policy.jitter = text == "full" ? .full : .none
                default:
                    throw nested.error(
                        "unknown; use attempts, baseDelay, maxDelay, maxRetryAfter, statusCodes, idempotencyKey, transportErrors, jitter")
                }
            }
            return policy
        default:
            throw error("must be a number of attempts (1-100), true/false, or a dictionary")
        }
    }

    func authenticationSource() throws(APIError) -> AuthenticationSource {
        guard case .object(let members) = value else { throw error("must be a dictionary, not \(value.kindName)") }
        for secret in ["token", "password", "value", "user", "username", "secret"] where members[secret] != nil {
            throw error(
                "must not hold the secret itself (\"\(secret)\"); name an environment variable with tokenEnvironment, userEnvironment or passwordEnvironment")
        }
        let known: Set<String> = ["scheme", "tokenEnvironment", "userEnvironment", "passwordEnvironment"]
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
            throw error("has the unknown key \"\(unknown)\"; use scheme, tokenEnvironment, userEnvironment, passwordEnvironment")
        }
        guard let schemeText = members["scheme"]?.stringValue, let scheme = AuthenticationSource.Scheme(rawValue: schemeText.lowercased())
        else {
            throw error("needs a scheme: bearer, basic or authorization")
        }
        var source = AuthenticationSource(scheme: scheme)
        for (key, path) in [("tokenEnvironment", \AuthenticationSource.tokenEnvironment), ("userEnvironment", \.userEnvironment), ("passwordEnvironment", \.passwordEnvironment)] {
            guard let member = members[key] else { continue }
            guard let name = member.stringValue, !name.isEmpty else { throw error("\(key) must be the name of an environment variable") }
            source[keyPath: path] = name
        }
        switch scheme {
        case .bearer, .authorization:
            guard source.tokenEnvironment != nil else { throw error("\(scheme.rawValue) needs tokenEnvironment") }
        case .basic:
            guard source.userEnvironment != nil, source.passwordEnvironment != nil else {
                throw error("basic needs userEnvironment and passwordEnvironment")
            }
        }
        return source
    }

    func statusCodes() throws(APIError) -> StatusCodes {
        let elements: [JSONValue]
        switch value {
        case .array(let array): elements = array
        default: elements = [value]
        }
        var ranges: [ClosedRange<Int>] = []
        for element in elements {
            switch element {
            case .int(let code) where (100...599).contains(code):
                ranges.append(code...code)
            case .string(let text):
                guard let codes = StatusCodes(text: text) else {
                    throw error("\"\(text)\" is not a status code or range such as 200-299")
                }
                ranges.append(contentsOf: codes.ranges)
            default:
                throw error("must hold status codes (100-599) or ranges such as \"200-299\", not \(element.kindName)")
            }
        }
        guard !ranges.isEmpty else { throw error("must not be empty") }
        return StatusCodes(ranges: ranges)
    }
}
