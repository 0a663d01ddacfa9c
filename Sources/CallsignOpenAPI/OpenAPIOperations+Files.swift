public import Callsign
public import Foundation

/// A definitions file or an OpenAPI document, told apart by its `openapi` key, read once.
package enum DefinitionsFile {
    /// With a `cache`, an OpenAPI document kept there is read back without parsing the file, and
    /// one loaded is kept (see ``DescriptionCache``); a definitions file is read as it is (its
    /// one pass over the file is what a cache entry would cost).
    package static func load(
        contentsOf url: URL, limits: Limits = .default, strict: Bool = false, cache: DescriptionCache? = nil
    ) throws(APIError) -> (definitions: APIDefinitions, openAPI: OpenAPIOperations?) {
        // An unknown extension gets the definitions loader's own error.
        guard let format = APIDefinitions.Format(pathExtension: url.pathExtension) else { return (try APIDefinitions(contentsOf: url), nil) }
        let data = try APIDefinitions.read(url, limits: limits)
        let key = cache.map { _ in DescriptionCache.key(for: data, format: format, limits: limits, strict: strict) }
        var kept: (operations: OpenAPIOperations?, outcome: DescriptionCache.Outcome)?
        if let cache, let key {
            kept = cache.operations(for: key)
            if let operations = kept?.operations { return (operations.definitions, operations) }
        }
        let document = try DefinitionDocument(data: data, format: format, limits: limits)
        guard OpenAPIOperations.version(of: document.root) != nil else { return (try APIDefinitions(document: document), nil) }
        let operations = try OpenAPIOperations(root: document.root, limits: limits, strict: strict)
        if let cache, let key, kept?.outcome != .unavailable { cache.keep(operations, for: key) }
        return (operations.definitions, operations)
    }
}

extension APIDefinitions {
    /// The definitions of an OpenAPI document: one API per operation (see ``OpenAPIOperations``).
    /// Calls by name then send what the call gives; ``OpenAPIOperations/request(_:parameters:)``
    /// also places and checks parameters as the document says.
    ///
    /// `strict` refuses a document that strays from the specification instead of repairing it
    /// (see ``OpenAPIOperations/init(data:format:limits:strict:cache:)``).
    ///
    /// ```swift
    /// let definitions = try APIDefinitions(openAPI: Data(contentsOf: petstoreFile), format: .yaml)
    /// ```
    public init(openAPI data: Data, format: Format, limits: Limits = .default, strict: Bool = false) throws(APIError) {
        self = try OpenAPIOperations(data: data, format: format, limits: limits, strict: strict).definitions
    }
}

/// A document with `operations` operations, each answering a schema that refers to the next
/// through `depth` `$ref`s: for load-time benchmarks and tests, as YAML or JSON.
package enum OpenAPIFixtures {
    package static func large(operations: Int, depth: Int, format: APIDefinitions.Format = .yaml) -> Data {
        let depth = max(1, depth)
        guard format == .yaml else {
            var paths: [String: JSONValue] = [:]
            for index in 0..<max(0, operations) {
                let parameters: JSONValue = [
                    ["name": "id", "in": "path", "required": true, "schema": ["type": "integer"]],
                    ["name": "q", "in": "query", "schema": ["type": "string", "enum": ["a", "b"]]],
                ]
                let schema: JSONValue = ["$ref": .string("#/components/schemas/S\(index % depth)")]
                paths["/items\(index)/{id}"] = [
                    "get": [
                        "operationId": .string("getItem\(index)"), "parameters": parameters,
                        "responses": ["200": ["description": "ok", "content": ["application/json": ["schema": schema]]]],
                    ]
                ]
            }
            var schemas: [String: JSONValue] = [:]
            for level in 0..<depth {
                let next: JSONValue = level + 1 < depth ? ["$ref": .string("#/components/schemas/S\(level + 1)")] : ["type": "string"]
                schemas["S\(level)"] = ["type": "object", "properties": ["value": ["type": "integer"], "next": next]]
            }
            let root: JSONValue = [
                "openapi": "3.1.0", "info": ["title": "Large", "version": "1"], "servers": [["url": "http://127.0.0.1/"]],
                "paths": .object(paths), "components": ["schemas": .object(schemas)],
            ]
            return root.jsonData()
        }
        var text = "openapi: \"3.1.0\"\ninfo: {title: Large, version: \"1\"}\nservers: [{url: \"http://127.0.0.1/\"}]\npaths:\n"
        for index in 0..<max(0, operations) {
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
