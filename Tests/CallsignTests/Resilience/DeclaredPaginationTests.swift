@testable import Callsign
import CallsignTesting
import Foundation
import Testing

private struct Person: Decodable, Sendable, Equatable {
    let id: Int
}

/// `count` people, `id` 0 to `count - 1`, as JSON objects.
private func people(_ range: Range<Int>) -> JSONValue {
    .array(range.map { .object(["id": .int($0)]) })
}

@Suite("Pagination declared in definitions: cursor, page, offset and next-URL walks", .hangGuard)
struct DeclaredPaginationTests {
    @Test("a definition file's cursor walk reads the cursor and the items inside an xAPI envelope; the call's pagination wins")
    func declaredCursorInEnvelope() async throws {
        let yaml = """
            DEFAULT:
              envelope: true
            ListUsers:
              path: people
              pagination:
                style: cursor
                field: next
                parameter: after
                items: list
                maximumPages: 10
            """
        try await withServer(definitions: yamlDefinitions(yaml)) { server, client in
            server.route("/people") { request in
                switch request.query("after") {
                case nil: .json(["code": 0, "msg": "ok", "data": ["list": people(0..<2), "next": "b"]])
                case "b": .json(["code": 0, "msg": "ok", "data": ["list": people(2..<4), "next": "c"]])
                default: .json(["code": 0, "msg": "ok", "data": ["list": people(4..<5), "next": nil]])
                }
            }
            var ids: [Int] = []
            for try await person in try client.items("ListUsers", as: Person.self) { ids.append(person.id) }
            #expect(ids == [0, 1, 2, 3, 4], "the declared items field is read from the envelope's payload")
            #expect(server.hits("/people") == 3)

            server.resetRecords()
            var pages = 0
            for try await _ in try client.pages("ListUsers", pagination: .link) { pages += 1 }
            #expect(pages == 1, "an explicit pagination wins over the definition's (no Link: one page)")
            #expect(server.hits("/people") == 1)
        }
    }

    @Test("an envelope that reports a failure mid-walk fails the walk instead of ending it quietly")
    func envelopeFailureMidWalk() async throws {
        let yaml = """
            ListUsers:
              path: people
              envelope: true
              pagination: {style: cursor, field: next, parameter: after, items: list}
            """
        try await withServer(definitions: yamlDefinitions(yaml)) { server, client in
            server.route("/people") { request in
                request.query("after") == nil
                    ? .json(["code": 0, "data": ["list": people(0..<2), "next": "b"]])
                    : .json(["code": 5001, "msg": "db down"])
            }
            var ids: [Int] = []
            let error = await apiError {
                for try await person in try client.items("ListUsers", as: Person.self) { ids.append(person.id) }
            }
            #expect(ids == [0, 1])
            #expect(error?.code == .envelope)
            #expect(error?.envelopeCode == 5001)
        }
    }

    @Test("a page-number walk declared in code counts up from the first page and stops on an empty page, or at the page limit")
    func pageWalk() async throws {
        var list = APIDefinition(name: "ListRepos", path: "repos")
        list.pagination = .page(items: "data")
        let definitions = { (base: URL) throws -> APIDefinitions in
            try APIDefinitions(default: APIDefinition(baseURL: base), [list])
        }
        try await withServer(definitions: definitions) { server, client in
            server.route("/repos") { request in
                let page = Int(request.query("page") ?? "") ?? -1
                return .json(["data": page >= 1 && page <= 3 ? people(page * 10..<page * 10 + 2) : []])
            }
            var pages: [[Person]] = []
            for try await page in try client.pages("ListRepos") { pages.append(try page.decode([String: [Person]].self)["data"] ?? []) }
            #expect(pages.map(\.count) == [2, 2, 2, 0], "page 4 is empty and is the last")
            #expect(pages.first == [Person(id: 10), Person(id: 11)], "the first request says page=1")
            #expect(server.hits("/repos") == 4)

            server.resetRecords()
            var ids: [Int] = []
            for try await person in try client.items("ListRepos", parameters: ["page": 2], as: Person.self) { ids.append(person.id) }
            #expect(ids == [20, 21, 30, 31], "the call's page is where the walk starts")

            server.resetRecords()
            var count = 0
            for try await _ in try client.pages("ListRepos", pagination: Pagination.page(items: "data").limited(to: 2)) { count += 1 }
            #expect(count == 2)
            #expect(server.hits("/repos") == 2, "no page past the limit is fetched")
        }
    }

    @Test("a page walk with a limit parameter ends at the first short page, without asking for the next")
    func pageWalkShortPage() async throws {
        let yaml = """
            ListRepos:
              path: repos
              pagination: {style: page, limitParameter: per_page, limit: 2, maximumPages: 50}
            """
        try await withServer(definitions: yamlDefinitions(yaml)) { server, client in
            server.route("/repos") { request in
                let page = Int(request.query("page") ?? "") ?? 0
                #expect(request.query("per_page") == "2")
                return .json(page < 3 ? people(page * 10..<page * 10 + 2) : people(page * 10..<page * 10 + 1))
            }
            var ids: [Int] = []
            for try await person in try client.items("ListRepos", as: Person.self) { ids.append(person.id) }
            #expect(ids == [10, 11, 20, 21, 30])
            #expect(server.hits("/repos") == 3)
        }
    }

    @Test("an offset walk moves on by the items each page held and stops at a page shorter than the limit")
    func offsetWalk() async throws {
        let yaml = """
            ListNotes:
              path: notes
              method: POST
              pagination:
                style: offset
                items: results
                limitParameter: limit
                limit: 3
                inQuery: true
            """
        try await withServer(definitions: yamlDefinitions(yaml)) { server, client in
            server.route("/notes") { request in
                let offset = Int(request.query("offset") ?? "") ?? -100
                let limit = Int(request.query("limit") ?? "") ?? 0
                return .json(["results": people(offset..<max(offset, min(offset + limit, 7)))])
            }
            var ids: [Int] = []
            for try await person in try client.items("ListNotes", as: Person.self) { ids.append(person.id) }
            #expect(ids == Array(0..<7), "offsets 0, 3 and 6 in the query of a POST; 6 holds one item, fewer than 3")
            #expect(server.hits("/notes") == 3)
        }
    }

    @Test("a next-page URL in the body is followed, relative to the page; one at another origin is refused")
    func nextURLWalk() async throws {
        let yaml = """
            ListEvents:
              path: events
              pagination: {style: nextURL, field: links.next, items: items}
            """
        try await withServer(definitions: yamlDefinitions(yaml)) { server, client in
            server.route("/events") { request in
                switch request.query("p") {
                case nil: .json(["items": people(0..<1), "links": ["next": "events?p=2"]])
                case "2": .json(["items": people(1..<2), "links": ["next": "https://elsewhere.example/events?p=3"]])
                default: .json(["items": people(2..<3)])
                }
            }
            var ids: [Int] = []
            let error = await apiError {
                for try await person in try client.items("ListEvents", as: Person.self) { ids.append(person.id) }
            }
            #expect(ids == [0, 1])
            #expect(error?.code == .invalidResponse, "another origin is not followed unless allowed")
            #expect(server.hits("/events") == 2)
        }
    }

    @Test("hostile pages: a page number that is not a number, items that are not a list")
    func hostilePages() async throws {
        let yaml = """
            ListRepos:
              path: repos
              pagination: {style: page, items: data}
            """
        try await withServer(definitions: yamlDefinitions(yaml)) { server, client in
            server.route("/repos") { _ in .json(["data": ["not": "a list"]]) }
            let notNumber = await apiError { for try await _ in try client.pages("ListRepos", parameters: ["page": "two"]) {} }
            #expect(notNumber?.code == .invalidRequest)
            #expect(notNumber?.message.contains("\"page\"") == true)
            #expect(server.hits("/repos") == 0)
            let notList = await apiError { for try await _ in try client.pages("ListRepos") {} }
            #expect(notList?.code == .invalidResponse)
            #expect(server.hits("/repos") == 1)
        }
    }

    @Test(
        "a garbled pagination declaration fails the load with the API, the key and what to write",
        arguments: [
            ("pagination: 42", "must be a style"),
            ("pagination: pages", "needs a style"),
            ("pagination: {style: cursor, field: next}", "needs a parameter"),
            ("pagination: {style: cursor, parameter: after}", "needs a field"),
            ("pagination: {style: cursor, fild: next, parameter: after}", "did you mean \"field\""),
            ("pagination: {style: link, start: 2}", "start has no meaning for the style link"),
            ("pagination: {style: page, maximumPages: 0}", "from 1 to 10000"),
            ("pagination: {style: page, limit: 5}", "limit needs a limitParameter"),
            ("pagination: {style: nextURL, field: \"a..b\"}", "dotted path"),
            ("pagination: {style: nextURL, field: \"$.data[-1].next\"}", "dotted path"),
            ("pagination: {style: page, parameter: \"\"}", "parameter name"),
            ("Pagination: link\n  pagination: link", "says the same as"),
            ("paginaton: link", "did you mean \"pagination\""),
        ])
    func garbled(declaration: String, expected: String) throws {
        let yaml = "ListUsers:\n  path: users\n  \(declaration)\n"
        #expect {
            try APIDefinitions(data: Data(yaml.utf8), format: .yaml)
        } throws: { error in
            guard let error = error as? APIError else { return false }
            return error.code == .invalidDefinition && error.apiName == "ListUsers" && error.message.contains(expected)
                && error.key?.lowercased().hasPrefix("pagina") == true && error.line != nil
        }
    }

    @Test("RFAPI's spelling and the short form load; a DEFAULT's pagination is every definition's")
    func spellings() throws {
        let yaml = """
            DEFAULT:
              pagination: {style: offset, limitParameter: size, limit: 20}
            A:
              Path: a
              Pagination: link
            B:
              path: b
            """
        let definitions = try APIDefinitions(data: Data(yaml.utf8), format: .yaml)
        #expect(try definitions.definition(named: "A").pagination == .link)
        var expected = Pagination.offset(limitParameter: "size", pageSize: 20)
        expected.maximumPages = 100
        #expect(try definitions.definition(named: "B").pagination == expected)
        #expect(try definitions.definition(named: "B").request().pagination == expected)
    }
}
