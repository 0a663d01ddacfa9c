public import Callsign
public import Foundation

/// A definitions file or an OpenAPI document, told apart by its `openapi` key, read once.
package enum DefinitionsFile {
    package static func load(contentsOf url: URL) throws(APIError) -> (definitions: APIDefinitions, openAPI: OpenAPIOperations?) {
        // Unknown extensions and unreadable files get the definitions loader's own errors.
        guard let format = APIDefinitions.Format(pathExtension: url.pathExtension), let data = try? Data(contentsOf: url) else {
            return (try APIDefinitions(contentsOf: url), nil)
        }
        let document = try DefinitionDocument(data: data, format: format)
        guard document.root["openapi"]?.stringValue != nil else { return (try APIDefinitions(document: document), nil) }
        let operations = try OpenAPIOperations(root: document.root)
        return (operations.definitions, operations)
    }
}

extension APIDefinitions {
    /// The definitions of an OpenAPI document: one API per operation (see ``OpenAPIOperations``).
    /// Calls by name then send what the call gives; ``OpenAPIOperations/request(_:parameters:)``
    /// also places and checks parameters as the document says.
    ///
    /// ```swift
    /// let definitions = try APIDefinitions(openAPI: Data(contentsOf: petstoreFile), format: .yaml)
    /// ```
    public init(openAPI data: Data, format: Format, limits: Limits = .default) throws(APIError) {
        self = try OpenAPIOperations(data: data, format: format, limits: limits).definitions
    }
}

/// A document with `operations` operations, each answering a schema that refers to the next
/// through `depth` `$ref`s: for load-time benchmarks and tests.
package enum OpenAPIFixtures {
    package static func large(operations: Int, depth: Int) -> Data {
        var text = "openapi: \"3.1.0\"\ninfo: {title: Large, version: \"1\"}\nservers: [{url: \"http://127.0.0.1/\"}]\npaths:\n"
        for index in 0..<operations {
            text += "  /items\(index)/{id}:\n    get:\n      operationId: getItem\(index)\n"
            text += "      parameters: [{name: id, in: path, required: true, schema: {type: integer}}, {name: q, in: query, schema: {type: string, enum: [a, b]}}]\n"
            text += "      responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/S\(index % depth)'}}}}}\n"
        }
        text += "components:\n  schemas:\n"
        for level in 0..<depth {
            let next = level + 1 < depth ? "{$ref: '#/components/schemas/S\(level + 1)'}" : "{type: string}"
            text += "    S\(level): {type: object, properties: {value: {type: integer}, next: \(next)}}\n"
        }
        return Data(text.utf8)
    }
}
