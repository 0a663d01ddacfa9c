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
        case responseType, responseClass, errorClass, acceptsNullResponse, acceptedStatusCodes, timeout, tag, envelope
        case userInfo, notes, authentication, retry, deadline, hedging, mock
        case cachePolicy, expire, offlinePolicy, servesStaleWhenOffline, responseSerializer, pagination
        case commonParameterPlacement

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
            case .errorClass: ["Error Class", "errorClass", "errorClasses"]
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
            case .hedging: ["hedging"]
            case .mock: ["mock", "Mock"]
            case .cachePolicy: ["Cache Policy", "cachePolicy", "cache"]
            case .expire: ["Expire", "expire"]
            case .offlinePolicy: ["Offline Policy", "offlinePolicy", "storePolicy"]
            case .servesStaleWhenOffline: ["servesStaleWhenOffline"]
            case .responseSerializer: ["Response Serializer", "responseSerializer", "responseFormat"]
            case .pagination: ["Pagination", "pagination"]
            case .commonParameterPlacement: ["commonParameterPlacement"]
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
        var parsed: [(name: String, line: Int?, definition: APIDefinition, cache: CacheKeys)] = []
        // Sorted, so the first error reported does not depend on dictionary order.
        for name in document.root.keys.sorted() {
            guard let value = document.root[name] else { continue }
            let line = document.lines[name]?[""]
            guard case .object(let fields) = value else {
                throw Self.error(name, key: nil, line: line, localized: "must be a dictionary of fields, not \(value.kindName)")
            }
            var cache = CacheKeys()
            let definition = try parseDefinition(name: name, fields: fields, cache: &cache, warnings: &result.warnings)
            parsed.append((name, line, definition, cache))
        }
        // RFAPI merged DEFAULT's raw keys under each rule before reading them: an `Expire` in
        // DEFAULT times a `Cache Policy` 3 elsewhere, so the cache keys are read together here.
        let inherited = parsed.first { $0.name == APIDefinitions.defaultName }.map { ($0.cache, $0.definition.cachePolicy) }
        for (name, line, parsedDefinition, cache) in parsed {
            var definition = parsedDefinition
            cache.resolve(
                into: &definition, api: name, inherited: name == APIDefinitions.defaultName ? nil : inherited, warnings: &result.warnings)
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

    private func parseDefinition(
        name: String, fields: [String: JSONValue], cache: inout CacheKeys, warnings: inout [LocalizedMessage]
    ) throws(APIError) -> APIDefinition {
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
            try read(field, reader: reader, into: &definition, cache: &cache, warnings: &warnings)
        }
        return definition
    }

    /// Reads one field's value into the definition.
    private func read(
        _ field: Field, reader: ValueReader, into definition: inout APIDefinition, cache: inout CacheKeys, warnings: inout [LocalizedMessage]
    ) throws(APIError) {
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
            definition.parameters = try reader.dictionary()
        case .needsAuthorization:
            definition.needsAuthorization = try reader.bool()
        case .contentType, .responseType, .commonParameterPlacement:
            try readWord(field, reader: reader, into: &definition)
        case .cachePolicy, .offlinePolicy:
            // RFAPI wrote its policies as numbers (property lists sometimes as digit strings);
            // words are Callsign's policies.
            if let number = reader.rfapiNumber() {
                if field == .cachePolicy {
                    cache.policy = try RFAPICachePolicy(number: number, reader: reader)
                    cache.policyKey = (reader.key, reader.value)
                } else {
                    definition.servesStaleWhenOffline = try reader.rfapiOfflinePolicy(number)
                }
            } else {
                try readWord(field, reader: reader, into: &definition)
            }
        case .expire:
            cache.expire = try reader.expire()
            cache.expireKey = (reader.key, reader.value)
        case .servesStaleWhenOffline:
            definition.servesStaleWhenOffline = try reader.bool()
        case .responseSerializer:
            let text = try reader.string()
            // A serializer class of one's own is named after what it reads (`MyJSONResponseSerializer`).
            let lowered = text.lowercased()
            let named = lowered.contains("json") ? ResponseFormat.json : lowered.contains("propertylist") ? .propertyList : nil
            if let format = ResponseFormat(name: text) ?? (reader.key.first?.isLowercase == true ? nil : named) {
                definition.responseFormat = format
            } else if text == "AFHTTPResponseSerializer" {
                break  // the raw body, which every response keeps anyway
            } else if reader.key.first?.isLowercase == true {
                throw reader.error("\"\(text)\" is not a response format; use \(ResponseFormat.names.joined(separator: ", "))")
            } else {
                definition.recognizedButUnused = (definition.recognizedButUnused ?? [:]).merging([reader.key: reader.value]) { $1 }
                warnings.append("definition \"\(reader.api)\": \"\(reader.key)\" \"\(text)\" has no meaning here (Callsign decodes JSON and property lists); it was kept as written" as LocalizedMessage)
            }
        case .responseClass:
            definition.responseClass = try reader.string()
        case .errorClass:
            definition.errorClasses = try reader.errorClasses()
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
            definition.userInfo = try reader.dictionary()
        case .notes:
            definition.notes = try reader.string()
        case .retry:
            definition.retry = try reader.retryPolicy()
        case .deadline:
            definition.deadline = try reader.seconds()
        case .hedging:
            definition.hedging = try reader.hedgePolicy()
        case .mock:
            definition.mock = try reader.string()
        case .pagination:
            definition.pagination = try reader.pagination()
        case .authentication:
            guard reader.api == APIDefinitions.defaultName else {
                throw reader.error("belongs in the DEFAULT definition: one client has one way to authenticate")
            }
            definition.authentication = try reader.authenticationSource()
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
        case .commonParameterPlacement:
            definition.commonParameterPlacement = try reader.word(
                CommonParameterPlacement.init(name:), what: "a common parameter placement; use \(CommonParameterPlacement.names.joined(separator: ", "))")
        default:
            break
        }
    }
}

/// RFAPI's `RFAPIDefineCachePolicy`, as its files wrote it: a number.
enum RFAPICachePolicy: Int {
    /// 0 and 1: the server's `Cache-Control` decides (RFAPI: `NSURLRequestUseProtocolCachePolicy`).
    case byDefault = 0, byProtocol = 1
    /// 2: a stored response whenever there is one (RFAPI: `NSURLRequestReturnCacheDataElseLoad`).
    case always = 2
    /// 3: a stored response while `Expire` seconds have not passed.
    case expire = 3
    /// 5: always the network (RFAPI: `NSURLRequestReloadIgnoringLocalCacheData`).
    case noCache = 5

    init(number: Int, reader: ValueReader) throws(APIError) {
        guard let policy = RFAPICachePolicy(rawValue: number) else {
            throw reader.error(
                "\(number) is not one of RFAPI's cache policies: 0 (default), 1 (protocol), 2 (always), 3 (expire), 5 (no cache); or use a word: \(CachePolicy.names.joined(separator: ", "))"
            )
        }
        self = policy
    }

    /// Callsign's policy for this one, without an `Expire`.
    var policy: CachePolicy {
        switch self {
        case .byDefault, .byProtocol, .expire: .useProtocol
        case .always: .returnCacheElseLoad
        case .noCache: .reloadIgnoringCache
        }
    }
}

/// One definition's own cache keys as written: RFAPI's numeric `Cache Policy` and its `Expire`,
/// which mean something only together (and with `DEFAULT`'s), so they are read after the file.
struct CacheKeys {
    var policy: RFAPICachePolicy?
    var policyKey: (name: String, value: JSONValue)?
    /// `nil` for an `Expire` of 0, which RFAPI read as "no expiry".
    var expire: Duration?
    var expireKey: (name: String, value: JSONValue)?

    /// Sets the definition's cache policy from these keys and what it inherits from `DEFAULT`
    /// (its keys and its word policy), as RFAPI's merged rule would have said. Values without a
    /// meaning are kept as written, with a warning.
    func resolve(
        into definition: inout APIDefinition, api: String, inherited: (keys: CacheKeys, word: CachePolicy?)?,
        warnings: inout [LocalizedMessage]
    ) {
        guard policyKey != nil || expireKey != nil else { return }  // DEFAULT's own, by merging
        // The definition's own policy (a number or a word) wins over DEFAULT's.
        let ownWord = definition.cachePolicy
        let number = policy ?? (ownWord == nil ? inherited?.keys.policy : nil)
        let word = ownWord ?? (policy == nil && inherited?.keys.policy == nil ? inherited?.word : nil)
        let expire = expireKey != nil ? self.expire : inherited?.keys.expire
        let base = number?.policy ?? word ?? .useProtocol
        // RFAPI's 0 and 1 let the server decide and its 3 counted `Expire`; here `Expire` is
        // the freshness of any policy that has one (only 2 and 5 have none).
        let expires = base == .useProtocol
        if let expire, expires {
            definition.cachePolicy = .fresh(for: expire)
            return
        }
        if let number { definition.cachePolicy = number.policy }
        if number == .expire, let policyKey {
            definition.recognizedButUnused = (definition.recognizedButUnused ?? [:]).merging([policyKey.name: policyKey.value]) { $1 }
            warnings.append("definition \"\(api)\": \"\(policyKey.name)\" 3 (expire) has no Expire to count, so the server's Cache-Control decides; it was kept as written" as LocalizedMessage)
        }
        if let expireKey, self.expire != nil, !expires {
            definition.recognizedButUnused = (definition.recognizedButUnused ?? [:]).merging([expireKey.name: expireKey.value]) { $1 }
            warnings.append("definition \"\(api)\": \"\(expireKey.name)\" has no meaning with the cache policy \(base), which does not count freshness; it was kept as written" as LocalizedMessage)
        }
    }
}
