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
