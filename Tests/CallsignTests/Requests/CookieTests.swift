import Callsign
import CallsignTesting
import Foundation
import Testing

@testable import Callsign

@Suite("Cookies: one RFC 6265 jar on every transport", .hangGuard)
struct CookieTests {
    private let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func url(_ text: String) throws -> URL { try #require(URL(string: text)) }

    @Test("domain, host-only, path, Secure and expiry decide which cookies a request carries")
    func matching() throws {
        let jar = CookieJar()
        jar.store(
            setCookie: [
                "session=abc; Path=/; Secure", "pref=dark", "wide=1; Domain=.example.com; Path=/",
                "deep=2; Path=/api/v1/users", "short=3; Max-Age=60", "gone=4; Max-Age=0", "old=5; Expires=Wed, 21 Oct 2015 07:28:00 GMT",
                "other=6; Domain=evil.test", "bad name=7", "=8", "ip=9; Domain=0.0.1",
            ], from: try url("https://www.example.com/api/v1/login"), now: now)
        #expect(Set(jar.all(now: now).map(\.name)) == ["session", "pref", "wide", "deep", "short"])
        let header = try #require(jar.cookieHeader(for: try url("https://www.example.com/api/v1/users"), now: now))
        #expect(header.hasPrefix("deep=2"))
        #expect(Set(header.components(separatedBy: "; ")) == ["deep=2", "pref=dark", "session=abc", "wide=1", "short=3"])
        // Host-only cookies stay on their host; Domain cookies reach subdomains.
        #expect(jar.cookieHeader(for: try url("https://api.example.com/"), now: now) == "wide=1")
        // Secure cookies never go over http; path /api/v1 does not match /api/v10.
        let plain = try #require(jar.cookieHeader(for: try url("http://www.example.com/api/v10"), now: now))
        #expect(!plain.contains("session=") && !plain.contains("deep=") && !plain.contains("pref="))
        // Expiry: Max-Age=60 is gone a minute later.
        #expect(!(jar.cookieHeader(for: try url("https://www.example.com/"), now: now + 61) ?? "").contains("short="))
        // A Secure cookie set over http is ignored; a cookie is replaced by name, domain and path.
        jar.store(setCookie: ["sneaky=1; Secure", "pref=light; Path=/api/v1"], from: try url("http://www.example.com/"), now: now)
        #expect(!jar.all(now: now).contains { $0.name == "sneaky" })
        #expect(jar.all(now: now).first { $0.name == "pref" }?.value == "light")
        #expect(!"\(jar.all(now: now).first { $0.name == "session" }!)".contains("abc"), "a cookie's description hides its value")
        // Deleting with Max-Age=0.
        jar.store(setCookie: ["pref=x; Path=/api/v1; Max-Age=0"], from: try url("https://www.example.com/"), now: now)
        #expect(!jar.all(now: now).contains { $0.name == "pref" })
    }

    @Test("a server cannot grow a jar without bound")
    func bounds() throws {
        let jar = CookieJar()
        let many = (0..<200).map { "c\($0)=v" }
        jar.store(setCookie: many, from: try url("https://a.example/"), now: now)
        #expect(jar.all(now: now).count == CookieJar.maximumCookiesPerDomain)
        jar.store(setCookie: ["huge=" + String(repeating: "x", count: 10_000)], from: try url("https://a.example/"), now: now)
        #expect(!jar.all(now: now).contains { $0.name == "huge" })
        jar.store(setCookie: ["big=1; Max-Age=99999999999999999999"], from: try url("https://a.example/"), now: now)
        #expect(jar.all(now: now).contains { $0.name == "big" })
    }

    @Test("persistent cookies survive in a 0600 file; session cookies do not", arguments: [true])
    func persistence(_: Bool) async throws {
        try await withTemporaryFolder("cookies") { folder in
            let file = folder.appendingPathComponent("cookies.json")
            let jar = try CookieJar(fileURL: file)
            jar.store(setCookie: ["keep=1; Max-Age=3600", "session=2"], from: try url("https://example.com/"))
            let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            let reopened = try CookieJar(fileURL: file)
            #expect(reopened.all().map(\.name) == ["keep"])
            try Data("not json".utf8).write(to: file)
            #expect(throws: APIError.self) { _ = try CookieJar(fileURL: file) }
        }
    }

    @Test("the jar sends and stores cookies through the chain, on every redirect hop and both transports", arguments: TransportKind.allCases)
    func throughTheChain(kind: TransportKind) async throws {
        try await TestServer.withRunning { server in
            server.route("/login") { _ in
                ServerResponse(status: 302, headers: [("Set-Cookie", "session=s1; Path=/"), ("Location", "/account")])
            }
            server.route("/account") { request in
                .json(["cookie": .string(request.header("Cookie") ?? "")], headers: [("Set-Cookie", "seen=yes; Path=/account")])
            }
            let jar = CookieJar()
            let client = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.cookies = jar
            }, transport: kind.make())
            let account = try await client.get("/login").send().json()
            #expect(account["cookie"] == "session=s1", "the redirect hop carried the cookie its first hop set")
            var own = Request.get("/account")
            own.headers["Cookie"] = "mine=1"
            _ = try await client.send(own)
            #expect(server.requests.last?.header("Cookie") == "mine=1; seen=yes; session=s1")

            // Without a jar, no transport keeps cookies of its own.
            let plain = APIClient(configuration: .init { $0.baseURL = server.baseURL }, transport: kind.make())
            _ = try await plain.get("/login").send()
            #expect(server.requests.last?.header("Cookie") == nil)
        }
    }

    @Test("cookies are part of the cache's private partition: a cached answer never reaches another session")
    func cachePartition() async throws {
        try await TestServer.withRunning { server in
            let storage = MemoryCacheStorage()
            func client(session: String) -> APIClient {
                let jar = CookieJar()
                jar.store(setCookie: ["session=\(session)"], from: server.baseURL)
                return APIClient(configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.cookies = jar
                    $0.cache = HTTPCache(storage: storage)
                })
            }
            let ann = client(session: "ann")
            for _ in 0..<2 { _ = try await ann.get("cache/max-age/86400/profile").send() }
            #expect(server.hits("/cache/max-age/86400/profile") == 1, "the same session is served from the cache")
            _ = try await client(session: "bob").get("cache/max-age/86400/profile").send()
            #expect(server.hits("/cache/max-age/86400/profile") == 2, "another session's cookie is another partition")
            #expect(server.requests.last?.header("Cookie") == "session=bob")
        }
    }
}
