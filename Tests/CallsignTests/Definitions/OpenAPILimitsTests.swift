import Callsign
@testable import CallsignOpenAPI
import Foundation
import Testing

/// The OpenAPI document door (``DocumentStructure``, ``Limits``): generated documents at and past
/// the bounds get a clear error, never a crash; documents under them load whole.
@Suite("OpenAPI documents at the limits (CallsignOpenAPI)", .hangGuard)
struct OpenAPILimitsTests {
    /// A JSON document with one operation whose 200 answer is `#/components/schemas/S0`, and the
    /// given schemas.
    /// Schemas S0…S`levels`, each naming the next twice: 2^`levels` values once expanded.
    private func doubling(levels: Int) -> [String: JSONValue] {
        var schemas: [String: JSONValue] = ["S\(levels)": ["type": "string"]]
        for level in 0..<levels {
            let next: JSONValue = ["$ref": .string("#/components/schemas/S\(level + 1)")]
            schemas["S\(level)"] = ["type": "object", "properties": ["a": next, "b": next]]
        }
        return schemas
    }

    private func document(schemas: [String: JSONValue], body: Bool = false) -> Data {
        var operation: JSONValue = [
            "operationId": "getItem",
            "responses": ["200": ["description": "ok", "content": ["application/json": ["schema": ["$ref": "#/components/schemas/S0"]]]]],
        ]
        if body {
            operation = [
                "operationId": "getItem",
                "requestBody": ["content": ["application/json": ["schema": ["$ref": "#/components/schemas/S0"]]]],
                "responses": ["200": ["description": "ok", "content": ["application/json": ["schema": ["$ref": "#/components/schemas/S0"]]]]],
            ]
        }
        let root: JSONValue = [
            "openapi": "3.1.0", "info": ["title": "Limits", "version": "1"], "servers": [["url": "http://127.0.0.1/"]],
            "paths": ["/item": ["post": operation]], "components": ["schemas": .object(schemas)],
        ]
        return root.jsonData()
    }

    /// `S0` → `S1` → … → `S(links - 1)`, each an object whose property `next` is the next; each
    /// link nests `padding` objects more before its `$ref`.
    private func chain(links: Int, padding: Int = 0) -> [String: JSONValue] {
        var schemas: [String: JSONValue] = [:]
        for level in 0..<links {
            var next: JSONValue = level + 1 < links ? ["$ref": .string("#/components/schemas/S\(level + 1)")] : ["type": "string"]
            for _ in 0..<padding { next = ["type": "object", "properties": ["inner": next]] }
            schemas["S\(level)"] = ["type": "object", "properties": ["value": ["type": "integer"], "next": next]]
        }
        return schemas
    }

    private func refusal(_ load: () throws -> Void) -> APIError? {
        do {
            try load()
            return nil
        } catch let error as APIError {
            return error
        } catch {
            return nil
        }
    }

    @Test("a $ref chain 10,000 deep is refused with the bound and the chain named, without a crash")
    func deepChain() throws {
        let data = document(schemas: chain(links: 10_000))
        let error = try #require(refusal { _ = try OpenAPIOperations(data: data, format: .json) })
        #expect(error.code == .invalidDefinition)
        #expect(error.message.contains("more than 64 $refs") && error.message.contains("Limits.maximumReferenceDepth"), "\(error.message)")
        #expect(error.message.contains("#/components/schemas/S0"), "\(error.message)")
    }

    @Test("a $ref chain at the bound loads, and the bound is configurable")
    func chainAtBound() throws {
        let data = document(schemas: chain(links: Limits.default.maximumReferenceDepth), body: true)
        let operations = try OpenAPIOperations(data: data, format: .json)
        #expect(operations.operations.map(\.name) == ["getItem"])
        #expect(operations.operations.first?.bodySchema?.contains("\"next\"") == true)
        #expect(try operations.definitions.definition(named: "getItem").responseType == .object)
        let tighter = Limits { $0.maximumReferenceDepth = 10 }
        let error = try #require(refusal { _ = try OpenAPIOperations(data: data, format: .json, limits: tighter) })
        #expect(error.message.contains("more than 10 $refs"), "\(error.message)")
        // Ten links exactly are within ten.
        _ = try OpenAPIOperations(data: document(schemas: chain(links: 10)), format: .json, limits: tighter)
    }

    @Test("nesting close to the depth bound once $refs are expanded loads; past it, a clear error")
    func expandedDepth() throws {
        // 60 links of 8 levels each: about 490 levels once expanded, under the 512 of maximumJSONDepth.
        let deep = try OpenAPIOperations(data: document(schemas: chain(links: 60, padding: 3), body: true), format: .json)
        #expect(deep.operations.count == 1)
        #expect(deep.operations.first?.bodySchema?.contains("\"inner\"") == true)
        // 10 levels each: about 610.
        let error = try #require(refusal { _ = try OpenAPIOperations(data: document(schemas: chain(links: 60, padding: 4)), format: .json) })
        #expect(error.code == .invalidDefinition)
        #expect(error.message.contains("nests deeper than 512 levels once its $refs are expanded"), "\(error.message)")
    }

    @Test("a $ref cycle is cut where it closes, with a warning naming it; strict loading refuses it", arguments: ["S0", "S1"])
    func cycle(start: String) throws {
        var schemas = chain(links: 3)
        schemas["S2"] = ["type": "object", "properties": ["back": ["$ref": .string("#/components/schemas/\(start)")]]]
        let loaded = try OpenAPIOperations(data: document(schemas: schemas), format: .json)
        #expect(loaded.operations.map(\.name) == ["getItem"])
        #expect(loaded.warnings.contains("#/components/schemas/S2: the $ref to #/components/schemas/\(start) is recursive; below it any value is accepted"), "\(loaded.warnings)")
        let error = try #require(refusal { _ = try OpenAPIOperations(data: document(schemas: schemas), format: .json, strict: true) })
        #expect(error.code == .invalidDefinition)
        #expect(error.message.contains("#/components/schemas/S2: the $ref to #/components/schemas/\(start) is recursive"), "\(error.message)")
        // A schema that names itself.
        let itself = try OpenAPIOperations(data: document(schemas: ["S0": ["type": "array", "items": ["$ref": "#/components/schemas/S0"]]]), format: .json)
        #expect(itself.warnings.contains { $0.hasPrefix("#/components/schemas/S0: the $ref to #/components/schemas/S0 is recursive") }, "\(itself.warnings)")
        // The cut schema still checks what it can: S0's value is an integer.
        #expect(try loaded.definitions.definition(named: "getItem").responseType == .object)
    }

    @Test("a $ref that does not name a component cannot carry a chain past the measure (found by the fuzzer: a stack overflow)")
    func unfollowableReference() throws {
        // OpenAPIKit looks such a $ref up by its last name, S29, and would expand the 600-long
        // chain behind it; the measure follows pointers and saw nothing there.
        var schemas = chain(links: 600)
        schemas["S28"] = ["type": "object", "properties": ["next": ["$ref": "#/compon`nts/schemas/S29"]]]
        let loaded = try OpenAPIOperations(data: document(schemas: schemas), format: .json)
        #expect(loaded.operations.map(\.name) == ["getItem"])
        #expect(loaded.warnings.contains { $0.contains("the $ref #/compon`nts/schemas/S29 does not name a component") }, "\(loaded.warnings)")
        let strict = try #require(refusal { _ = try OpenAPIOperations(data: document(schemas: schemas), format: .json, strict: true) })
        #expect(strict.message.contains("does not name a component"), "\(strict.message)")
        // Inside a vendor extension (never read) it is dropped quietly; a property named x-… is a schema.
        let quiet = try OpenAPIOperations(
            data: document(schemas: [
                "S0": [
                    "type": "object", "x-policy": ["$ref": "#/components/x-policies/ml"],
                    "properties": ["x-rate": ["$ref": "#/definitions/Rate"]],
                ]
            ]), format: .json)
        #expect(!quiet.warnings.contains { $0.contains("#/components/x-policies/ml") }, "\(quiet.warnings)")
        #expect(quiet.warnings.contains { $0.contains("the $ref #/definitions/Rate does not name a component") }, "\(quiet.warnings)")
    }

    @Test("a schema naming the next twice, 60 times over (2^60 values once expanded), is refused at once")
    func exponential() throws {
        let error = try #require(refusal { _ = try OpenAPIOperations(data: document(schemas: doubling(levels: 60)), format: .json) })
        #expect(error.code == .invalidDefinition)
        #expect(error.message.contains("Limits.maximumExpandedNodes"), "\(error.message)")
        // The same bound, lowered, refuses an ordinary document that exceeds it.
        let small = Limits { $0.maximumExpandedNodes = 1_000 }
        let tooMuch = try #require(refusal { _ = try OpenAPIOperations(data: OpenAPIFixtures.large(operations: 100, depth: 5), format: .yaml, limits: small) })
        #expect(tooMuch.message.contains("more than 1000 values"), "\(tooMuch.message)")
    }

    @Test("a path that expands past maximumExpandedPathNodes is left out alone, before it is built; strict refuses; the others load")
    func heavyPath() throws {
        // 2^17 copies of a small schema: about a million values, under the document's bound of
        // 8,000,000 but past one path's 500,000 (OpenAPIKit took 33 s and 3.9 GB for such a path).
        let schemas = doubling(levels: 17)
        let root: JSONValue = [
            "openapi": "3.1.0", "info": ["title": "Heavy", "version": "1"], "servers": [["url": "http://127.0.0.1/"]],
            "paths": [
                "/heavy": ["get": ["operationId": "heavy", "responses": ["200": ["description": "ok", "content": ["application/json": ["schema": ["$ref": "#/components/schemas/S0"]]]]]]],
                "/light": ["get": ["operationId": "light", "responses": ["200": ["description": "ok", "content": ["application/json": ["schema": ["$ref": "#/components/schemas/S16"]]]]]]],
            ],
            "components": ["schemas": .object(schemas)],
        ]
        let data = root.jsonData()
        let loaded = try OpenAPIOperations(data: data, format: .json)
        #expect(loaded.operations.map(\.name) == ["light"])
        #expect(loaded.warnings.contains { $0.contains("/heavy stands for") && $0.contains("Limits.maximumExpandedPathNodes") }, "\(loaded.warnings)")
        let strict = try #require(refusal { _ = try OpenAPIOperations(data: data, format: .json, strict: true) })
        #expect(strict.message.contains("/heavy stands for"), "\(strict.message)")
        // Lowered, the light path is left out too.
        let lowered = try OpenAPIOperations(data: data, format: .json, limits: .init { $0.maximumExpandedPathNodes = 10 })
        #expect(lowered.operations.isEmpty && lowered.warnings.contains { $0.contains("/light stands for") }, "\(lowered.warnings)")
    }

    @Test("a 100 MB document is refused before it is parsed, from memory or from a file that is not read whole")
    func hugeDocument() throws {
        let huge = Data(count: 100 * 1024 * 1024)
        let error = try #require(refusal { _ = try OpenAPIOperations(data: huge, format: .yaml) })
        #expect(error.code == .invalidDefinition)
        #expect(error.message.contains("larger than 16777216 bytes (Limits.maximumDocumentSize)"), "\(error.message)")
        // A sparse 100 MB file: at most the limit and one byte are read.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-openapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("huge.yaml")
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data("openapi: 3.1.0\n".utf8)))
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 100 * 1024 * 1024)
        try handle.close()
        let small = Limits { $0.maximumDocumentSize = 1024 * 1024 }
        let fromFile = try #require(refusal { _ = try OpenAPIOperations(contentsOf: file, limits: small) })
        #expect(fromFile.message.contains("\"huge.yaml\" is larger than 1048576 bytes"), "\(fromFile.message)")
        let viaLoader = try #require(refusal { _ = try DefinitionsFile.load(contentsOf: file, limits: small) })
        #expect(viaLoader.message.contains("larger than 1048576 bytes"), "\(viaLoader.message)")
    }

    @Test("20,000 operations load whole: every operation, in order, with its parameters and response type")
    func twentyThousand() async throws {
        // Seconds of work in a debug build: off the cooperative pool, so other tests' timers run.
        let operations = try await onOwnThread {
            try OpenAPIOperations(data: OpenAPIFixtures.large(operations: 20_000, depth: 3, format: .json), format: .json)
        }
        #expect(operations.operations.count == 20_000)
        #expect(Set(operations.operations.map(\.name)).count == 20_000)
        #expect(operations.warnings.isEmpty)
        // By path, as text: /items0, /items1, /items10, …
        #expect(operations.operations.prefix(3).map(\.name) == ["getItem0", "getItem1", "getItem10"])
        let last = try operations.operation(named: "getItem19999")
        #expect(last.path == "/items19999/{id}" && last.method == "GET")
        #expect(last.parameters.map(\.name) == ["id", "q"] && last.parameters.first?.type == "integer")
        #expect(last.parameters.last?.allowedValues == ["a", "b"])
        #expect(try operations.definitions.definition(named: "getItem19999").responseType == .object)
        let request = try operations.request("getItem12345", parameters: ["id": "5", "q": "b"])
        #expect(request.query["q"] == "b")
    }

    /// A document whose one operation takes a cookie and a header parameter.
    private let parameters = Data(
        """
        openapi: 3.1.0
        info: {title: Cookies, version: "1"}
        servers: [{url: "http://127.0.0.1/"}]
        paths:
          /me:
            get:
              operationId: me
              parameters:
                - {name: session, in: cookie, schema: {type: string}}
                - {name: ids, in: cookie, schema: {type: array, items: {type: string}}}
                - {name: X-Trace, in: header, schema: {type: string}}
              responses: {'200': {description: ok}}
        components:
          securitySchemes:
            cookie_key: {type: apiKey, in: cookie, name: key}
        """.utf8)

    @Test("a cookie parameter's ;, comma, space or control character cannot add or change a cookie: it is percent-encoded")
    func cookieInjection() async throws {
        let operations = try OpenAPIOperations(data: parameters, format: .yaml)
        let plain = try operations.request("me", parameters: ["session": "abc+/=", "ids": ["1", "2"]])
        #expect(plain.headers["Cookie"] == "session=abc+/=; ids=1,2")
        let hostile = try operations.request("me", parameters: ["session": "a; admin=1", "ids": ["x", "y=1,z", "\r\nA: b"]])
        #expect(hostile.headers["Cookie"] == "session=a%3B%20admin=1; ids=x,y%3D1%2Cz,%0D%0AA:%20b")
        // Whatever a value holds, the field names exactly the cookies the operation has.
        for value in ["a;b=c", "a,b=c", "a b=c", "a\tb", "\"q\"", "a\\b", "é", "\u{1B}[2J", "\0"] {
            let cookie = try #require(try operations.request("me", parameters: ["session": .string(value)]).headers["Cookie"])
            #expect(cookie.split(separator: ";").count == 1 && !cookie.contains(",") && !cookie.contains(" "), "\(value) → \(cookie)")
            #expect(cookie.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }, "\(value) → \(cookie)")
        }
        // A cookie API key is written by the same writer.
        let authentication = try operations.authentication(scheme: "cookie_key", secret: "k; admin=1")
        let authorized = try await #require(authentication.scheme).authorize(.get("https://example.com/me"), context: MiddlewareContext())
        #expect(authorized.headers["Cookie"] == "key=k%3B%20admin=1")
    }

    @Test("a cookie name that is not a token is refused; a header parameter's CR or LF is refused by the field door")
    func namesAndHeaders() throws {
        let document = String(decoding: parameters, as: UTF8.self).replacingOccurrences(of: "name: session", with: "name: \"a;b\"")
        let operations = try OpenAPIOperations(data: Data(document.utf8), format: .yaml)
        let error = try #require(refusal { _ = try operations.request("me", parameters: ["a;b": "1"]) })
        #expect(error.code == .invalidRequest && error.message.contains("is not a token"), "\(error.message)")
        let headers = try OpenAPIOperations(data: parameters, format: .yaml).request("me", parameters: ["X-Trace": "a\r\nCookie: admin=1"])
        #expect(throws: APIError.self) { _ = try headers.headers.httpFields() }
    }

    @Test("batches of paths read on several threads come back whole and in order, and a reader left early does not hold the load")
    func batchesInOrder() async throws {
        let perBatch = try await onOwnThread { () throws -> [[String]] in
            let shell: [String: JSONValue] = ["openapi": "3.1.0", "info": ["title": "Batches", "version": "1"], "paths": [:]]
            let template = try OpenAPIOperations.decode(shell, version: "3.1.0")
            let batches: [[(text: String, item: JSONValue)]] = (0..<40).map { batch in
                (0..<10).map { index in
                    let number = batch * 10 + index
                    return ("/items\(number)", ["get": ["operationId": .string("op\(number)"), "responses": ["200": ["description": "ok"]]]])
                }
            }
            func reader() -> BatchReader {
                BatchReader(
                    batches, template: template, version: "3.1.0", checked: [:], info: shell["info"],
                    stubs: ComponentSchemas(components: template.components), strict: false, threads: 3)
            }
            // Left after one batch, while its threads are still reading the next ones.
            var early = reader()
            #expect(early.next()?.endpoints.count == 10)
            return reader().map { $0.endpoints.compactMap(\.operationId).sorted() }
        }
        #expect(perBatch.count == 40)
        for (batch, names) in perBatch.enumerated() {
            #expect(names == (0..<10).map { "op\(batch * 10 + $0)" }.sorted(), "batch \(batch)")
        }
    }
}
