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
