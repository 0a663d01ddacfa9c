import Callsign
import CallsignOpenAPI
import CallsignTesting
import Foundation
import Testing

private struct Pet: Decodable, Sendable, Equatable {
    let id: Int
}

/// An OpenAPI document around `paths` (YAML, indented for `paths:`).
private func document(_ paths: String) -> Data {
    Data(
        """
        openapi: 3.1.0
        info: {title: Pets, version: "1"}
        servers: [{url: "http://127.0.0.1:9/"}]
        paths:
        \(paths)
        """.utf8)
}

/// An answer schema: an object with these properties.
private let petList = "{type: array, items: {type: object, properties: {id: {type: integer}}}}"

@Suite("Pagination from OpenAPI: x-speakeasy-pagination, unambiguous parameters, and no guesses", .hangGuard)
struct OpenAPIPaginationTests {
    @Test("x-speakeasy-pagination (cursor, offsetLimit with a page, url) becomes the operation's pagination and walks the test server")
    func speakeasy() async throws {
        let yaml = document(
            """
              /pets:
                get:
                  operationId: listPets
                  parameters: [{name: after, in: query, schema: {type: string}}]
                  responses:
                    '200':
                      description: a page
                      content: {application/json: {schema: {type: object, properties: {data: \(petList), next: {type: string}}}}}
                  x-speakeasy-pagination:
                    type: cursor
                    inputs: [{name: after, in: parameters, type: cursor}]
                    outputs: {nextCursor: $.next, results: $.data}
              /toys:
                get:
                  operationId: listToys
                  parameters: [{name: page, in: query, schema: {type: integer}}, {name: size, in: query, schema: {type: integer}}]
                  responses:
                    '200': {description: a page, content: {application/json: {schema: {type: object, properties: {items: \(petList)}}}}}
                  x-speakeasy-pagination:
                    type: offsetLimit
                    inputs: [{name: page, in: parameters, type: page}, {name: size, in: parameters, type: limit}]
                    outputs: {results: $.items}
              /vets:
                get:
                  operationId: listVets
                  responses:
                    '200': {description: a page, content: {application/json: {schema: {type: object}}}}
                  x-speakeasy-pagination: {type: url, outputs: {nextUrl: $.links.next, results: $.vets}}
            """)
        var api = try OpenAPIOperations(data: yaml, format: .yaml)
        var cursor = Pagination.cursor(at: "next", parameter: "after")
        cursor.itemsField = "data"
        cursor.parametersInQuery = true
        #expect(try api.definitions.definition(named: "listPets").pagination == cursor)
        var nextURL = Pagination.nextURL(at: "links.next")
        nextURL.itemsField = "vets"
        #expect(try api.definitions.definition(named: "listVets").pagination == nextURL)
        try await TestServer.withRunning { server in
            server.route("/pets") { request in
                request.query("after") == nil ? .json(["data": [["id": 1]], "next": "x"]) : .json(["data": [["id": 2]], "next": ""])
            }
            server.route("/toys") { request in
                let page = Int(request.query("page") ?? "") ?? 0
                return .json(["items": page == 1 ? [["id": 10], ["id": 11]] : [["id": 12]]])
            }
            api.baseURL = server.baseURL
            let client = APIClient(definitions: api.definitions)
            var pets: [Int] = []
            for try await pet in try client.items("listPets", as: Pet.self) { pets.append(pet.id) }
            #expect(pets == [1, 2])
            #expect(server.hits("/pets") == 2)
            var toys: [Int] = []
            // The operation's request, as OpenAPIOperations builds it, carries the pagination too.
            for try await page in client.pages(try api.request("listToys", parameters: ["size": "2"])) {
                toys += (try page.decode([String: [Pet]].self)["items"] ?? []).map(\.id)
            }
            #expect(toys == [10, 11, 12], "page 2 holds one toy, fewer than size 2: the last")
            #expect(server.hits("/toys") == 2)
        }
    }

    @Test("unambiguous parameters: pageToken with nextPageToken, a page with the one list, offset and limit, a documented Link header")
    func heuristics() async throws {
        let yaml = document(
            """
              /books:
                get:
                  operationId: listBooks
                  parameters: [{name: pageToken, in: query, schema: {type: string}}]
                  responses:
                    '200': {description: a page, content: {application/json: {schema: {type: object, properties: {books: \(petList), nextPageToken: {type: string}}}}}}
              /authors:
                get:
                  operationId: listAuthors
                  parameters: [{name: page, in: query, schema: {type: integer}}, {name: per_page, in: query, schema: {type: integer}}]
                  responses:
                    '200': {description: a page, content: {application/json: {schema: \(petList)}}}
              /shelves:
                get:
                  operationId: listShelves
                  parameters: [{name: offset, in: query, schema: {type: integer}}, {name: limit, in: query, schema: {type: integer}}]
                  responses:
                    '200': {description: a page, content: {application/json: {schema: {type: object, properties: {shelves: \(petList), total: {type: integer}}}}}}
              /stores:
                get:
                  operationId: listStores
                  responses:
                    '200':
                      description: a page
                      headers: {Link: {schema: {type: string}}}
                      content: {application/json: {schema: \(petList)}}
                post:
                  operationId: createStore
                  parameters: [{name: page, in: query, schema: {type: integer}}]
                  responses:
                    '200': {description: a page, content: {application/json: {schema: \(petList)}}}
            """)
        var api = try OpenAPIOperations(data: yaml, format: .yaml)
        let definitions = api.definitions
        var books = Pagination.cursor(at: "nextPageToken", parameter: "pageToken")
        books.parametersInQuery = true
        #expect(try definitions.definition(named: "listBooks").pagination == books)
        var authors = Pagination.page(limitParameter: "per_page")
        authors.parametersInQuery = true
        #expect(try definitions.definition(named: "listAuthors").pagination == authors)
        var shelves = Pagination.offset(items: "shelves", limitParameter: "limit")
        shelves.parametersInQuery = true
        #expect(try definitions.definition(named: "listShelves").pagination == shelves)
        #expect(try definitions.definition(named: "listStores").pagination == .link)
        #expect(try definitions.definition(named: "createStore").pagination == nil, "a POST is never read as paged without a declaration")
        #expect(api.warnings.isEmpty, "\(api.warnings)")
        try await TestServer.withRunning { server in
            server.route("/books") { request in
                request.query("pageToken") == nil ? .json(["books": [["id": 1]], "nextPageToken": "t2"]) : .json(["books": [["id": 2]]])
            }
            api.baseURL = server.baseURL
            let client = APIClient(definitions: api.definitions)
            var ids: [Int] = []
            for try await book in try client.items("listBooks", as: Pet.self, at: "books") { ids.append(book.id) }
            #expect(ids == [1, 2])
            #expect(server.hits("/books") == 2)
        }
    }

    @Test("a document that reads two ways, or declares what Callsign cannot follow, gets no pagination and a warning")
    func noGuesses() throws {
        let yaml = document(
            """
              /both:
                get:
                  operationId: listBoth
                  parameters: [{name: cursor, in: query, schema: {type: string}}, {name: page, in: query, schema: {type: integer}}]
                  responses:
                    '200': {description: a page, content: {application/json: {schema: {type: object, properties: {data: \(petList), next_cursor: {type: string}}}}}}
              /twice:
                get:
                  operationId: listTwice
                  parameters: [{name: cursor, in: query, schema: {type: string}}]
                  responses:
                    '200':
                      description: a page
                      content:
                        application/json:
                          schema: {type: object, properties: {next_cursor: {type: string}, meta: {type: object, properties: {next_cursor: {type: string}}}}}
              /lists:
                get:
                  operationId: listLists
                  parameters: [{name: page, in: query, schema: {type: integer}}]
                  responses:
                    '200': {description: a page, content: {application/json: {schema: {type: object, properties: {a: \(petList), b: \(petList)}}}}}
              /last:
                get:
                  operationId: listLast
                  parameters: [{name: since, in: query, schema: {type: string}}]
                  responses:
                    '200': {description: a page, content: {application/json: {schema: {type: object}}}}
                  x-speakeasy-pagination:
                    type: cursor
                    inputs: [{name: since, in: parameters, type: cursor}]
                    outputs: {nextCursor: "$.data.resultArray[-1].created_at"}
              /header:
                get:
                  operationId: listHeader
                  parameters: [{name: token, in: header, schema: {type: string}}]
                  responses:
                    '200': {description: a page, content: {application/json: {schema: {type: object}}}}
                  x-speakeasy-pagination: {type: cursor, inputs: [{name: token, in: parameters, type: cursor}], outputs: {nextCursor: $.next}}
              /garbled:
                get:
                  operationId: listGarbled
                  responses:
                    '200': {description: a page, content: {application/json: {schema: {type: object}}}}
                  x-speakeasy-pagination: {type: offsetLimit, inputs: 7}
            """)
        let api = try OpenAPIOperations(data: yaml, format: .yaml)
        for name in ["listBoth", "listTwice", "listLists", "listLast", "listHeader", "listGarbled"] {
            #expect(try api.definitions.definition(named: name).pagination == nil, "\(name)")
        }
        let text = api.warnings.joined(separator: "\n")
        #expect(text.contains("/both reads as paged in more than one way"), "\(text)")
        #expect(text.contains("more like these"), "six warnings: three, then how many more")
        // The strict load refuses nothing for it: pagination is a reading, not a deviation.
        #expect(throws: Never.self) { try OpenAPIOperations(data: yaml, format: .yaml, strict: true) }
    }

    @Test("the warning says why a declaration is not followed")
    func warningReasons() throws {
        let yaml = document(
            """
              /last:
                get:
                  operationId: listLast
                  parameters: [{name: since, in: query, schema: {type: string}}]
                  responses:
                    '200': {description: a page, content: {application/json: {schema: {type: object}}}}
                  x-speakeasy-pagination:
                    type: cursor
                    inputs: [{name: since, in: parameters, type: cursor}]
                    outputs: {nextCursor: "$.data.resultArray[-1].created_at"}
            """)
        let api = try OpenAPIOperations(data: yaml, format: .yaml)
        #expect(api.warnings.contains { $0.contains("x-speakeasy-pagination is not followed") && $0.contains("[-1]") }, "\(api.warnings)")
    }
}
