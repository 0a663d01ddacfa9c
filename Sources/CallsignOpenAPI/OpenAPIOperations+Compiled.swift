import Callsign
import Foundation
import HTTPTypes

/// What loading a document makes, as plain data: the operations, what each one's definition needs
/// beyond the operation, the security schemes, the response rules and the warnings.
///
/// A fresh load and the description cache both end in ``OpenAPIOperations/init(compiled:)``:
/// the definitions and the response validator are made from this in one place, whichever way it
/// came.
struct CompiledDescription: Sendable, Codable {
    /// What an operation's definition takes from the document beyond its ``OpenAPIOperations/Operation``.
    struct Extras: Sendable, Codable {
        /// The operation's own server, when it has one other than the document's.
        var baseURL: URL?
        var responseType: ResponseType?
        /// The documented 2xx codes, ascending.
        var acceptedStatusCodes: [Int]
        var pagination: Pagination?
    }

    /// The document's first server, variables at their defaults.
    var baseURL: URL?
    var operations: [OpenAPIOperations.Operation]
    /// One per operation, in the same order.
    var extras: [Extras]
    var securitySchemes: [String: OpenAPIOperations.SecurityScheme]
    var rules: SchemaRules
    /// Each operation's response rule (a place in `rules`) by status.
    var responseSchemas: [String: [String: Int]]
    var warnings: [String]

    private enum CodingKeys: String, CodingKey {
        case baseURL, operations, extras, securitySchemes, rules, responseSchemas, warnings
    }

    init(
        baseURL: URL?, operations: [OpenAPIOperations.Operation], extras: [Extras], securitySchemes: [String: OpenAPIOperations.SecurityScheme],
        rules: SchemaRules, responseSchemas: [String: [String: Int]], warnings: [String]
    ) {
        (self.baseURL, self.operations, self.extras, self.securitySchemes) = (baseURL, operations, extras, securitySchemes)
        (self.rules, self.responseSchemas, self.warnings) = (rules, responseSchemas, warnings)
    }

    // The operations, most of an entry (their schema texts above all), are one block of bytes
    // (``ByteWriter``): read back without a coded value per field.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        baseURL = try container.decodeIfPresent(URL.self, forKey: .baseURL)
        var input = ByteReader(Array(try container.decode(Data.self, forKey: .operations)))
        guard let operations = OpenAPIOperations.Operation.all(from: &input), input.remaining == 0 else {
            throw DecodingError.dataCorruptedError(forKey: .operations, in: container, debugDescription: "the operations are damaged")
        }
        self.operations = operations
        extras = try container.decode([Extras].self, forKey: .extras)
        securitySchemes = try container.decode([String: OpenAPIOperations.SecurityScheme].self, forKey: .securitySchemes)
        rules = try container.decode(SchemaRules.self, forKey: .rules)
        responseSchemas = try container.decode([String: [String: Int]].self, forKey: .responseSchemas)
        warnings = try container.decode([String].self, forKey: .warnings)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(baseURL, forKey: .baseURL)
        var out = ByteWriter()
        OpenAPIOperations.Operation.write(operations, to: &out)
        try container.encode(Data(out.bytes), forKey: .operations)
        try container.encode(extras, forKey: .extras)
        try container.encode(securitySchemes, forKey: .securitySchemes)
        try container.encode(rules, forKey: .rules)
        try container.encode(responseSchemas, forKey: .responseSchemas)
        try container.encode(warnings, forKey: .warnings)
    }

    /// Whether the parts agree with each other: one extra per operation, every rule named exists
    /// and the rule table is well formed. A table built by a load always does; one read back from
    /// a file must before it is used.
    var isConsistent: Bool {
        extras.count == operations.count && rules.isWellFormed
            && responseSchemas.values.allSatisfy { $0.values.allSatisfy { rules.rules.indices.contains($0) } }
            && extras.allSatisfy { extras in
                extras.pagination.map { (1...10_000).contains($0.maximumPages) && ($0.pageSize.map { (1...1_000_000).contains($0) } ?? true) } ?? true
            }
    }
}

extension OpenAPIOperations {
    /// The operations of what a load made: one definition per operation (the document's first
    /// server as the base URL) and the validator of their answers.
    ///
    /// - Throws: `APIError` (`invalidDefinition`) when the parts do not agree, or two operations
    ///   share a name: never from a load's own result, only from a damaged copy.
    init(compiled: CompiledDescription) throws(APIError) {
        guard compiled.isConsistent else {
            throw APIError(.invalidDefinition, localized: "the compiled description is not consistent; it is not used")
        }
        var defaults = APIDefinition()
        defaults.baseURL = compiled.baseURL
        var table = try APIDefinitions(default: defaults, [])
        table.reserveCapacity(compiled.operations.count)
        for (operation, extras) in zip(compiled.operations, compiled.extras) {
            try table.add(Self.definition(of: operation, extras: extras))
        }
        self.definitions = table
        self.responseValidator = OpenAPIResponseValidator(rules: compiled.rules, schemas: compiled.responseSchemas)
        self.compiled = compiled
    }

    /// An operation's definition: how a call by its name is sent.
    static func definition(of operation: Operation, extras: CompiledDescription.Extras) -> APIDefinition {
        var definition = APIDefinition()
        definition.name = operation.name
        definition.method = HTTPRequest.Method(operation.method)
        definition.path = operation.path.hasPrefix("/") ? String(operation.path.dropFirst()) : operation.path
        if let baseURL = extras.baseURL { definition.baseURL = baseURL }
        definition.contentType = operation.bodyContentType.map(Self.contentType)
        definition.responseType = extras.responseType
        if !extras.acceptedStatusCodes.isEmpty { definition.acceptedStatusCodes = StatusCodes(extras.acceptedStatusCodes) }
        definition.needsAuthorization = operation.needsAuthorization
        definition.notes = operation.summary
        if operation.eventStream == .only { definition.headers = ["Accept": "text/event-stream"] }
        definition.pagination = extras.pagination
        return definition
    }
}

/// The kept form of operations. Each is read back through the memberwise initializers, so a
/// field added to ``OpenAPIOperations/Operation`` and its parts cannot be left out here: the
/// reader does not compile until it supplies one.
extension OpenAPIOperations.Operation {
    static func write(_ operations: [Self], to out: inout ByteWriter) {
        out.number(operations.count)
        for operation in operations {
            out.text(operation.name)
            out.text(operation.method)
            out.text(operation.path)
            out.optionalText(operation.summary)
            out.number(operation.parameters.count)
            for parameter in operation.parameters {
                out.text(parameter.name)
                out.text(parameter.location.rawValue)
                out.flag(parameter.required)
                out.optionalText(parameter.type)
                out.flag(parameter.allowedValues != nil)
                out.number(parameter.allowedValues?.count ?? 0)
                for value in parameter.allowedValues ?? [] { out.text(value) }
                out.text(parameter.style)
                out.flag(parameter.explode)
                out.optionalText(parameter.summary)
            }
            out.optionalText(operation.bodyContentType)
            out.flag(operation.bodyRequired)
            out.optionalText(operation.bodySchema)
            out.flag(operation.needsAuthorization)
            out.number(operation.responses.count)
            for response in operation.responses {
                out.text(response.status)
                out.optionalText(response.summary)
                out.optionalText(response.contentType)
                out.optionalText(response.schema)
            }
            out.optionalText(operation.eventStream?.rawValue)
        }
    }

    /// The operations `write(_:to:)` wrote, or `nil` for damaged bytes.
    static func all(from input: inout ByteReader) -> [Self]? {
        guard let count = input.number(), count <= input.remaining else { return nil }
        var operations: [Self] = []
        operations.reserveCapacity(count)
        for _ in 0..<count {
            guard let name = input.text(), let method = input.text(), let path = input.text(), let summary = input.optionalText(),
                let parameterCount = input.number(), parameterCount <= input.remaining
            else { return nil }
            var parameters: [OpenAPIOperations.Parameter] = []
            for _ in 0..<parameterCount {
                guard let name = input.text(), let location = input.text().flatMap(OpenAPIOperations.Location.init(rawValue:)),
                    let required = input.flag(), let type = input.optionalText(), let hasAllowed = input.flag(),
                    let allowed = input.list({ $0.text() })
                else { return nil }
                guard let style = input.text(), let explode = input.flag(), let summary = input.optionalText() else { return nil }
                parameters.append(
                    OpenAPIOperations.Parameter(
                        name: name, location: location, required: required, type: type, allowedValues: hasAllowed ? allowed : nil, style: style,
                        explode: explode, summary: summary))
            }
            guard let bodyContentType = input.optionalText(), let bodyRequired = input.flag(), let bodySchema = input.optionalText(),
                let needsAuthorization = input.flag(),
                let responses = input.list({ input -> OpenAPIOperations.DocumentedResponse? in
                    guard let status = input.text(), let summary = input.optionalText(), let contentType = input.optionalText(),
                        let schema = input.optionalText()
                    else { return nil }
                    return OpenAPIOperations.DocumentedResponse(status: status, summary: summary, contentType: contentType, schema: schema)
                })
            else { return nil }
            guard let eventStream = input.optionalText() else { return nil }
            let answer = eventStream.flatMap(OpenAPIOperations.EventStreamAnswer.init(rawValue:))
            guard (eventStream == nil) == (answer == nil) else { return nil }
            operations.append(
                Self(
                    name: name, method: method, path: path, summary: summary, parameters: parameters, bodyContentType: bodyContentType,
                    bodyRequired: bodyRequired, bodySchema: bodySchema, needsAuthorization: needsAuthorization, responses: responses,
                    eventStream: answer))
        }
        return operations
    }
}
