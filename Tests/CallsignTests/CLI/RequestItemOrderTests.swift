import Callsign
import CallsignTesting
import Foundation
import Testing

@testable import callsign

@Suite("callsign items: nothing typed is dropped or reordered, as in HTTPie", .hangGuard)
struct RequestItemOrderTests {
    @Test("Repeated items are kept: query items in the order typed, data items as a JSON array, headers once each")
    func parsing() throws {
        let items = try AdHocItems(parsing: ["z==1", "a==2", "a==3", "a=1", "a=2", "n:=5", "n=x", "one=only", "X-A:1", "X-A:2"])
        #expect(items.query.map { "\($0.key)=\($0.value)" } == ["z=1", "a=2", "a=3"])
        #expect(items.parameters == ["a": ["1", "2"], "n": [5, "x"], "one": "only"])
        #expect(items.headers.values(for: "X-A") == ["1", "2"])
    }

    @Test("Query items go after the URL's own query, in order, each pair written by the library's query encoder")
    func queryPlacement() throws {
        let items = try AdHocItems(parsing: ["z==1", "a==x&y=z", "a==sp ace", "id==7"])
        var request = Request.get("https://h.example/p?first=0#frag")
        items.addQuery(to: &request)
        #expect(request.path == "https://h.example/p?first=0&z=1&a=x%26y%3Dz&a=sp%20ace&id=7#frag")
        // An item named after a placeholder fills it, as the request's query parameters do.
        var templated = Request.get("users/{id}")
        items.addQuery(to: &templated)
        #expect(templated.path == "users/{id}?z=1&a=x%26y%3Dz&a=sp%20ace")
        #expect(templated.query == ["id": "7"])
    }

    @Test("get sends repeated and unsorted query items as typed; post sends a repeated field as an array")
    func onTheWire() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let url = server.url("/anything/q?x=0").absoluteString
            let got = try await CLIRunner.run(["get", url, "z==1", "a==1", "a==2", "b==c&d"])
            #expect(got.status == 0, "\(got.standardError)")
            #expect(server.requests.last?.rawQuery == "x=0&z=1&a=1&a=2&b=c%26d")

            let posted = try await CLIRunner.run(["post", server.url("/anything/p").absoluteString, "a=1", "a=2", "b:=3", "c=x"])
            #expect(posted.status == 0, "\(posted.standardError)")
            let body = try #require(server.requests.last?.body)
            #expect(try JSONValue(parsing: body) == ["a": ["1", "2"], "b": 3, "c": "x"])
        }
    }

    @Test("A header given as an item and with -H is sent twice, the item's first; -H alone replaces nothing it should keep")
    func headersFromBoth() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let result = try await CLIRunner.run([
                "get", server.url("/headers").absoluteString, "X-Both:item", "-H", "X-Both: flag", "-H", "X-Flag: only", "X-Item:only",
            ])
            #expect(result.status == 0, "\(result.standardError)")
            let seen = try #require(server.requests.last)
            #expect(seen.headers.filter { $0.name.lowercased() == "x-both" }.map(\.value) == ["item", "flag"])
            #expect(seen.header("X-Flag") == "only")
            #expect(seen.header("X-Item") == "only")
        }
    }
}
