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
    @Test("__Secure- and __Host- cookies, in any case, are refused over plain http and kept over https only when well-formed")
    func namePrefixes() throws {
        let jar = CookieJar()
        let fromPlainHTTP = [
            "__Secure-a=1; Secure; Path=/", "__Host-b=2; Secure; Path=/; Domain=example.com", "__Host-d=4", "__Host-d2=4; Path=/",
            "__Secure-e=5", "__secure-f=6; Secure", "__HOST-g=7; Secure; Path=/",
        ]
        jar.store(setCookie: fromPlainHTTP, from: try url("http://www.example.com/"), now: now)
        #expect(jar.all(now: now).isEmpty, "\(jar.all(now: now).map(\.name))")
        jar.store(
            setCookie: [
                "__Secure-a=1; Secure", "__secure-e=5; Secure; Domain=example.com", "__Host-d=4; Secure; Path=/", "__HOST-f=6; Secure; Path=/",
                "__Secure-no=1", "__SECURE-no2=1; Path=/",  // no Secure attribute
                "__Host-b=2; Secure; Path=/; Domain=www.example.com",  // a Domain attribute, even the host's own
                "__Host-nopath=1; Secure",  // no Path attribute, though the default path is / here
                "__Host-deep=1; Secure; Path=/api",  // a path other than /
                "__Host-insecure=1; Path=/",  // no Secure attribute
                "__Hostile=1; Path=/", "_Secure-x=1",  // not prefixes
            ], from: try url("https://www.example.com/login"), now: now)
        #expect(Set(jar.all(now: now).map(\.name)) == ["__Secure-a", "__secure-e", "__Host-d", "__HOST-f", "__Hostile", "_Secure-x"])
        #expect(jar.all(now: now).first { $0.name == "__Host-d" }?.isHostOnly == true)
        let plain = try #require(jar.cookieHeader(for: try url("http://www.example.com/"), now: now))
        #expect(Set(plain.components(separatedBy: "; ")) == ["__Hostile=1", "_Secure-x=1"])
    }

    @Test("plain http cannot replace, delete or shadow a Secure cookie of the same name; https can")
    func secureCookiesLeftAlone() throws {
        let jar = CookieJar()
        jar.store(
            setCookie: ["sid=good; Secure; Path=/; Domain=example.com", "admin=s; Secure; Path=/admin", "plain=1; Path=/"],
            from: try url("https://www.example.com/"), now: now)
        jar.store(
            setCookie: [
                "sid=evil; Path=/",  // host-only for www.example.com, under the Secure one's domain
                "sid=evil2; Path=/account; Domain=example.com",  // a path under the Secure one's
                "sid=gone; Path=/; Domain=example.com; Max-Age=0",  // deleting it
                "admin=p; Path=/",  // a wider path than the Secure one's: allowed, it shadows nothing
                "plain=2; Path=/",
            ], from: try url("http://www.example.com/"), now: now)
        // From a sibling host: its host-only domain and the Secure one's match one way.
        jar.store(setCookie: ["sid=evil3; Path=/"], from: try url("http://api.example.com/"), now: now)
        let sent = try #require(jar.cookieHeader(for: try url("https://www.example.com/account"), now: now))
        #expect(Set(sent.components(separatedBy: "; ")) == ["sid=good", "admin=p", "plain=2"])
        #expect(jar.all(now: now).filter { $0.name == "sid" }.map(\.value) == ["good"])
        #expect(jar.cookieHeader(for: try url("https://api.example.com/"), now: now) == "sid=good")
        // Another host's Secure cookie does not stop this one's plain cookie.
        jar.store(setCookie: ["sid=other; Path=/"], from: try url("http://other.test/"), now: now)
        #expect(jar.cookieHeader(for: try url("http://other.test/"), now: now) == "sid=other")
        // The https side replaces and deletes its own.
        jar.store(setCookie: ["sid=new; Secure; Path=/; Domain=example.com"], from: try url("https://www.example.com/"), now: now)
        #expect(jar.all(now: now).filter { $0.name == "sid" && $0.domain == "example.com" }.map(\.value) == ["new"])
        jar.store(setCookie: ["sid=; Secure; Path=/; Domain=example.com; Max-Age=0"], from: try url("https://www.example.com/"), now: now)
        #expect(!jar.all(now: now).contains { $0.name == "sid" && $0.domain == "example.com" })
    }

    @Test("Domain=co.uk is refused from a.co.uk and host-only from co.uk itself; wildcard, exception, international and IP hosts")
    func publicSuffixes() throws {
        let jar = CookieJar()
        jar.store(
            setCookie: ["wide=1; Domain=co.uk", "dot=2; Domain=.CO.UK", "tld=3; Domain=uk", "own=4; Domain=a.co.uk"],
            from: try url("http://a.co.uk/"), now: now)
        #expect(jar.all(now: now).map(\.name) == ["own"])
        #expect(jar.cookieHeader(for: try url("http://b.co.uk/"), now: now) == nil)
        #expect(jar.cookieHeader(for: try url("http://x.a.co.uk/"), now: now) == "own=4")
        // The host that is the suffix keeps the cookie, for itself only.
        jar.store(setCookie: ["suffix=5; Domain=co.uk"], from: try url("http://co.uk/"), now: now)
        let suffix = try #require(jar.all(now: now).first { $0.name == "suffix" })
        #expect(suffix.domain == "co.uk" && suffix.isHostOnly)
        #expect(jar.cookieHeader(for: try url("http://co.uk/"), now: now) == "suffix=5")
        #expect(jar.cookieHeader(for: try url("http://b.co.uk/"), now: now) == nil)
        // `*.ck` makes foo.ck a suffix; `!www.ck` makes www.ck a site.
        jar.store(setCookie: ["w=1; Domain=foo.ck"], from: try url("http://www.foo.ck/"), now: now)
        jar.store(setCookie: ["e=1; Domain=www.ck"], from: try url("http://a.www.ck/"), now: now)
        #expect(jar.cookieHeader(for: try url("http://other.foo.ck/"), now: now) == nil)
        #expect(jar.cookieHeader(for: try url("http://b.www.ck/"), now: now) == "e=1")
        // A suffix of the private section, and one written in Unicode in the list (公司.cn).
        jar.store(setCookie: ["gh=1; Domain=github.io"], from: try url("http://someone.github.io/"), now: now)
        jar.store(
            setCookie: ["cn=1; Domain=xn--55qx5d.cn", "shop=1; Domain=shop.xn--55qx5d.cn"], from: try url("http://www.shop.xn--55qx5d.cn/"), now: now)
        #expect(jar.cookieHeader(for: try url("http://other.github.io/"), now: now) == nil)
        #expect(jar.cookieHeader(for: try url("http://other.xn--55qx5d.cn/"), now: now) == nil)
        #expect(jar.cookieHeader(for: try url("http://shop.xn--55qx5d.cn/"), now: now) == "shop=1")
        // An IP address: a Domain naming itself is ignored (host-only), any other refuses the cookie.
        jar.store(setCookie: ["ip=1; Domain=127.0.0.1", "ip2=2; Domain=0.0.1", "ip3=3; Domain=1"], from: try url("http://127.0.0.1:8080/"), now: now)
        let ip = jar.all(now: now).filter { $0.domain == "127.0.0.1" }
        #expect(ip.map(\.name) == ["ip"] && ip.allSatisfy(\.isHostOnly))
    }

    @Test("cookies from a session or a cookie file pass the same rules: a prefixed or public-suffix cookie is dropped")
    func loadedCookies() async throws {
        let expires = Date().addingTimeInterval(86_400)
        func cookie(_ name: String, _ domain: String, path: String = "/", secure: Bool = false, hostOnly: Bool = true) -> Cookie {
            Cookie(name: name, value: "v", domain: domain, path: path, expires: expires, isSecure: secure, isHostOnly: hostOnly, created: expires - 86_400)
        }
        let cookies = [
            cookie("ok", "example.com", hostOnly: false), cookie("__Secure-ok", "example.com", secure: true),
            cookie("__Host-ok", "www.example.com", secure: true), cookie("suffixhost", "co.uk"),
            cookie("__Secure-bad", "example.com"), cookie("__host-bad", "example.com", secure: true, hostOnly: false),
            cookie("__Host-deep", "example.com", path: "/x", secure: true), cookie("wide", "co.uk", hostOnly: false),
            cookie("io", "github.io", hostOnly: false), cookie("cn", "xn--55qx5d.cn", hostOnly: false),
        ]
        let expected: Set = ["ok", "__Secure-ok", "__Host-ok", "suffixhost"]
        #expect(Set(CookieJar(cookies).all().map(\.name)) == expected)
        try await withTemporaryFolder("cookie-rules") { folder in
            let file = folder.appendingPathComponent("cookies.json")
            try JSONEncoder().encode(cookies).write(to: file)
            #expect(Set(try CookieJar(fileURL: file).all().map(\.name)) == expected)
        }
    }

    /// Routes `/set?c=…` to an answer that sets the cookie `c`: one `Set-Cookie` per answer, since
    /// URLSession joins repeated fields into one.
    private func settingCookies(_ server: TestServer) {
        server.route("/set") { request in ServerResponse(headers: [("Set-Cookie", request.query("c") ?? "")]) }
    }

    @Test("over plain http the real server's prefixed and Secure cookies are not kept, on both transports", arguments: TransportKind.allCases)
    func plainHTTPThroughTheChain(kind: TransportKind) async throws {
        try await TestServer.withRunning { server in
            settingCookies(server)
            let jar = CookieJar()
            let client = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.cookies = jar
            }, transport: kind.make())
            for cookie in [
                "__Secure-a=1; Secure; Path=/", "__Host-b=2; Secure; Path=/; Domain=127.0.0.1", "__Host-d=4; Path=/", "__secure-e=5; Path=/",
                "sid=x; Secure; Path=/", "ip=6; Domain=0.0.1", "plain=7; Path=/",
            ] {
                _ = try await client.get("/set").query(["c": .string(cookie)]).send()
            }
            _ = try await client.get("/anything/next").send()
            #expect(server.requests.last?.header("Cookie") == "plain=7")
            #expect(jar.all().map(\.name) == ["plain"])
        }
    }

    @Test(
        "over https (the TLS test server) well-formed prefixed cookies are kept and sent back, and plain http on the same host cannot replace the Secure sid",
        arguments: TransportKind.allCases)
    func secureOriginThroughTheChain(plainTransport kind: TransportKind) async throws {
        let certificates = try #require(TLSTests.certificates)
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        try await TestServer.withRunning(tls: .init(identity: certificates.localhost)) { secure in
            try await TestServer.withRunning { plain in
                settingCookies(secure)
                settingCookies(plain)
                // Cookies do not tell ports apart: both servers are the host 127.0.0.1 to the jar.
                let jar = CookieJar()
                let https = APIClient(configuration: .init {
                    $0.baseURL = secure.baseURL
                    $0.tls.trustRoots = .adding(authority)
                    $0.cookies = jar
                }, transport: TransportKind.asyncHTTPClient.make())
                let http = APIClient(configuration: .init {
                    $0.baseURL = plain.baseURL
                    $0.cookies = jar
                }, transport: kind.make())
                for cookie in [
                    "__Host-sid=good; Secure; Path=/", "__Secure-pref=1; Secure; Path=/", "sid=good; Secure; Path=/",
                    "__Host-wide=1; Secure; Path=/; Domain=127.0.0.1", "__Host-deep=1; Secure; Path=/set", "__Secure-bare=1; Path=/",
                ] {
                    _ = try await https.get("/set").query(["c": .string(cookie)]).send()
                }
                #expect(Set(jar.all().map(\.name)) == ["__Host-sid", "__Secure-pref", "sid"])
                for cookie in ["sid=evil; Path=/", "__Host-sid=evil; Path=/", "sid=gone; Path=/; Max-Age=0", "note=plain; Path=/"] {
                    _ = try await http.get("/set").query(["c": .string(cookie)]).send()
                }
                _ = try await https.get("/anything/account").send()
                let sent = try #require(secure.requests.last?.header("Cookie"))
                #expect(Set(sent.components(separatedBy: "; ")) == ["__Host-sid=good", "__Secure-pref=1", "sid=good", "note=plain"])
                _ = try await http.get("/anything/page").send()
                #expect(plain.requests.last?.header("Cookie") == "note=plain", "a Secure cookie never goes over plain http")
            }
        }
    }

    @Test("several Set-Cookie fields in one answer all reach the jar, Expires dates and all, on both transports", arguments: TransportKind.allCases)
    func severalCookiesInOneAnswer(kind: TransportKind) async throws {
        try await TestServer.withRunning { server in
            server.route("/many") { _ in
                ServerResponse(headers: [
                    ("Set-Cookie", "a=1; Path=/; Expires=Wed, 21 Oct 2099 07:28:00 GMT"),
                    ("Set-Cookie", "b=2, still-b; Path=/"),
                    ("Set-Cookie", "c=3; Max-Age=600"),
                ])
            }
            let jar = CookieJar()
            let transport = kind.make()
            let client = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.cookies = jar
            }, transport: transport)
            _ = try await client.get("/many").send()
            try await transport.shutdown()
            let kept = Dictionary(uniqueKeysWithValues: jar.all().map { ($0.name, $0.value) })
            #expect(kept == ["a": "1", "b": "2, still-b", "c": "3"])
            #expect(jar.all().first { $0.name == "a" }?.expires != nil)
        }
    }

    @Test("URLSession's joined Set-Cookie is split only where a cookie's name= follows a comma")
    func joinedSetCookieIsSplit() {
        let split = URLSessionTransport.splitJoinedSetCookie
        #expect(split("a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT, b=2; Path=/") == ["a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT", "b=2; Path=/"])
        #expect(split("a=1,b=2,  __Host-c=3") == ["a=1", "b=2", "__Host-c=3"])
        #expect(split("a=x, y") == ["a=x, y"])
        #expect(split(", , a=1,") == [",", "a=1,"])  // what is left is the jar's to refuse
        #expect(split("") == [])
        // Linear: a field of a million commas is split quickly and into one piece.
        #expect(split(String(repeating: ",", count: 1_000_000)).count == 1)
    }
}
