import Callsign
@testable import CallsignOpenAPI
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// OpenAPI documents as published: each deviation found in real API descriptions (OpenAI,
/// Cloudflare, DigitalOcean, Plaid, PagerDuty, Intercom, Discord, Stripe, Xero…) reproduced by a
/// minimal document written here. By default the deviation is repaired, or only what depends on
/// it is left out, with a warning naming the place; strict loading refuses, listing every problem.
@Suite("OpenAPI documents as found in the wild (CallsignOpenAPI)", .hangGuard)
struct OpenAPIWildTests {
    /// One deviation: a document, the warning that names it, and the operations that load.
    struct Deviation: CustomTestStringConvertible, Sendable {
        let label: String
        let yaml: String
        let warning: String
        let operations: [String]
        var testDescription: String { label }
    }

    /// A document: its version line, an info, and `rest` (paths, components) as written.
    static func document(_ rest: String, version: String = "\"3.1.0\"", info: String = "info: {title: Wild, version: \"1\"}") -> String {
        "openapi: \(version)\n\(info)\n\(rest)"
    }

    /// An operation `getThing` at `/thing` answering `schema` as JSON.
    static func answering(_ schema: String, version: String = "\"3.1.0\"") -> String {
        document("""
            paths:
              /thing:
                get:
                  operationId: getThing
                  responses:
                    '200':
                      description: ok
                      content: {application/json: {schema: \(schema)}}
            """, version: version)
    }

    static let deviations: [Deviation] = [
        Deviation(
            label: "3.0's boolean exclusiveMinimum in a 3.1 document (OpenAI)",
            yaml: answering("{type: number, minimum: 0, exclusiveMinimum: true}"),
            warning: "the boolean exclusiveMinimum of OpenAPI 3.0 is read as OpenAPI 3.1's number", operations: ["getThing"]),
        Deviation(
            label: "3.1's numeric exclusiveMaximum in a 3.0 document",
            yaml: answering("{type: number, exclusiveMaximum: 10}", version: "3.0.3"),
            warning: "the number exclusiveMaximum of OpenAPI 3.1 is read as OpenAPI 3.0's bound", operations: ["getThing"]),
        Deviation(
            label: "an integer bound beyond 64 bits (Cloudflare, DigitalOcean)",
            yaml: answering("{type: integer, maximum: 18446744073709551615}"),
            warning: "the integer maximum 18446744073709551615 is not a 64-bit integer", operations: ["getThing"]),
        Deviation(
            label: "a fractional maxLength",
            yaml: answering("{type: string, maxLength: 10.5}"),
            warning: "maxLength 10.5 is not a whole number", operations: ["getThing"]),
        Deviation(
            label: "a string enum listing numbers and null (Plaid)",
            yaml: answering("{type: string, enum: [a, 3, null]}", version: "3.0.0"),
            warning: "the string enum lists values that are not strings", operations: ["getThing"]),
        Deviation(
            label: "nullable in a 3.1 document (OpenAI)",
            yaml: answering("{type: string, nullable: true}"),
            warning: "nullable is OpenAPI 3.0's; it is read as OpenAPI 3.1's type null", operations: ["getThing"]),
        Deviation(
            label: "a type list in a 3.0 document",
            yaml: answering("{type: [string, 'null']}", version: "3.0.3"),
            warning: "a list of types or the type null is OpenAPI 3.1's", operations: ["getThing"]),
        Deviation(
            label: "Swagger's type file",
            yaml: answering("{type: file}", version: "3.0.3"),
            warning: "the type file is OpenAPI 2.0's", operations: ["getThing"]),
        Deviation(
            label: "siblings next to $ref in 3.1 (OpenAI)",
            yaml: answering("{$ref: '#/components/schemas/Pet', required: [name]}") + "\ncomponents: {schemas: {Pet: {type: object}}}",
            warning: "the keywords beside $ref (required) are kept through allOf", operations: ["getThing"]),
        Deviation(
            label: "a schema's examples as a map in 3.1",
            yaml: answering("{type: string, examples: {first: a}}"),
            warning: "a schema's examples is a list in OpenAPI 3.1", operations: ["getThing"]),
        Deviation(
            label: "a boolean required on a property",
            yaml: answering("{type: object, properties: {name: {type: object, required: true}}}"),
            warning: "required must list property names; true is ignored", operations: ["getThing"]),
        Deviation(
            label: "readOnly and writeOnly together",
            yaml: answering("{type: string, readOnly: true, writeOnly: true}"),
            warning: "readOnly and writeOnly cannot both be true", operations: ["getThing"]),
        Deviation(
            label: "boolean subschemas in a 3.0 document",
            yaml: answering("{type: object, properties: {anything: true, nothing: false}}", version: "3.0.3"),
            warning: "a schema written as false is OpenAPI 3.1's; it is read as one that accepts no value", operations: ["getThing"]),
        Deviation(
            label: "a version without its patch number",
            yaml: answering("{type: string}", version: "\"3.1\""),
            warning: "the document's openapi version 3.1 is read as \"3.1.0\"", operations: ["getThing"]),
        Deviation(
            label: "a version written as a number",
            yaml: answering("{type: string}", version: "3.0"),
            warning: "the document's openapi version 3.0 is read as \"3.0.0\"", operations: ["getThing"]),
        Deviation(
            label: "a patch release OpenAPIKit does not know",
            yaml: answering("{type: string}", version: "3.0.9"),
            warning: "the document's openapi version 3.0.9 is read as \"3.0.4\"", operations: ["getThing"]),
        Deviation(
            label: "an info without title and a terms of service that is not a URL",
            yaml: document("paths: {}", info: "info: {version: \"1\", termsOfService: 'see our site'}"),
            warning: "the document's info has no title; \"Untitled API\" is used", operations: []),
        Deviation(
            label: "a path parameter not marked required",
            yaml: document("""
                paths:
                  /pets/{id}:
                    get:
                      operationId: getPet
                      parameters: [{name: id, in: path, schema: {type: integer}}]
                      responses: {'200': {description: ok}}
                """),
            warning: "a path parameter is always required; it is read as required", operations: ["getPet"]),
        Deviation(
            label: "Swagger's in: body parameter",
            yaml: document("""
                paths:
                  /pets:
                    post:
                      operationId: createPet
                      parameters: [{name: pet, in: body, schema: {type: object}}]
                      responses: {'201': {description: ok}}
                """),
            warning: "a parameter in body is OpenAPI 2.0's", operations: ["createPet"]),
        Deviation(
            label: "a response key that is not a status code",
            yaml: document("""
                paths:
                  /pets:
                    get:
                      operationId: listPets
                      responses: {'200': {description: ok}, '200-OK': {description: ok}}
                """),
            warning: "the response key \"200-OK\" is not a status code", operations: ["listPets"]),
        Deviation(
            label: "a 3.0 response without description and an operation without responses",
            yaml: document("""
                paths:
                  /pets:
                    get:
                      operationId: listPets
                      responses: {'200': {content: {application/json: {schema: {type: array}}}}}
                    delete:
                      operationId: clearPets
                """, version: "3.0.3"),
            warning: "has no responses, which OpenAPI 3.0 requires", operations: ["listPets", "clearPets"]),
        Deviation(
            label: "a media type with example and examples",
            yaml: document("""
                paths:
                  /pets:
                    get:
                      operationId: listPets
                      responses:
                        '200':
                          description: ok
                          content: {application/json: {example: [], examples: {none: {value: []}}}}
                """),
            warning: "example and examples cannot stand together; example is ignored", operations: ["listPets"]),
        Deviation(
            label: "a security requirement naming an undefined scheme",
            yaml: document("""
                security: [{api_key: []}]
                paths:
                  /pets:
                    get:
                      operationId: listPets
                      responses: {'200': {description: ok}}
                """),
            warning: "names api_key, which the document does not define", operations: ["listPets"]),
        Deviation(
            label: "an extension in paths",
            yaml: document("""
                paths:
                  x-generated: 2024-01-01
                  /pets:
                    get:
                      operationId: listPets
                      responses: {'200': {description: ok}}
                """),
            warning: "\"x-generated\" in paths is an extension, not a path", operations: ["listPets"]),
        Deviation(
            label: "a recursive schema (Discord, Stripe, Xero)",
            yaml: answering("{$ref: '#/components/schemas/Node'}")
                + "\ncomponents: {schemas: {Node: {type: object, properties: {name: {type: string}, children: {type: array, items: {$ref: '#/components/schemas/Node'}}}}}}",
            warning: "the $ref to #/components/schemas/Node is recursive; below it any value is accepted", operations: ["getThing"]),
        Deviation(
            label: "a $ref to an undefined schema, beside a good operation",
            yaml: document("""
                paths:
                  /good:
                    get: {operationId: good, responses: {'200': {description: ok}}}
                  /bad:
                    get:
                      operationId: bad
                      responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Missing'}}}}}
                """),
            warning: "GET /bad cannot be read (the $ref names Missing, which components › schemas does not define); it is left out",
            operations: ["good"]),
        Deviation(
            label: "an answer naming a schema that names an undefined one, beside a good operation that shares a schema",
            yaml: document("""
                paths:
                  /good:
                    get:
                      operationId: good
                      responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Fine'}}}}}
                  /bad:
                    get:
                      operationId: bad
                      responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Broken'}}}}}
                components:
                  schemas:
                    Fine: {type: object}
                    Broken: {type: object, properties: {owner: {$ref: '#/components/schemas/Missing'}}}
                """),
            warning: "GET /bad cannot be read (the $ref names Missing, which components › schemas does not define); it is left out",
            operations: ["good"]),
        Deviation(
            label: "a response $ref to a request body (PagerDuty)",
            yaml: document("""
                paths:
                  /data:
                    get: {operationId: readData, responses: {'200': {description: ok}}}
                    put: {operationId: writeData, responses: {'200': {$ref: '#/components/requestBodies/Data'}}}
                components: {requestBodies: {Data: {content: {application/json: {schema: {type: object}}}}}}
                """),
            warning: "PUT /data: the response 200 is a $ref to #/components/requestBodies/Data, which is not a response; the operation is left out",
            operations: ["readData"]),
        Deviation(
            label: "Swagger's #/definitions and a $ref into a component's inside (PagerDuty)",
            yaml: answering("{type: object, properties: {a: {$ref: '#/definitions/Pet'}, b: {$ref: '#/components/schemas/Page/properties/total'}}}")
                + "\ncomponents: {schemas: {Pet: {type: string}, Page: {type: object, properties: {total: {type: integer}}}}}",
            warning: "the $ref #/definitions/Pet does not name a component (#/components/kind/name); it is read as any value",
            operations: ["getThing"]),
        Deviation(
            label: "a component with an illegal name, and the operation that uses it",
            yaml: document("""
                paths:
                  /pets:
                    get:
                      operationId: listPets
                      responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Pet List'}}}}}
                  /health:
                    get: {operationId: health, responses: {'200': {description: ok}}}
                components: {schemas: {'Pet List': {type: array}}}
                """),
            warning: "components › schemas › Pet List cannot be read", operations: ["health"]),
        Deviation(
            label: "a Swagger security scheme type",
            yaml: document("""
                paths:
                  /pets:
                    get: {operationId: listPets, responses: {'200': {description: ok}}}
                components: {securitySchemes: {legacy: {type: basic}}}
                """),
            warning: "components › securitySchemes › legacy cannot be read", operations: ["listPets"]),
    ]

    @Test("a known deviation is repaired, or only what depends on it left out, with a warning naming the place", arguments: deviations)
    func tolerant(deviation: Deviation) throws {
        let loaded = try OpenAPIOperations(data: Data(deviation.yaml.utf8), format: .yaml)
        #expect(Set(loaded.operations.map(\.name)) == Set(deviation.operations), "\(loaded.warnings)")
        if !deviation.warning.isEmpty {
            #expect(loaded.warnings.contains { $0.contains(deviation.warning) }, "\(loaded.warnings)")
        }
    }

    @Test("strict loading refuses each deviation, naming it", arguments: deviations)
    func strict(deviation: Deviation) throws {
        let error = try #require(throws: APIError.self) {
            try OpenAPIOperations(data: Data(deviation.yaml.utf8), format: .yaml, strict: true)
        }
        #expect(error.code == .invalidDefinition)
        #expect(error.message.contains("does not follow the specification"), "\(error.message)")
        if !deviation.warning.isEmpty {
            #expect(error.message.contains(deviation.warning), "\(error.message)")
        }
    }

    @Test("strict loading lists every problem at once; APIDefinitions(openAPI:strict:) is the same door")
    func everyProblem() throws {
        let yaml = Self.document("""
            security: [{nokey: []}]
            paths:
              /a/{id}:
                get:
                  operationId: a
                  parameters:
                    - {name: id, in: path, schema: {type: string, enum: [x, 1]}}
                    - {name: n, in: query, schema: {type: number, minimum: 0, exclusiveMinimum: true}}
                  responses: {'200': {description: ok}, x-note: {description: no}}
              /b:
                get:
                  operationId: b
                  responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Missing'}}}}}
            """, version: "\"3.1\"")
        let error = try #require(throws: APIError.self) { try APIDefinitions(openAPI: Data(yaml.utf8), format: .yaml, strict: true) }
        for problem in [
            "openapi version 3.1", "a path parameter is always required", "the string enum", "exclusiveMinimum", "\"x-note\"", "nokey",
            "GET /b cannot be read",
        ] {
            #expect(error.message.contains(problem), "\(problem) in \(error.message)")
        }
        #expect(error.message.contains("(7 problems;"), "\(error.message)")
        // Tolerant: operation a loads, repaired; b is left out.
        let tolerant = try APIDefinitions(openAPI: Data(yaml.utf8), format: .yaml)
        #expect(tolerant.names == ["a"])
        // A document that follows the specification loads the same either way.
        let clean = try OpenAPIOperations(data: Fixture.data("openapi/petstore-3.1.yaml"), format: .yaml, strict: true)
        #expect(clean.operations.count == 4)
    }

    @Test("repaired documents behave as meant: the exclusive bound, the nullable, the recursive schema check real answers")
    func repairedMeaning() async throws {
        let yaml = Self.document("""
            paths:
              /rate:
                get:
                  operationId: getRate
                  parameters: [{name: n, in: query, required: true, schema: {type: integer, minimum: 0, exclusiveMinimum: true}}]
                  responses:
                    '200':
                      description: ok
                      content: {application/json: {schema: {$ref: '#/components/schemas/Node'}}}
            components:
              schemas:
                Node:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string, nullable: true}
                    children: {type: array, items: {$ref: '#/components/schemas/Node'}}
            """)
        let api = try OpenAPIOperations(data: Data(yaml.utf8), format: .yaml)
        try await TestServer.withRunning { server in
            let answers: [JSONValue] = [
                ["name": nil, "children": [["name": "leaf", "children": [7]]]],
                ["children": []],
            ]
            let next = AnswerQueue(answers)
            server.route("/rate") { _ in .json(next.pop()) }
            var configuration = APIClient.Configuration()
            configuration.responses.validators = [api.responseValidator]
            var served = api
            served.baseURL = server.url("/")
            let client = APIClient(definitions: served.definitions, configuration: configuration)
            let request = try served.request("getRate", parameters: ["n": 1])
            // null is allowed (nullable), and the recursive children are accepted as they come.
            _ = try await client.send(request).validate()
            // The required name is still required.
            let error = await #expect(throws: APIError.self) { try await client.send(request).validate() }
            #expect(error?.message.contains("$.name is missing") == true, "\(error?.message ?? "")")
        }
    }

    @Test("one repair repeated 40 times is four warning lines: three places and how many more")
    func groupedWarnings() throws {
        var properties: [String] = []
        for index in 0..<40 { properties.append("p\(index): {type: string, nullable: true}") }
        let loaded = try OpenAPIOperations(data: Data(Self.answering("{type: object, properties: {\(properties.joined(separator: ", "))}}").utf8), format: .yaml)
        let nullable = loaded.warnings.filter { $0.contains("nullable") }
        #expect(nullable.count == 3, "\(loaded.warnings)")
        #expect(loaded.warnings.contains("… and 37 more like these"), "\(loaded.warnings)")
    }

    @Test("YAML in an OpenAPI document reads booleans as YAML 1.2 does: a status off or a country NO stays text")
    func yamlBooleans() throws {
        let loaded = try OpenAPIOperations(
            data: Data(Self.document("""
                paths:
                  /droplet:
                    get:
                      operationId: getDroplet
                      parameters: [{name: status, in: query, schema: {type: string, enum: [on, off, NO]}}]
                      responses: {'200': {description: ok}}
                """).utf8), format: .yaml)
        #expect(try loaded.operation(named: "getDroplet").parameters.first?.allowedValues == ["on", "off", "NO"])
        #expect(loaded.warnings.isEmpty, "\(loaded.warnings)")
        // Callsign's own definitions files keep YAML 1.1's reading.
        let definitions = try APIDefinitions(data: Data("Ping:\n  path: ping\n  needsAuthorization: yes\n".utf8), format: .yaml)
        #expect(try definitions.definition(named: "Ping").needsAuthorization == true)
    }

    @Test("callsign describe shows parameters, body and responses, and --json the same as JSON; --strict refuses")
    func describe() async throws {
        try CLIRunner.requireBuilt()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-wild-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("api.yaml")
        try Data(Self.document("""
            paths:
              /pets/{id}:
                put:
                  operationId: updatePet
                  summary: Replace a pet
                  parameters:
                    - {name: id, in: path, required: true, schema: {type: integer}, description: The pet}
                    - {name: mode, in: query, schema: {type: string, enum: [fast, safe]}}
                  requestBody:
                    required: true
                    content: {application/json: {schema: {type: object, properties: {name: {type: string}}}}}
                  responses:
                    '200': {description: The pet as stored, content: {application/json: {schema: {type: object, nullable: true}}}}
                    default: {description: An error}
            """).utf8).write(to: file)
        let text = try await CLIRunner.run(["describe", "updatePet", "-D", file.path])
        #expect(text.status == 0, "\(text.standardError)")
        for line in ["updatePet: PUT /pets/{id}", "Replace a pet", "id    path  integer, required  — The pet", "mode  query  string, one of fast | safe",
                     "Body: application/json, required", "\"name\"", "Responses:", "200  application/json  — The pet as stored", "default  -  — An error"] {
            #expect(text.standardOutput.contains(line), "\(line) in:\n\(text.standardOutput)")
        }
        #expect(text.standardError.contains("nullable is OpenAPI 3.0's") == false, "describe prints no load warnings")
        let json = try await CLIRunner.run(["describe", "updatePet", "-D", file.path, "--json"])
        #expect(json.status == 0, "\(json.standardError)")
        let object = try JSONValue(parsing: Data(json.standardOutput.utf8))
        #expect(object["method"] == "PUT" && object["path"] == "/pets/{id}")
        #expect(object["parameters"]?[1]?["enum"] == ["fast", "safe"])
        #expect(object["body"]?["schema"]?["properties"]?["name"]?["type"] == "string")
        #expect(object["responses"]?[0]?["status"] == "200" && object["responses"]?[1]?["status"] == "default")
        let strict = try await CLIRunner.run(["list", "-D", file.path, "--strict"])
        #expect(strict.status != 0)
        #expect(strict.standardError.contains("nullable is OpenAPI 3.0's"), "\(strict.standardError)")
    }
}

/// Answers handed out in order to a test server's handler.
private final class AnswerQueue: Sendable {
    private let answers: Mutex<[JSONValue]>

    init(_ answers: [JSONValue]) {
        self.answers = Mutex(answers)
    }

    func pop() -> JSONValue {
        answers.withLock { $0.isEmpty ? .null : $0.removeFirst() }
    }
}
