@testable import Callsign
import CallsignTesting
import Foundation
import Testing

private struct PagedUser: Decodable, Sendable, Equatable {
    let id: Int
}

/// Five pages of two users each, page N linking to page N+1 by a relative or absolute `Link`.
private func serveLinkedPages(_ server: TestServer, path: String = "/users") {
    server.route(path) { request in
        let page = Int(request.query("page") ?? "1") ?? 1
        var headers: [(name: String, value: String)] = []
        if page < 5 {
            // Relative on odd pages, absolute on even ones; a second link and odd spacing around it.
            let target = page % 2 == 1 ? "\(path)?page=\(page + 1)" : String(request.serverURL.absoluteString.dropLast()) + "\(path)?page=\(page + 1)"
            headers.append(("Link", "<\(path)?page=5>; rel=\"last\",  <\(target)>;rel=\"next\""))
        }
        return .json(.array([.object(["id": .int(page * 10)]), .object(["id": .int(page * 10 + 1)])]), headers: headers)
    }
}

@Suite("Pagination as an AsyncSequence: Link and cursor walks", .hangGuard)
struct PaginationTests {
    @Test("a 5-page Link walk stops at the page limit; without a limit it reads all five and stops at the last")
    func linkWalkStopsAtLimit() async throws {
        try await withServer { server, client in
            serveLinkedPages(server)
            var seen: [[PagedUser]] = []
            for try await page in client.pages(.get("users"), pagination: Pagination.link.limited(to: 3)) {
                seen.append(try page.decode([PagedUser].self))
            }
            #expect(seen == [[PagedUser(id: 10), PagedUser(id: 11)], [PagedUser(id: 20), PagedUser(id: 21)], [PagedUser(id: 30), PagedUser(id: 31)]])
            #expect(server.hits("/users") == 3, "no fourth page is fetched")

            server.resetRecords()
            var count = 0
            for try await _ in client.pages(.get("users")) { count += 1 }
            #expect(count == 5)
            #expect(server.hits("/users") == 5)
        }
    }

    @Test("items by definition name follow a cursor in the body (envelope-aware); an empty cursor ends the walk")
    func cursorWalk() async throws {
        let yaml = """
            ListUsers:
              path: people
            """
        try await withServer(definitions: yamlDefinitions(yaml)) { server, client in
            server.route("/people") { request in
                switch request.query("cursor") {
                case nil: .json(["data": [["id": 1], ["id": 2]], "meta": ["next_cursor": "b"]])
                case "b": .json(["data": [["id": 3]], "meta": ["next_cursor": "c"]])
                default: .json(["data": [["id": 4]], "meta": ["next_cursor": ""]])
                }
            }
            var ids: [Int] = []
            let users = try client.items(
                "ListUsers", as: PagedUser.self, at: "data", pagination: .cursor(at: "meta.next_cursor", parameter: "cursor"))
            for try await user in users { ids.append(user.id) }
            #expect(ids == [1, 2, 3, 4])
            #expect(server.hits("/people") == 3)
        }
    }

    @Test("cancelling the task that iterates stops the next fetch")
    func cancellationStopsNextFetch() async throws {
        try await withServer { server, client in
            serveLinkedPages(server)
            let (firstPage, reached) = AsyncStream.makeStream(of: Void.self)
            let (proceed, go) = AsyncStream.makeStream(of: Void.self)
            let walk = Task { () -> (pages: Int, error: APIError?) in
                var pages = 0
                do {
                    for try await _ in client.pages(.get("users")) {
                        pages += 1
                        reached.yield()
                        var waiting = proceed.makeAsyncIterator()
                        _ = await waiting.next()
                    }
                } catch {
                    return (pages, error as? APIError)
                }
                return (pages, nil)
            }
            var arrivals = firstPage.makeAsyncIterator()
            _ = await arrivals.next()
            walk.cancel()
            go.yield()
            let result = await walk.value
            #expect(result.pages == 1)
            #expect(result.error?.code == .cancelled)
            #expect(server.hits("/users") == 1, "no page is fetched after the cancellation")
        }
    }

    @Test("a next link to another origin is refused unless allowed, and then carries none of the caller's headers")
    func otherOrigin() async throws {
        try await TestServer.withRunning { other in
            other.route("/elsewhere") { request in
                .json([["id": .int(request.header("X-Secret") == nil ? 99 : -1)]])
            }
            try await withServer { server, client in
                server.route("/users") { _ in
                    .json([["id": 1]], headers: [("Link", "<\(other.url("/elsewhere").absoluteString)>; rel=next")])
                }
                var request = Request.get("users")
                request.headers["X-Secret"] = "s3cret"
                let refused = await apiError { for try await _ in client.pages(request) {} }
                #expect(refused?.code == .invalidResponse)
                #expect(other.hits("/elsewhere") == 0)

                var allowed = Pagination.link
                allowed.followsOtherOrigins = true
                var pages: [Response] = []
                for try await page in client.pages(request, pagination: allowed) { pages.append(page) }
                #expect(pages.count == 2)
                #expect(other.hits("/elsewhere") == 1)
                #expect(try pages.last?.decode([PagedUser].self) == [PagedUser(id: 99)], "the caller's headers stay at their origin")
            }
        }
    }

    @Test("the deadline covers the whole walk: a page after it is not fetched")
    func deadlineCoversWalk() async throws {
        let clock = TestClock()
        // Each page is also bounded by the deadline on the real clock: generous, for a busy machine.
        try await withServer(configure: { $0.clock = clock; $0.timeouts.deadline = .seconds(90) }) { server, client in
            serveLinkedPages(server)
            var iterator = client.pages(.get("users")).makeAsyncIterator()
            _ = try await iterator.next()
            clock.advance(by: .seconds(91))
            let late = await apiError { _ = try await iterator.next() }
            #expect(late?.code == .timedOut)
            #expect(server.hits("/users") == 1)
        }
    }

    @Test("the Link field reader: quoted commas, several relations, the first rel only, bounds")
    func linkField() {
        let links = LinkField.parse(#"</a,b>; title="x, y; z"; rel="prev NEXT"; rel=last, <https://e.example/2>; rel=next"#)
        #expect(links.map(\.target) == ["/a,b", "https://e.example/2"])
        #expect(links.first?.relations == ["prev", "next"])
        #expect(LinkField.target("next", in: "<?page=2>; rel=next", relativeTo: URL(string: "https://api.example.com/v1/items?page=1"))?.absoluteString
            == "https://api.example.com/v1/items?page=2")
        let flood = String(repeating: "<x>; rel=next, ", count: 10_000)
        #expect(LinkField.parse(flood).count == LinkField.maximumLinks)
        #expect(LinkField.parse("garbage, <unterminated").isEmpty)
    }
}
