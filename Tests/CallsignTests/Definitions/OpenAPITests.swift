import Callsign
@testable import CallsignOpenAPI
import CallsignTesting
import Foundation
import Synchronization
import Testing

@Suite("OpenAPI documents as definitions (CallsignOpenAPI)", .hangGuard)
struct OpenAPITests {
    static let versions = ["petstore-3.0.yaml", "petstore-3.1.yaml"]

    private func petstore(_ file: String) throws -> OpenAPIOperations {
        try OpenAPIOperations(data: Fixture.data("openapi/\(file)"), format: .yaml)
    }

    /// The petstore, served for real: list, create, show and delete photos.
    private func servePetstore(_ server: TestServer) {
        let pets = Mutex<[Int: JSONValue]>([1: ["id": 1, "name": "Rex"], 2: ["id": 2, "name": "Tom", "tag": "cat"]])
        server.route("/v1/pets") { request in
            let segments = request.pathSegments
            if segments.count == 4, segments[3] == "photos", request.method == "DELETE" {
                return request.header("Authorization") == nil ? .json(["code": 401, "message": "sign in"], status: 401) : ServerResponse(status: 204)
            }
            if segments.count == 3, let id = Int(segments[2]) {
                guard let pet = pets.withLock({ $0[id] }) else { return .json(["code": 404, "message": "no pet"], status: 404) }
                return .json(pet)
            }
            if request.method == "POST" {
                guard let body = try? JSONValue(parsing: request.body), let id = body["id"]?.intValue else {
                    return .json(["code": 400, "message": "bad pet"], status: 400)
                }
                pets.withLock { $0[id] = body }
                return ServerResponse(status: 201)
            }
            let limit = request.rawQuery.flatMap { query in
                query.split(separator: "&").first { $0.hasPrefix("limit=") }.flatMap { Int($0.dropFirst(6)) }
            } ?? 100
            let all = pets.withLock { $0.keys.sorted().compactMap { $0 } }.prefix(limit)
            return .json(.array(all.compactMap { id in pets.withLock { $0[id] } }))
        }
    }

    @Test("every operation of the petstore becomes an API, in 3.0 and 3.1", arguments: versions)
    func mapping(file: String) throws {
        let petstore = try petstore(file)
        #expect(petstore.operations.map(\.name) == ["listPets", "createPets", "showPetById", "deletePetsPetIdPhotos"], "by path, then method")
        #expect(petstore.warnings.contains { $0.contains("no operationId") })
        #expect(petstore.definitions.defaultDefinition.baseURL?.absoluteString == "http://petstore.swagger.io/v1/")
        let list = try petstore.definitions.definition(named: "listPets")
        #expect(list.responseType == .objects)
        #expect(list.acceptedStatusCodes?.contains(200) == true)
        let show = try petstore.definitions.definition(named: "showPetById")
        #expect(show.path == "pets/{petId}")
        #expect(show.responseType == .object)
        let create = try petstore.definitions.definition(named: "createPets")
        #expect(create.method == .post && create.contentType == .json && create.acceptedStatusCodes?.contains(201) == true)
        #expect(try petstore.definitions.definition(named: "deletePetsPetIdPhotos").needsAuthorization == true)
        #expect(try petstore.operation(named: "listPets").parameters.map(\.name) == ["limit", "tags", "sort"])
    }

    @Test("every petstore operation is called for real, parameters placed as the document says", arguments: versions)
    func calls(file: String) async throws {
        var petstore = try petstore(file)
        try await TestServer.withRunning { server in
            servePetstore(server)
            petstore.baseURL = server.url("/v1/")
            let client = APIClient(
                definitions: petstore.definitions,
                configuration: OpenAPIOperations.clientConfiguration(.init {
                    $0.authentication = .bearer("t0ken")
                    $0.authentication?.additionalOrigins = [server.baseURL]
                }))
            let pets = try await client.send(petstore.request("listPets", parameters: ["limit": "1", "tags": ["a", "b"], "sort": "name"]))
            #expect(try pets.json().arrayValue?.count == 1)
            #expect(server.requests.last?.rawQuery?.contains("limit=1") == true)
            #expect(server.requests.last?.rawQuery?.contains("tags=a&tags=b") == true, "\(server.requests.last?.rawQuery ?? "")")

            let created = try await client.send(petstore.request("createPets", parameters: ["id": 3, "name": "Kit"]))
            #expect(created.status.code == 201)
            let shown = try await client.send(petstore.request("showPetById", parameters: ["petId": "3", "X-Request-ID": "r-1"]))
            #expect(try shown.json()["name"] == "Kit")
            #expect(server.requests.last?.rawPath == "/v1/pets/3")
            #expect(server.requests.last?.header("X-Request-ID") == "r-1")
            let deleted = try await client.send(petstore.request("deletePetsPetIdPhotos", parameters: ["petId": 3]))
            #expect(deleted.status.code == 204)
            #expect(server.requests.last?.header("Authorization") == "Bearer t0ken")
        }
    }

    @Test("security schemes send the secret you give as the document says: bearer, basic, API keys in header, query or cookie", arguments: versions)
    func security(file: String) async throws {
        var petstore = try petstore(file)
        #expect(petstore.securitySchemes["api_key"] == .headerKey("X-API-Key"))
        #expect(petstore.securitySchemes["oidc"] == .unsupported("openIdConnect"))
        try await TestServer.withRunning { server in
            servePetstore(server)
            petstore.baseURL = server.url("/v1/")
            let cases: [(String, String, (ServerRequest) -> Bool)] = [
                ("bearerAuth", "t1", { $0.header("Authorization") == "Bearer t1" }),
                ("basicAuth", "ann:pw", { $0.header("Authorization") == "Basic " + Data("ann:pw".utf8).base64EncodedString() }),
                ("api_key", "k1", { $0.header("X-API-Key") == "k1" }),
                ("query_key", "k2", { $0.rawQuery == "key=k2" }),
                ("cookie_key", "s3", { $0.header("Cookie") == "session=s3" }),
            ]
            for (scheme, secret, check) in cases {
                let authentication = try petstore.authentication(scheme: scheme, secret: secret)
                let client = APIClient(definitions: petstore.definitions, configuration: .init { $0.authentication = authentication })
                _ = try? await client.send(petstore.request("deletePetsPetIdPhotos", parameters: ["petId": 1]))
                let last = try #require(server.requests.last)
                #expect(check(last), "\(scheme): \(last.headers) \(last.rawQuery ?? "")")
            }
        }
        #expect(throws: APIError.self) { try petstore.authentication(scheme: "oidc", secret: "x") }
        #expect(throws: APIError.self) { try petstore.authentication(scheme: "nope", secret: "x") }
        #expect(throws: APIError.self) { try petstore.authentication(scheme: "basicAuth", secret: "no-colon") }
    }

    @Test("responses are checked against their schema when asked: types, required properties, items", arguments: versions)
    func responseValidation(file: String) async throws {
        var petstore = try petstore(file)
        try await TestServer.withRunning { server in
            servePetstore(server)
            server.route("/v1/pets/9") { _ in .json(["id": "nine", "name": "Odd"]) }
            server.route("/v1/pets/8") { _ in .json(["id": 8]) }
            petstore.baseURL = server.url("/v1/")
            let checking = APIClient(
                definitions: petstore.definitions, configuration: .init { $0.responses.validators = [petstore.responseValidator] })
            let good = try await checking.send(petstore.request("showPetById", parameters: ["petId": 1])).validate()
            #expect(good.status.code == 200)
            _ = try await checking.send(petstore.request("listPets")).validate()
            for (id, problem) in [(9, "$.id is not of type integer"), (8, "$.name is missing")] {
                let error = await #expect(throws: APIError.self) {
                    _ = try await checking.send(petstore.request("showPetById", parameters: ["petId": .int(id)])).validate()
                }
                #expect(error?.code == .invalidResponse)
                #expect(error?.message.contains(problem) == true, "\(error?.message ?? "")")
            }
            // Off by default: the same answer passes a client without the validator.
            let plain = APIClient(definitions: petstore.definitions)
            #expect(try await plain.send(petstore.request("showPetById", parameters: ["petId": 9])).validate().status.code == 200)
        }
    }

    @Test("missing required parameters, wrong types and values outside an enum fail before a byte is sent, naming the parameter")
    func validation() throws {
        let petstore = try petstore("petstore-3.0.yaml")
        let cases: [(String, Parameters, String)] = [
            ("showPetById", [:], "petId"),
            ("showPetById", ["petId": "seven"], "petId"),
            ("listPets", ["limit": "many"], "limit"),
            ("listPets", ["sort": "age"], "sort"),
            ("createPets", [:], "body"),
            ("listPets", ["unknown": 1], "unknown"),
        ]
        for (operation, parameters, named) in cases {
            let error = #expect(throws: APIError.self, "\(operation) \(parameters)") { try petstore.request(operation, parameters: parameters) }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message.contains(named) == true, "\(error?.message ?? "")")
        }
        #expect(throws: APIError.self) { try petstore.request("noSuchOperation") }
    }

    @Test("hostile or foreign documents are refused with a clear error")
    func refusals() throws {
        #expect(throws: APIError.self) { try OpenAPIOperations(data: Data("DEFAULT:\n  baseURL: http://x/\n".utf8), format: .yaml) }
        #expect(throws: APIError.self) { try OpenAPIOperations(data: Data("openapi: \"2.0\"\n".utf8), format: .yaml) }
        #expect(throws: APIError.self) { try OpenAPIOperations(data: Data("openapi: \"3.0.0\"\npaths: 7\n".utf8), format: .yaml) }
        // A YAML alias bomb goes through Callsign's bounded reader first.
        var bomb = "openapi: \"3.0.0\"\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...9 { bomb += "b\(level): &b\(level) [" + Array(repeating: level == 1 ? "*a" : "*b\(level - 1)", count: 10).joined(separator: ", ") + "]\n" }
        #expect(throws: APIError.self) { try OpenAPIOperations(data: Data(bomb.utf8), format: .yaml) }
        #expect(!OpenAPIOperations.isOpenAPI(Data("Users:\n  path: users\n".utf8), format: .yaml))
    }

    @Test(
        "the OpenAPI Initiative's other examples load: allOf, path-level parameters, callbacks, links",
        arguments: [
            "petstore-expanded-3.0.yaml", "petstore-expanded-3.1.yaml", "callback-example-3.0.yaml", "link-example-3.0.yaml",
            "uspto-3.0.yaml", "api-with-examples-3.0.yaml",
        ])
    func examples(file: String) throws {
        let operations = try OpenAPIOperations(data: Fixture.data("openapi/\(file)"), format: .yaml)
        switch file {
        case let name where name.hasPrefix("petstore-expanded"):
            #expect(Set(operations.operations.map(\.name)) == ["findPets", "addPet", "find pet by id", "deletePet"])
            #expect(try operations.definitions.definition(named: "findPets").responseType == .objects)
            #expect(try operations.definitions.definition(named: "find pet by id").responseType == .object, "allOf of objects is an object")
            let delete = try operations.request("deletePet", parameters: ["id": 7])
            #expect(delete.method == .delete)
            #expect(throws: APIError.self) { try operations.request("deletePet") }
            #expect(operations.definitions.defaultDefinition.baseURL?.absoluteString == "https://petstore.swagger.io/v2/")
        case "uspto-3.0.yaml":
            // Server variables at their defaults; a form body; path parameters that must be given.
            #expect(operations.definitions.defaultDefinition.baseURL?.absoluteString == "https://developer.uspto.gov/ds-api/")
            #expect(try operations.definitions.definition(named: "perform-search").contentType == .formURLEncoded)
            #expect(try operations.definitions.definition(named: "list-data-sets").responseType == .object)
            let search = try operations.request("perform-search", parameters: ["dataset": "oa_citations", "version": "v1", "criteria": "*:*"])
            #expect(search.parameters["criteria"] == "*:*")
            #expect(throws: APIError.self) { try operations.request("list-searchable-fields", parameters: ["dataset": "x"]) }
        case "api-with-examples-3.0.yaml":
            #expect(Set(operations.operations.map(\.name)) == ["listVersionsv2", "getVersionDetailsv2"])
            #expect(try operations.definitions.definition(named: "getVersionDetailsv2").acceptedStatusCodes == [200, 203])
            #expect(operations.definitions.defaultDefinition.baseURL == nil, "no servers: the client's base URL applies")
        case "callback-example-3.0.yaml":
            // The callback is for the server to call: the one operation is the subscription.
            #expect(operations.operations.map(\.name) == ["postStreams"])
            #expect(throws: APIError.self) { try operations.request("postStreams") }
            #expect(try operations.request("postStreams", parameters: ["callbackUrl": "https://example.com"]).query["callbackUrl"] == "https://example.com")
        default:
            #expect(operations.operations.count == 3)
            #expect(throws: APIError.self) { try operations.request("getPullRequestsByRepository", parameters: ["username": "a", "slug": "b", "state": "closed"]) }
            #expect(try operations.definitions.definition(named: "getRepositoriesByOwner").responseType == .objects)
        }
    }

    @Test("a document with 1,000 operations and $ref chains 20 deep loads, every operation callable by name")
    func large() throws {
        let operations = try OpenAPIOperations(data: OpenAPIFixtures.large(operations: 1_000, depth: 20), format: .yaml)
        #expect(operations.operations.count == 1_000)
        #expect(try operations.definitions.definition(named: "getItem999").responseType == .object)
        let request = try operations.request("getItem7", parameters: ["id": "7", "q": "a"])
        #expect(request.query["q"] == "a")
        let definitions = try APIDefinitions(openAPI: OpenAPIFixtures.large(operations: 3, depth: 2), format: .yaml)
        #expect(definitions.names.count == 3)
        #expect(throws: APIError.self) { try APIDefinitions(data: OpenAPIFixtures.large(operations: 1, depth: 1), format: .yaml) }
    }

    @Test("describe's schemas are the document's, every $ref expanded: through shared components, referenced responses and bodies")
    func schemaTexts() throws {
        let document: JSONValue = [
            "openapi": "3.1.0", "info": ["title": "T", "version": "1"],
            "paths": [
                "/pets/{id}/": [
                    "put": [
                        "operationId": "putPet",
                        "parameters": [["name": "id", "in": "path", "required": true, "schema": ["type": "integer"]]],
                        "requestBody": ["$ref": "#/components/requestBodies/PetBody"],
                        "responses": [
                            "200": ["description": "ok", "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Pet"]]]],
                            "4xx": ["$ref": "#/components/responses/Problem"],
                        ],
                    ]
                ]
            ],
            "components": [
                "schemas": [
                    "Pet": ["type": "object", "properties": ["name": ["type": "string"], "owner": ["$ref": "#/components/schemas/Owner"]]],
                    "Owner": ["type": "object", "properties": ["id": ["type": "integer"]]],
                ],
                "requestBodies": ["PetBody": ["content": ["application/json": ["schema": ["$ref": "#/components/schemas/Pet"]]]]],
                "responses": [
                    "Problem": ["description": "bad", "content": ["application/problem+json": ["schema": ["type": "object", "properties": ["title": ["type": "string"]]]]]]
                ],
            ],
        ]
        let api = try OpenAPIOperations(data: document.jsonData(), format: .json)
        let operation = try api.operation(named: "putPet")
        let pet = #"{"properties":{"name":{"type":"string"},"owner":{"properties":{"id":{"type":"integer"}},"type":"object"}},"type":"object"}"#
        #expect(operation.bodySchema == pet)
        #expect(operation.responses.map(\.status) == ["200", "4XX"])
        #expect(operation.responses.first?.schema == pet)
        #expect(operation.responses.last?.contentType == "application/problem+json")
        #expect(operation.responses.last?.schema == #"{"properties":{"title":{"type":"string"}},"type":"object"}"#)
    }

    @Test("the CLI lists, describes and calls operations of an OpenAPI document")
    func commandLine() async throws {
        try CLIRunner.requireBuilt()
        let file = Fixture.url("openapi/petstore-3.0.yaml").path
        let list = try await CLIRunner.run(["list", "-D", file])
        #expect(list.status == 0)
        #expect(list.standardOutput.contains("showPetById") && list.standardOutput.contains("/pets/{petId}") && list.standardOutput.contains("Info for a specific pet"))
        let describe = try await CLIRunner.run(["describe", "listPets", "-D", file])
        #expect(describe.standardOutput.contains("sort   query  string, one of name | id"), "\(describe.standardOutput)")
        try await TestServer.withRunning { server in
            servePetstore(server)
            let call = try await CLIRunner.run(["call", "showPetById", "-D", file, "-p", "petId=1", "--base-url", server.url("/v1/").absoluteString])
            #expect(call.status == 0, "\(call.standardError)")
            #expect(call.standardOutput.contains("Rex"))
            let listed = try await CLIRunner.run(["call", "listPets", "-D", file, "-p", "tags:=[\"a\",\"b\"]", "--base-url", server.url("/v1/").absoluteString])
            #expect(listed.status == 0, "\(listed.standardError)")
            #expect(server.requests.last?.rawQuery == "tags=a&tags=b")
            let bad = try await CLIRunner.run(["call", "showPetById", "-D", file, "-p", "petId=x", "--base-url", server.url("/v1/").absoluteString])
            #expect(bad.status == 65)
            #expect(bad.standardError.contains("petId"))
        }
    }

    @Test("the CLI sends --api-key as the document's apiKey scheme that --security-scheme names, and never prints it")
    func commandLineKeys() async throws {
        try CLIRunner.requireBuilt()
        let file = Fixture.url("openapi/petstore-3.0.yaml").path
        try await TestServer.withRunning { server in
            servePetstore(server)
            let base = ["call", "showPetById", "-D", file, "-p", "petId=1", "--base-url", server.url("/v1/").absoluteString]
            let ambiguous = try await CLIRunner.run(base + ["--api-key", "k-123"])
            #expect(ambiguous.status == 64)
            #expect(ambiguous.standardError.contains("api_key, cookie_key, query_key"), "\(ambiguous.standardError)")
            #expect(server.requests.isEmpty)

            let header = try await CLIRunner.run(base + ["--api-key-env", "PETSTORE_KEY", "--security-scheme", "api_key", "-v"], environment: ["PETSTORE_KEY": "k-123"])
            #expect(header.status == 0, "\(header.standardError)")
            #expect(server.requests.last?.header("X-API-Key") == "k-123")
            #expect(!header.standardError.contains("k-123") && !header.standardOutput.contains("k-123"), "verbose output never shows the key")

            _ = try await CLIRunner.run(base + ["--api-key", "k-456", "--security-scheme", "query_key"])
            #expect(server.requests.last?.rawQuery == "key=k-456")
            _ = try await CLIRunner.run(base + ["--bearer", "t-789", "--security-scheme", "bearerAuth"])
            #expect(server.requests.last?.header("Authorization") == "Bearer t-789")

            let unsupported = try await CLIRunner.run(base + ["--api-key", "k", "--security-scheme", "oidc"])
            #expect(unsupported.status != 0)
            #expect(unsupported.standardError.contains("openIdConnect"), "\(unsupported.standardError)")
            let both = try await CLIRunner.run(base + ["--api-key", "k", "--bearer", "t"])
            #expect(both.status == 64)
        }
    }

    @Test("what the mapping does not act on is named in a load warning: callbacks, links, webhooks, styles, discriminators")
    func unsupportedWarnings() throws {
        let callback = try OpenAPIOperations(data: Fixture.data("openapi/callback-example-3.0.yaml"), format: .yaml)
        #expect(callback.warnings.contains { $0.contains("has callbacks (onData)") }, "\(callback.warnings)")
        let link = try OpenAPIOperations(data: Fixture.data("openapi/link-example-3.0.yaml"), format: .yaml)
        #expect(link.warnings.contains { $0.contains("response links") && $0.contains("are not followed") }, "\(link.warnings)")
        let yaml = """
            openapi: 3.1.0
            info: {title: Odd, version: "1"}
            webhooks:
              newPet: {post: {responses: {'200': {description: ok}}}}
            paths:
              /copies/{id}:
                get:
                  operationId: getItem
                  responses: {'200': {description: ok}}
              /items/{id}:
                get:
                  operationId: getItem
                  parameters:
                    - {name: id, in: path, required: true, style: matrix, schema: {type: integer}}
                    - {name: filter, in: query, content: {application/json: {schema: {type: object}}}}
                  responses:
                    '200':
                      description: ok
                      content:
                        application/json:
                          schema:
                            oneOf: [{$ref: '#/components/schemas/Cat'}, {$ref: '#/components/schemas/Dog'}]
                            discriminator: {propertyName: kind}
            components:
              schemas:
                Cat: {type: object, properties: {kind: {type: string}}}
                Dog: {type: object, properties: {kind: {type: string}}}
            """
        let odd = try OpenAPIOperations(data: Data(yaml.utf8), format: .yaml)
        let expected = [
            "webhooks (newPet)", "path parameter \"id\" has the style matrix", "parameter \"filter\" is described by content (application/json)",
            "does not use the schema's discriminator", "GET /items/{id} repeats the operationId \"getItem\"; it is called \"getItemsId\"",
        ]
        #expect(odd.operations.map(\.name) == ["getItem", "getItemsId"], "a repeated operationId is renamed, never dropped")
        for phrase in expected { #expect(odd.warnings.contains { $0.contains(phrase) }, "\(phrase) in \(odd.warnings)") }
    }
}
