public import Callsign
public import Foundation
import HTTPTypes
import OpenAPIKit
import OpenAPIKit30
import OpenAPIKitCompat

/// An OpenAPI 3.0 or 3.1 document as Callsign definitions: every operation is an API you call by
/// its `operationId`, with no code generation.
///
/// ```swift
/// let petstore = try OpenAPIOperations(contentsOf: URL(fileURLWithPath: "petstore.yaml"))
/// let client = APIClient(definitions: petstore.definitions)
/// let pet = try await client.send(petstore.request("showPetById", parameters: ["petId": 1]))
/// ```
///
/// `servers[0]` (variables at their defaults) is the base URL; paths keep their templates;
/// query, header and cookie parameters go where the document says (arrays as `form`,
/// `spaceDelimited` or `pipeDelimited`, objects as `deepObject`); the request body's media type
/// is the content type; documented 2xx codes are the accepted status codes; a JSON array or
/// object response is `objects` or `object`; an operation with security requirements needs
/// authorization. ``request(_:parameters:)`` checks required parameters, primitive types and
/// `enum` values before a byte is sent.
public struct OpenAPIOperations: Sendable {
    /// Where a parameter goes.
    public enum Location: String, Sendable, Hashable {
        case path, query, header, cookie
    }

    /// One parameter of an operation.
    public struct Parameter: Sendable, Hashable {
        public let name: String
        public let location: Location
        public let required: Bool
        /// The JSON type the schema names (`integer`, `string`, `array`…), if one.
        public let type: String?
        /// The allowed values (`enum`), as text.
        public let allowedValues: [String]?
        /// The serialization style (`form`, `simple`, `spaceDelimited`, `pipeDelimited`, `deepObject`).
        public let style: String
        public let explode: Bool
        public let summary: String?
    }

    /// One operation.
    public struct Operation: Sendable, Hashable {
        /// Its `operationId`, or a name made from its method and path.
        public let name: String
        public let method: String
        public let path: String
        public let summary: String?
        public let parameters: [Parameter]
        /// The request body's media type, if it has one.
        public let bodyContentType: String?
        public let bodyRequired: Bool
        /// The request body's schema as JSON text, for `callsign describe`.
        public let bodySchema: String?
        public let needsAuthorization: Bool
        /// The documented answers, by status (`200`, `4XX`, `default`), for `callsign describe`.
        public let responses: [DocumentedResponse]
        /// Whether a success answer is a stream of server-sent events (`text/event-stream`):
        /// call such an operation with `APIClient.events(_:parameters:headers:reconnecting:)`.
        /// `nil` when it never is.
        public let eventStream: EventStreamAnswer?
    }

    /// How an operation answers with server-sent events.
    public enum EventStreamAnswer: String, Sendable, Hashable {
        /// Its only success answer is an event stream: its definition asks for one (`Accept:
        /// text/event-stream`), and `callsign call` prints each event as it arrives.
        case only
        /// An event stream is one of its success answers, sent when the request asks for it (a
        /// body field such as `stream: true`, or `Accept`): `callsign call --stream`.
        case optional
    }

    /// One documented answer of an operation.
    public struct DocumentedResponse: Sendable, Hashable {
        /// The status code, range (`2XX`) or `default`, as the document writes it.
        public let status: String
        /// The document's description of it.
        public let summary: String?
        /// Its preferred media type (JSON first), if it has content.
        public let contentType: String?
        /// That media type's schema as JSON text, if it has one.
        public let schema: String?
    }

    /// The definitions, one per operation, with the document's first server as the base URL
    /// (``baseURL`` chooses another).
    public internal(set) var definitions: APIDefinitions

    /// The base URL requests go to: the document's first server, variables at their defaults,
    /// until you choose another (a staging server, a local mock).
    ///
    /// ```swift
    /// petstore.baseURL = URL(string: "http://127.0.0.1:8080/v1/")
    /// ```
    public var baseURL: URL? {
        get { definitions.defaultDefinition.baseURL }
        set { definitions.defaultDefinition.baseURL = newValue }
    }
    /// The operations, by path and then method.
    public var operations: [Operation] { compiled.operations }
    /// The document's security schemes by name, as Callsign can send them.
    public var securitySchemes: [String: SecurityScheme] { compiled.securitySchemes }
    /// Checks answers against their operation's response schema; off until you add it to
    /// `APIClient.Configuration.Responses.validators`.
    public let responseValidator: OpenAPIResponseValidator

    /// How a security scheme sends its secret.
    public enum SecurityScheme: Sendable, Hashable, Codable {
        /// `Authorization: Bearer <secret>`.
        case bearer
        /// `Authorization: Basic`, the secret being `user:password`.
        case basic
        /// An API key in this header.
        case headerKey(String)
        /// An API key in this query parameter.
        case queryKey(String)
        /// An API key in this cookie.
        case cookieKey(String)
        /// OAuth 2, OpenID Connect, mutual TLS or another HTTP scheme: give the client an
        /// `Authentication` (a token provider, `TLSSettings.clientIdentity`) yourself.
        case unsupported(String)
    }
    /// What the load noticed (operations without an `operationId`), in the process's language.
    public var warnings: [String] { compiled.warnings }

    /// What the load made, as plain data: what the description cache keeps.
    let compiled: CompiledDescription

    /// Whether `data` is an OpenAPI document (has a top-level `openapi` version).
    public static func isOpenAPI(_ data: Data, format: APIDefinitions.Format) -> Bool {
        guard let document = try? DefinitionDocument(data: data, format: format) else { return false }
        return version(of: document.root) != nil
    }

    /// Reads a document from a `.json`, `.yaml` or `.yml` file: at most
    /// `Limits.maximumDocumentSize` bytes (and one more to tell a larger file).
    /// `strict` and `cache` are as for ``init(data:format:limits:strict:cache:)``.
    public init(contentsOf url: URL, limits: Limits = .default, strict: Bool = false, cache: DescriptionCache? = nil) throws(APIError) {
        let data = try FileReader.readDocument(url, limits: limits) { error in
            APIError(.invalidDefinition, localized: "the OpenAPI document \"\(url.lastPathComponent)\" cannot be read", underlyingError: error)
        }
        try self.init(data: data, format: url.pathExtension.lowercased() == "json" ? .json : .yaml, limits: limits, strict: strict, cache: cache)
    }

    /// Reads a document. YAML and JSON are read by Callsign's bounded reader (size, nesting depth,
    /// value count), and the document's `$ref`s measured (chain length, expanded depth and size;
    /// see `Limits`) before OpenAPIKit sees it, so a hostile document gets a clear
    /// `APIError` instead of exhausting the stack or memory.
    ///
    /// Published documents often stray from the specification: a `3.1` version without its patch
    /// number, a path parameter not marked required, an `exclusiveMinimum` of the other version, a
    /// schema that names itself, one operation with a typo. By default each known deviation is
    /// repaired, a part that still cannot be read is left out (only the operations that use it go
    /// with it), and ``warnings`` says what was done, grouped by kind. With `strict`, nothing is
    /// repaired: the load fails with one `APIError` listing every problem it found.
    ///
    /// With a `cache`, what the load makes is kept there, and the next load of the same bytes
    /// (with the same limits and strictness) reads it back in milliseconds (see
    /// ``DescriptionCache``). Default `nil`: every load reads the whole document.
    ///
    /// ```swift
    /// let api = try OpenAPIOperations(data: yaml, format: .yaml, limits: .init { $0.maximumReferenceDepth = 16 })
    /// for warning in api.warnings { print(warning) }
    /// _ = try OpenAPIOperations(data: yaml, format: .yaml, strict: true)   // in a linter or CI check
    /// ```
    public init(
        data: Data, format: APIDefinitions.Format, limits: Limits = .default, strict: Bool = false, cache: DescriptionCache? = nil
    ) throws(APIError) {
        self = try Self.loading(data, format: format, limits: limits, strict: strict, cache: cache).operations
    }

    /// Loads a document through `cache` when there is one, and says what the cache did.
    package static func loading(
        _ data: Data, format: APIDefinitions.Format, limits: Limits = .default, strict: Bool = false, cache: DescriptionCache?
    ) throws(APIError) -> (operations: OpenAPIOperations, outcome: DescriptionCache.Outcome?) {
        guard data.count <= limits.maximumDocumentSize else {
            throw APIError(
                .invalidDefinition,
                localized: "the OpenAPI document is larger than \(limits.maximumDocumentSize) bytes (Limits.maximumDocumentSize)")
        }
        guard let cache else {
            return (try OpenAPIOperations(root: DefinitionDocument(data: data, format: format, limits: limits).root, limits: limits, strict: strict), nil)
        }
        let key = DescriptionCache.key(for: data, format: format, limits: limits, strict: strict)
        let kept = cache.operations(for: key)
        if let operations = kept.operations { return (operations, kept.outcome) }
        let operations = try OpenAPIOperations(root: DefinitionDocument(data: data, format: format, limits: limits).root, limits: limits, strict: strict)
        if kept.outcome != .unavailable { cache.keep(operations, for: key) }
        return (operations, kept.outcome)
    }

    /// A document already read by Callsign's bounded reader.
    package init(root written: [String: JSONValue], limits: Limits = .default, strict: Bool = false) throws(APIError) {
        guard let (version, versionRepair) = Self.version(of: written) else {
            throw APIError(.invalidDefinition, localized: "the document has no \"openapi\" version: it is not an OpenAPI document")
        }
        guard version.hasPrefix("3.0.") || version.hasPrefix("3.1.") || version.hasPrefix("3.2.") else {
            throw APIError(.invalidDefinition, localized: "OpenAPI \(version) is not supported (3.0 and 3.1 are)")
        }
        guard written["paths"] == nil || written["paths"]?.objectValue != nil else {
            throw APIError(.invalidDefinition, localized: "the OpenAPI document is not valid: its \"paths\" is not a map")
        }
        var report = LoadReport(strict: strict)
        if let versionRepair { report.add("version", versionRepair) }
        // Known deviations repaired, and the $refs that close a cycle cut, before anything else
        // reads the document (in strict mode, to list them).
        var normalizer = DocumentNormalizer(version: version)
        var root = normalizer.normalized(written)
        root["openapi"] = .string(version)
        normalizer.cutCycles(&root)
        report.add(normalizer.findings)
        // Before any recursive library code: OpenAPIKit decodes and dereferences with one stack
        // frame per level and one copy per use of a schema.
        let structure = try DocumentStructure(root: root, limits: limits)
        // A path that expands past its bound is left out alone (its size is known before
        // OpenAPIKit builds it): the rest of the document loads.
        let pathLimit = max(1, limits.maximumExpandedPathNodes)
        let oversized = structure.pathItemNodes.filter { $0.value > pathLimit }
        for (path, nodes) in oversized.sorted(by: { $0.key < $1.key }) {
            let message = "\(path) stands for \(nodes) values once its $refs are expanded, more than \(pathLimit) (Limits.maximumExpandedPathNodes); its operations are left out" as LocalizedMessage
            report.add("operation", message)
        }
        // Decoded in parts: the document without its operations once, then a few paths at a time,
        // expanded, read and dropped before the next. Neither the decoded operations nor the
        // expanded copies of shared schemas ever exist for the whole document at once.
        var shell = root
        let paths = shell.updateValue(.object([:]), forKey: "paths")
        let (document, components) = try Self.decodeShell(shell, version: version, report: &report)
        var warnings = Self.documentWarnings(root: root)
        let baseURL = Self.baseURL(document.servers.first, warnings: &warnings)
        var operations: [Operation] = []
        var extras: [CompiledDescription.Extras] = []
        var responseSchemas: [String: [String: Int]] = [:]
        var rules = SchemaRules()
        var names = Set<String>()
        var texts = SchemaTexts(root: root, maximumDepth: limits.maximumReferenceDepth)
        // By path, then method: the document's own order does not survive the bounded reader,
        // and `list` and generated names must not change from one run to the next.
        let methodOrder = ["GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE", "QUERY"]
        let byPath = (paths?.objectValue ?? [:]).filter { oversized[$0.key] == nil }.map { (key: OpenAPIKit.OpenAPI.Path(rawValue: $0.key).rawValue, text: $0.key, item: $0.value) }
            .sorted { $0.key != $1.key ? $0.key < $1.key : $0.text < $1.text }
        let expected = byPath.reduce(0) { count, entry in
            count + (entry.item.objectValue?.keys.count { DocumentNormalizer.methods.contains($0.lowercased()) } ?? 0)
        }
        operations.reserveCapacity(expected)
        extras.reserveCapacity(expected)
        // The path as the document writes it, for each path as OpenAPIKit reads it.
        var writtenPaths: [String: String] = [:]
        for entry in byPath where writtenPaths[entry.key] == nil { writtenPaths[entry.key] = entry.text }
        // What decoding a path checks its security requirements against.
        var checked: [String: JSONValue] = [:]
        for key in ["securitySchemes", "pathItems"] { checked[key] = components[key] }
        // Up to 64 paths at a time, and no more than a few hundred thousand values once expanded
        // (a larger path alone): few enough to bound what exists at once, enough that each
        // decoding's fixed cost is shared.
        var batches: [[(text: String, item: JSONValue)]] = [[]]
        var batchNodes = 0
        for entry in byPath {
            let nodes = structure.pathItemNodes[entry.text] ?? 0
            if let current = batches.last, !current.isEmpty, current.count == 64 || batchNodes + nodes > Self.batchNodes {
                batches.append([])
                batchNodes = 0
            }
            batches[batches.count - 1].append((text: entry.text, item: entry.item))
            batchNodes += nodes
        }
        var componentSchemas = ComponentSchemas(components: document.components)
        var pagingWarnings: [LocalizedMessage] = []
        let read = BatchReader(
            batches, template: document, version: version, checked: checked, info: root["info"], stubs: componentSchemas, strict: strict)
        for batch in read {
            report.add(batch.findings)
            let endpoints = batch.endpoints.sorted { left, right in
                if left.path.rawValue != right.path.rawValue { return left.path.rawValue < right.path.rawValue }
                let leftIndex = methodOrder.firstIndex(of: left.method.rawValue.uppercased()) ?? methodOrder.count
                let rightIndex = methodOrder.firstIndex(of: right.method.rawValue.uppercased()) ?? methodOrder.count
                return leftIndex < rightIndex
            }
            for endpoint in endpoints {
                let method = endpoint.method.rawValue.uppercased()
                let path = endpoint.path.rawValue
                // Each answer's JSON schema, a component's stand-in turned back into its schema.
                var answers: [Answer] = []
                do {
                    for (status, response) in endpoint.responses {
                        answers.append(Answer(status: status.rawValue, schema: try Self.jsonSchema(of: response.content).map { try componentSchemas.schema($0) }))
                    }
                } catch {
                    report.add("operation", "\(method) \(path) cannot be read (\(Self.describe(error))); it is left out" as LocalizedMessage)
                    continue
                }
                var name = endpoint.operationId ?? ""
                if name.isEmpty || names.contains(name) {
                    var made = method.lowercased() + path.split(separator: "/").map { $0.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "") }
                        .map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
                    // Never two operations under one name, and none dropped: a number makes it unique.
                    var suffix = 2
                    let base = made
                    while names.contains(made) {
                        made = base + String(suffix)
                        suffix += 1
                    }
                    warnings.append(
                        name.isEmpty
                            ? ("\(method) \(path) has no operationId; it is called \"\(made)\"" as LocalizedMessage).description
                            : ("\(method) \(path) repeats the operationId \"\(name)\"; it is called \"\(made)\"" as LocalizedMessage).description)
                    name = made
                }
                // An operation's own server that names no host cannot be called (DigitalOcean's
                // presigned upload URL, `https://`): the document's server would be the wrong one.
                var ownBaseURL: URL?
                if let server = endpoint.servers.first, endpoint.servers != document.servers {
                    ownBaseURL = Self.baseURL(server, warnings: &warnings)
                    guard ownBaseURL != nil else {
                        warnings.append(("\(method) \(path) is left out: its own server cannot be called" as LocalizedMessage).description)
                        continue
                    }
                }
                names.insert(name)
                let written = texts.operation(path: writtenPaths[path] ?? path, method: method)
                let operation = Self.operation(endpoint, name: name, written: written, texts: &texts)
                operations.append(operation)
                warnings += Self.operationWarnings(written: written, endpoint: endpoint, answers: answers, name: name)
                for answer in answers {
                    guard let schema = answer.schema else { continue }
                    let key = answer.status.lowercased() == "default" ? "default" : answer.status.uppercased()
                    responseSchemas[name, default: [:]][key] = rules.add(schema)
                }
                let paging = Self.pagination(of: operation, written: written, endpoint: endpoint)
                if let warning = paging.warning { pagingWarnings.append(warning) }
                extras.append(
                    CompiledDescription.Extras(
                        baseURL: ownBaseURL, responseType: Self.responseType(answers),
                        acceptedStatusCodes: endpoint.responses.keys.compactMap { Int($0.rawValue) }.filter { (200..<300).contains($0) }.sorted(),
                        pagination: paging.pagination))
            }
        }
        // Three, then how many more: a document of 300 list operations gets four lines.
        warnings += pagingWarnings.prefix(3).map(\.description)
        if pagingWarnings.count > 3 {
            warnings.append(("… and \(pagingWarnings.count - 3) more like these" as LocalizedMessage).description)
        }
        var schemes: [String: SecurityScheme] = [:]
        for (name, entry) in document.components.securitySchemes {
            guard case .b(let scheme) = entry else { continue }
            switch scheme.type {
            case .http(scheme: let kind, bearerFormat: _):
                schemes[name.rawValue] = kind.lowercased() == "bearer" ? .bearer : kind.lowercased() == "basic" ? .basic : .unsupported("http \(kind)")
            case .apiKey(name: let key, location: .header): schemes[name.rawValue] = .headerKey(key)
            case .apiKey(name: let key, location: .query): schemes[name.rawValue] = .queryKey(key)
            case .apiKey(name: let key, location: .cookie): schemes[name.rawValue] = .cookieKey(key)
            case .oauth2: schemes[name.rawValue] = .unsupported("oauth2")
            case .openIdConnect: schemes[name.rawValue] = .unsupported("openIdConnect")
            case .mutualTLS: schemes[name.rawValue] = .unsupported("mutualTLS")
            }
        }
        if let refusal = report.refusal { throw refusal }
        try self.init(
            compiled: CompiledDescription(
                baseURL: baseURL, operations: operations, extras: extras, securitySchemes: schemes, rules: rules,
                responseSchemas: responseSchemas, warnings: report.warnings + warnings))
    }

    /// The `Authentication` that sends `secret` as the document's security scheme `scheme`
    /// says, for operations that need authorization. The secret is yours to supply, as for any API.
    ///
    /// ```swift
    /// configuration.authentication = try petstore.authentication(scheme: "api_key", secret: apiKey)
    /// ```
    ///
    /// - Throws: `APIError` (`APIError.Code.authentication`) for a scheme the document does
    ///   not define or Callsign cannot send from a secret (OAuth 2, OpenID Connect, mutual TLS).
    public func authentication(scheme: String, secret: String) throws(APIError) -> Authentication {
        switch securitySchemes[scheme] {
        case .bearer?: return .bearer(secret)
        case .basic?:
            guard let colon = secret.firstIndex(of: ":") else {
                throw APIError(.authentication, localized: "the basic scheme \"\(scheme)\" takes its secret as user:password")
            }
            return .basic(username: String(secret[..<colon]), password: String(secret[secret.index(after: colon)...]))
        case .headerKey(let name)?: return .apiKey(secret, name: name, in: .header)
        case .queryKey(let name)?: return .apiKey(secret, name: name, in: .query)
        case .cookieKey(let name)?:
            // The same encoding as cookie parameters: a `;` in the key cannot add a cookie.
            do {
                try CookiePair.checkName(name)
            } catch {
                throw APIError(.authentication, localized: "the security scheme \"\(scheme)\" names a cookie that is not a token (RFC 6265)")
            }
            return .apiKey(secret, name: name, in: .cookie)
        case .unsupported(let kind)?:
            throw APIError(.authentication, localized: "the security scheme \"\(scheme)\" is \(kind): give the client an Authentication for it yourself")
        case nil:
            throw APIError(.authentication, localized: "the OpenAPI document defines no security scheme \"\(scheme)\"")
        }
    }

    /// The operation named `name`.
    public func operation(named name: String) throws(APIError) -> Operation {
        guard let found = operations.first(where: { $0.name == name }) else {
            throw APIError(.unknownAPI, localized: "the OpenAPI document has no operation \"\(name)\"")
        }
        return found
    }
}
