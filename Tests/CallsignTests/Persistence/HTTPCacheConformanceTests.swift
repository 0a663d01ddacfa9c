import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Synchronization
import Testing

/// A scripted origin for one cache case, as the public RFC 9111 conformance suites script theirs:
/// each request the server sees gets the next scripted answer (the last one repeats), and the
/// test counts what reached the server.
final class ScriptedOrigin: Sendable {
    let path = "/scripted/\(UUID().uuidString)"
    private let answers: [@Sendable (ServerRequest) async -> ServerResponse]
    private let seen = Mutex<[ServerRequest]>([])

    init(_ answers: [@Sendable (ServerRequest) async -> ServerResponse]) {
        self.answers = answers
    }

    /// What the server saw, in order.
    var requests: [ServerRequest] { seen.withLock { $0 } }

    func install(on server: TestServer) {
        server.route(path) { [self] request in
            let index = seen.withLock { seen in
                seen.append(request)
                return seen.count - 1
            }
            return await answers[min(index, answers.count - 1)](request)
        }
    }
}

/// An answer with these fields and body.
func answer(_ status: Int = 200, _ headers: [(name: String, value: String)], body: String = "stored body") -> @Sendable (ServerRequest) -> ServerResponse {
    { _ in ServerResponse(status: status, headers: headers, body: .data(Data(body.utf8))) }
}

@Suite("HTTP cache: RFC 9111 and RFC 5861, case by case against a scripted origin", .hangGuard)
struct HTTPCacheConformanceTests {
    private func withOrigin(
        _ answers: [@Sendable (ServerRequest) async -> ServerResponse], configure: (inout APIClient.Configuration) -> Void = { _ in },
        _ body: (ScriptedOrigin, APIClient, HTTPCache) async throws -> Void
    ) async throws {
        let cache = HTTPCache.memory()
        let origin = ScriptedOrigin(answers)
        try await withServer(configure: { configuration in
            configuration.cache = cache
            configure(&configuration)
        }) { server, client in
            origin.install(on: server)
            try await body(origin, client, cache)
        }
    }

    @Test("a 304 without a validator refreshes the stored response: one conditional request, never a second full one (§4.3.4)")
    func notModifiedWithoutValidator() async throws {
        try await withOrigin([
            answer(200, [("ETag", "\"v1\""), ("Cache-Control", "max-age=0")]),
            answer(304, [("Cache-Control", "max-age=3600")], body: ""),
        ]) { origin, client, _ in
            _ = try await client.get(origin.path).send()
            let revalidated = try await client.get(origin.path).send()
            #expect(revalidated.source == .revalidated)
            #expect(revalidated.string() == "stored body")
            #expect(origin.requests.count == 2, "no unconditional third request")
            #expect(origin.requests.last?.header("If-None-Match") == "\"v1\"")
            // Freshened by the 304: served from storage now.
            #expect(try await client.get(origin.path).send().source == .cache)
            #expect(origin.requests.count == 2)
        }
    }

    @Test("a response to a request with Cookie is reused for the same cookie only; another cookie or none goes to the network")
    func cookiePartition() async throws {
        try await withOrigin([{ request in
            // Whose page, not the cookie itself: an answer that echoes a credential is never stored.
            let page = request.header("Cookie").map { $0.contains("alice") ? "alice's page" : "bob's page" } ?? "nobody's page"
            return ServerResponse(status: 200, headers: [("Cache-Control", "private, max-age=3600")], body: .data(Data(page.utf8)))
        }]) { origin, client, _ in
            func get(_ cookie: String?) async throws -> Response {
                var request = Request.get(origin.path)
                if let cookie { request.headers["Cookie"] = cookie }
                return try await client.send(request)
            }
            #expect(try await get("session=alice").string() == "alice's page")
            let again = try await get("session=alice")
            #expect(again.source == .cache && again.string() == "alice's page")
            let other = try await get("session=bob")
            #expect(other.source == .network && other.string() == "bob's page")
            let none = try await get(nil)
            #expect(none.source == .network && none.string() == "nobody's page")
            #expect(origin.requests.count == 3)
        }
    }

    @Test("Age is read from its first line and first member: 7200, 0 and two lines 7200 / 0 are stale at max-age 3600 (§5.1)")
    func ageFirstValue() async throws {
        for headers in [[("Age", "7200, 0")], [("Age", "7200"), ("Age", "0")]] as [[(name: String, value: String)]] {
            try await withOrigin([answer(200, [("Cache-Control", "max-age=3600")] + headers)]) { origin, client, _ in
                _ = try await client.get(origin.path).send()
                #expect(try await client.get(origin.path).send().source == .network, "\(headers)")
                #expect(origin.requests.count == 2)
            }
        }
    }

    @Test("hop-by-hop fields and the fields Connection names are neither stored nor served (RFC 9110 §7.6.1, §3.1)")
    func hopByHop() async throws {
        try await withOrigin([answer(200, [("Cache-Control", "max-age=3600"), ("Connection", "a, keep-alive"), ("a", "1"), ("b", "2")])]) {
            origin, client, _ in
            _ = try await client.get(origin.path).send()
            let hit = try await client.get(origin.path).send()
            #expect(hit.source == .cache)
            #expect(hit.headers[HTTPFieldName("a")] == nil)
            #expect(hit.headers[.connection] == nil)
            #expect(hit.headers[HTTPFieldName("b")] == "2")
        }
    }

    @Test("Set-Cookie never enters storage, but a 304's Set-Cookie reaches the caller (and so the cookie jar)")
    func setCookieOnNotModified() async throws {
        try await withOrigin([
            answer(200, [("ETag", "\"v1\""), ("Cache-Control", "max-age=0"), ("Set-Cookie", "s=1")]),
            answer(304, [("ETag", "\"v1\""), ("Cache-Control", "max-age=3600"), ("Set-Cookie", "s=2")], body: ""),
        ]) { origin, client, _ in
            _ = try await client.get(origin.path).send()
            let revalidated = try await client.get(origin.path).send()
            #expect(revalidated.source == .revalidated)
            #expect(revalidated.headers[.setCookie] == "s=2", "the cookie stage stores what a non-cached answer sets")
            let hit = try await client.get(origin.path).send()
            #expect(hit.source == .cache)
            #expect(hit.headers[.setCookie] == nil, "no cookie at rest, none replayed")
        }
    }

    @Test("a 304 freshens the stored fields and restarts the age; a HEAD 200 freshens the stored GET (§3.2, §4.3.5)")
    func freshening() async throws {
        try await withOrigin([
            answer(200, [("ETag", "\"v1\""), ("Cache-Control", "max-age=0"), ("Age", "100"), ("X-Version", "1")]),
            { request in
                request.method == "HEAD"
                    // A HEAD answer names the length a GET would have (11: "stored body").
                    ? ServerResponse(status: 200, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=3600"), ("X-Version", "3"), ("Content-Length", "11")])
                    : ServerResponse(status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=0"), ("X-Version", "2")])
            },
        ]) { origin, client, _ in
            _ = try await client.get(origin.path).send()
            let revalidated = try await client.get(origin.path).send()
            #expect(revalidated.headers[HTTPFieldName("X-Version")] == "2")
            // The 304 sent no Age: the stored 100 went. What is left is the time the revalidation
            // took (RFC 9111 §4.2.3's response delay), a second or more on a loaded machine.
            let age = try #require(revalidated.headers[.age].flatMap { Int($0) })
            #expect(age < 100, "the old Age went: \(age)")
            let head = try await client.send(Request.head(origin.path))
            #expect(head.status.code == 200)
            let hit = try await client.get(origin.path).send()
            #expect(hit.source == .cache, "freshened by the HEAD answer")
            #expect(hit.headers[HTTPFieldName("X-Version")] == "3")
            #expect(hit.string() == "stored body")
            #expect(origin.requests.map(\.method) == ["GET", "GET", "HEAD"])
        }
    }

    @Test("a HEAD 200 whose validator differs drops the stored GET")
    func headChangesRepresentation() async throws {
        try await withOrigin([
            answer(200, [("ETag", "\"v1\""), ("Cache-Control", "max-age=0")]),
            { request in
                request.method == "HEAD"
                    ? ServerResponse(status: 200, headers: [("ETag", "\"v2\""), ("Cache-Control", "max-age=3600")])
                    : ServerResponse(status: 200, headers: [("ETag", "\"v2\""), ("Cache-Control", "max-age=3600")], body: .data(Data("new".utf8)))
            },
        ]) { origin, client, _ in
            _ = try await client.get(origin.path).send()
            _ = try await client.send(Request.head(origin.path))
            let after = try await client.get(origin.path).send()
            #expect(after.source == .network)
            #expect(after.request.headers["If-None-Match"] == nil, "nothing stored was left to revalidate")
            #expect(after.string() == "new")
        }
    }

    @Test("an unknown content coding passes through as it came, and is stored that way")
    func unknownContentCoding() async throws {
        try await withOrigin([answer(200, [("Content-Encoding", "arizona"), ("Cache-Control", "max-age=3600")], body: "opaque bytes")]) {
            origin, client, _ in
            let first = try await client.get(origin.path).send()
            #expect(first.headers[.contentEncoding] == "arizona")
            #expect(first.string() == "opaque bytes")
            let hit = try await client.get(origin.path).send()
            #expect(hit.source == .cache)
            #expect(hit.headers[.contentEncoding] == "arizona")
            #expect(hit.string() == "opaque bytes")
        }
    }

    @Test("stale-while-revalidate: stale answers at once, one background revalidation for every caller (RFC 5861 §3)")
    func staleWhileRevalidate() async throws {
        // The origin holds its 304 until all ten callers have their answers: a revalidation that
        // finished sooner would make the later callers' answers fresh (`.cache`), which is right
        // but not what this case tests.
        let (released, release) = AsyncStream<Never>.makeStream()
        try await withOrigin([
            answer(200, [("Cache-Control", "max-age=1, stale-while-revalidate=86400"), ("Age", "60"), ("ETag", "\"v1\"")]),
            { _ in
                for await _ in released {}
                return ServerResponse(status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=3600")])
            },
        ]) { origin, client, cache in
            defer { release.finish() }
            _ = try await client.get(origin.path).send()
            let sources = try await withThrowingTaskGroup(of: ResponseSource.self) { group in
                for _ in 0..<10 { group.addTask { try await client.get(origin.path).send().source } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(sources.allSatisfy { $0 == .staleWhileRevalidating })
            release.finish()
            await cache.backgroundRevalidationsFinished()
            #expect(origin.requests.count == 2, "one revalidation for ten callers")
            #expect(origin.requests.last?.header("If-None-Match") == "\"v1\"")
            #expect(try await client.get(origin.path).send().source == .cache)
            #expect(origin.requests.count == 2)
        }
    }

    @Test("5xx with explicit freshness is stored; 501 by heuristic; 503 with only Last-Modified is not")
    func serverErrors() async throws {
        let lastModified = HTTPDate.format(Date(timeIntervalSinceNow: -86_400 * 30))
        let cases: [(status: Int, headers: [(name: String, value: String)], stored: Bool)] = [
            (500, [("Cache-Control", "max-age=3600")], true), (503, [("Cache-Control", "max-age=3600")], true),
            (599, [("Cache-Control", "max-age=3600")], true), (501, [("Last-Modified", lastModified)], true),
            (503, [("Last-Modified", lastModified)], false),
        ]
        for item in cases {
            try await withOrigin([answer(item.status, item.headers)]) { origin, client, _ in
                _ = try await client.get(origin.path).send()
                let again = try await client.get(origin.path).send()
                #expect(again.status.code == item.status)
                #expect((again.source == .cache) == item.stored, "\(item.status) \(item.headers)")
                #expect(origin.requests.count == (item.stored ? 1 : 2), "\(item.status)")
            }
        }
    }

    @Test("a stored 503 is served as stored, never retried against the cache")
    func storedErrorNotRetried() async throws {
        let clock = TestClock()
        try await withOrigin(
            [answer(503, [("Cache-Control", "max-age=3600")])],
            configure: {
                $0.retry = RetryPolicy(maximumAttempts: 3)
                $0.clock = clock
            }
        ) { origin, client, _ in
            let first = try await client.get(origin.path).send()
            // The first 503 (fresh for an hour) was stored: the retry found it in storage and stopped.
            #expect(first.status.code == 503)
            #expect(origin.requests.count == 1)
            let stored = try await client.get(origin.path).send()
            #expect(stored.source == .cache)
            #expect(origin.requests.count == 1)
            #expect(clock.sleeps.count == 1, "no back-off for a stored answer")
        }
    }

    @Test("a caller's own If-None-Match and If-Modified-Since are answered from a fresh stored response (§4.3.2)")
    func callerConditionals() async throws {
        let lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"
        try await withOrigin([answer(200, [("ETag", "W/\"v1\""), ("Last-Modified", lastModified), ("Cache-Control", "max-age=3600")])]) {
            origin, client, _ in
            _ = try await client.get(origin.path).send()
            let matching = try await client.get(origin.path).header("If-None-Match", "\"v0\", \"v1\"").send()
            #expect(matching.status.code == 304)
            #expect(matching.source == .cache)
            #expect(matching.headers[.eTag] == "W/\"v1\"")
            #expect(matching.body.isEmpty)
            let other = try await client.get(origin.path).header("If-None-Match", "\"v2\"").send()
            #expect(other.status.code == 200)
            #expect(other.string() == "stored body")
            let since = try await client.get(origin.path).header("If-Modified-Since", "Mon, 07 Nov 1994 08:49:37 GMT").send()
            #expect(since.status.code == 304)
            let before = try await client.get(origin.path).header("If-Modified-Since", "Sat, 05 Nov 1994 08:49:37 GMT").send()
            #expect(before.status.code == 200)
            #expect(origin.requests.count == 1, "every answer came from storage")
        }
    }

    @Test("must-understand stores a status the cache understands despite no-store, and no other (§5.2.2.3)")
    func mustUnderstand() async throws {
        for (status, stored) in [(200, true), (299, false)] {
            try await withOrigin([answer(status, [("Cache-Control", "max-age=3600, no-store, must-understand")])]) { origin, client, _ in
                _ = try await client.get(origin.path).send()
                #expect((try await client.get(origin.path).send().source == .cache) == stored, "\(status)")
            }
        }
    }

    @Test("a stored complete response answers a byte range it covers with a 206; If-Range and other ranges as RFC 9110 §13.1.5 and §14 say (§3.3)")
    func rangeFromComplete() async throws {
        try await withOrigin([ranged()]) { origin, client, _ in
            _ = try await client.get(origin.path).send()
            for (asked, body, contentRange) in [("bytes=2-5", "2345", "bytes 2-5/10"), ("bytes=-3", "789", "bytes 7-9/10"), ("bytes=7-", "789", "bytes 7-9/10"), ("bytes=8-20", "89", "bytes 8-9/10")] {
                let part = try await client.get(origin.path).header("Range", asked).send()
                #expect(part.status.code == 206 && part.source == .cache, "\(asked)")
                #expect(part.string() == body && part.headers[.contentRange] == contentRange && part.headers[.contentLength] == String(body.count), "\(asked)")
            }
            #expect(origin.requests.count == 1)
            // If-Range naming what is stored: the part; naming another version: the whole.
            let same = try await client.get(origin.path).header("Range", "bytes=0-1").header("If-Range", "\"v1\"").send()
            #expect(same.status.code == 206 && same.string() == "01")
            let changed = try await client.get(origin.path).header("Range", "bytes=0-1").header("If-Range", "\"v0\"").send()
            #expect(changed.status.code == 200 && changed.string() == "0123456789" && changed.source == .cache)
            #expect(origin.requests.count == 1)
            // Past the end, or several ranges: the origin's to answer.
            let past = try await client.get(origin.path).header("Range", "bytes=20-").accept(statusCodes: [416]).send()
            #expect(past.status.code == 416 && past.source == .network)
            let several = try await client.get(origin.path).header("Range", "bytes=0-1,3-4").send()
            #expect(several.source == .network)
            #expect(origin.requests.count == 3)
        }
    }

    @Test("parts of one representation are stored, answer the ranges inside them, and combine into the complete response (§3.3, §3.4)")
    func partsCombine() async throws {
        try await withOrigin([ranged()]) { origin, client, _ in
            let first = try await client.get(origin.path).header("Range", "bytes=0-4").send()
            #expect(first.status.code == 206 && first.source == .network && first.string() == "01234")
            let inside = try await client.get(origin.path).header("Range", "bytes=1-3").send()
            #expect(inside.status.code == 206 && inside.source == .cache && inside.string() == "123")
            let rest = try await client.get(origin.path).header("Range", "bytes=5-9").send()
            #expect(rest.source == .network && rest.string() == "56789")
            // Together they are the whole representation: a plain request is a hit.
            let whole = try await client.get(origin.path).send()
            #expect(whole.status.code == 200 && whole.source == .cache && whole.string() == "0123456789")
            #expect(whole.headers[.contentRange] == nil && whole.headers[.contentLength] == "10")
            #expect(origin.requests.map { $0.header("Range") } == ["bytes=0-4", "bytes=5-9"])
        }
    }

    @Test("a part answers no plain request; a part with a weak ETag or of another version is not combined")
    func partsAlone() async throws {
        try await withOrigin([ranged()]) { origin, client, _ in
            _ = try await client.get(origin.path).header("Range", "bytes=0-4").send()
            let whole = try await client.get(origin.path).send()
            #expect(whole.status.code == 200 && whole.source == .network && whole.string() == "0123456789")
        }
        try await withOrigin([ranged(etag: "W/\"v1\"")]) { origin, client, _ in
            _ = try await client.get(origin.path).header("Range", "bytes=0-4").send()
            #expect(try await client.get(origin.path).header("Range", "bytes=0-4").send().source == .network, "a weak tag cannot vouch for bytes")
        }
        try await withOrigin([ranged(etag: "\"v1\""), ranged("abcdefghij", etag: "\"v2\"")]) { origin, client, _ in
            _ = try await client.get(origin.path).header("Range", "bytes=0-4").send()
            _ = try await client.get(origin.path).header("Range", "bytes=5-9").send()
            // v2's part replaced v1's: bytes of two versions never make one body.
            let part = try await client.get(origin.path).header("Range", "bytes=6-7").send()
            #expect(part.source == .cache && part.string() == "gh")
            #expect(try await client.get(origin.path).header("Range", "bytes=0-1").send().source == .network)
            #expect(origin.requests.count == 3)
        }
    }

    @Test("Vary matching ignores case, order and whitespace in Accept-Language, and whitespace elsewhere (§4.1)")
    func varyNormalised() async throws {
        try await withOrigin([answer(200, [("Cache-Control", "max-age=3600"), ("Vary", "Accept-Language, X-Mode")])]) { origin, client, _ in
            _ = try await client.get(origin.path).header("Accept-Language", "en-US, de").header("X-Mode", "a,b").send()
            let hit = try await client.get(origin.path).header("Accept-Language", "de,en-us").header("X-Mode", "a , b").send()
            #expect(hit.source == .cache)
            let other = try await client.get(origin.path).header("Accept-Language", "fr").header("X-Mode", "a,b").send()
            #expect(other.source == .network)
            #expect(origin.requests.count == 2)
        }
    }
}

/// An origin of one representation that answers a single byte range with a 206, as servers do.
func ranged(_ representation: String = "0123456789", etag: String = "\"v1\"", cacheControl: String = "max-age=3600") -> @Sendable (ServerRequest) -> ServerResponse {
    { request in
        let bytes = Array(representation.utf8)
        let fields: [(name: String, value: String)] = [("ETag", etag), ("Cache-Control", cacheControl), ("Accept-Ranges", "bytes")]
        guard let asked = request.header("Range"), asked.hasPrefix("bytes="), !asked.contains(",") else {
            return ServerResponse(status: 200, headers: fields, body: .data(Data(bytes)))
        }
        let spec = asked.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        let first = spec[0].isEmpty ? bytes.count - (Int(spec[1]) ?? 0) : Int(spec[0]) ?? 0
        let last = spec[0].isEmpty || spec[1].isEmpty ? bytes.count - 1 : min(Int(spec[1]) ?? 0, bytes.count - 1)
        guard first < bytes.count, first <= last else {
            return ServerResponse(status: 416, headers: [("Content-Range", "bytes */\(bytes.count)")], body: .data(Data()))
        }
        return ServerResponse(
            status: 206, headers: fields + [("Content-Range", "bytes \(first)-\(last)/\(bytes.count)")], body: .data(Data(bytes[first...last])))
    }
}

/// A header name for a test's own fields.
func HTTPFieldName(_ name: String) -> HTTPField.Name {
    HTTPField.Name(name) ?? .contentType
}
