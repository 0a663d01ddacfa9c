import Callsign
import CallsignTesting
import Foundation
import Testing

#if os(Linux) || os(Android) || os(Windows)
import AsyncHTTPClient
#endif

@Suite("Proxy settings", .hangGuard)
struct ProxySettingsTests {
    @Test func readsProxyURLsAsCurlDoes() throws {
        let proxy = try Proxy(url: "http://al%40ice:p%3Ass@proxy.internal:3128")
        #expect(proxy.host == "proxy.internal")
        #expect(proxy.port == 3128)
        #expect(proxy.credentials == Proxy.Credentials(username: "al@ice", password: "p:ss"))
        #expect(try Proxy(url: "127.0.0.1:8080") == Proxy(host: "127.0.0.1", port: 8080))
        #expect(try Proxy(url: "proxy.internal").port == 1080)
        #expect(try Proxy(url: "http://[::1]:3128").host == "::1")
    }

    @Test func refusesProxiesItCannotUseWithoutShowingThePassword() {
        for text in ["https://user:hunter2@proxy:443", "socks5://user:hunter2@proxy:1080", "http://user:hunter2@:80", "http://user:hunter2@proxy:99999"] {
            let error = #expect(throws: APIError.self) { try Proxy(url: text) }
            #expect(error?.code == .invalidRequest)
            #expect(error?.description.contains("hunter2") == false, "\(text)")
        }
    }

    @Test func neverShowsTheProxyPassword() {
        let proxy = Proxy(host: "proxy", port: 3128, credentials: .init(username: "alice", password: "hunter2"))
        let settings = ProxySettings(all: proxy)
        var dumped = ""
        dump(settings, to: &dumped)
        for text in [proxy.description, "\(settings)", String(reflecting: proxy), dumped] {
            #expect(!text.contains("hunter2"), "\(text)")
            #expect(text.contains("alice"))
        }
    }

    @Test func readsTheEnvironmentAsCurlDoes() throws {
        #expect(try ProxySettings(environment: ["PATH": "/bin"]) == nil)
        let both = try #require(try ProxySettings(environment: ["HTTP_PROXY": "http://upper:1", "http_proxy": "http://lower:2", "HTTPS_PROXY": "http://secure:3"]))
        #expect(both.http?.host == "lower")
        #expect(both.https?.host == "secure")
        let all = try #require(try ProxySettings(environment: ["ALL_PROXY": "http://all:4", "https_proxy": "http://secure:5", "NO_PROXY": "localhost, .internal 10.0.0.1"]))
        #expect(all.http?.host == "all")
        #expect(all.https?.host == "secure")
        #expect(all.bypass == ["localhost", ".internal", "10.0.0.1"])
        // Under CGI, HTTP_PROXY holds a request's Proxy: header ("httpoxy"): ignored.
        #expect(try ProxySettings(environment: ["HTTP_PROXY": "http://evil:1", "REQUEST_METHOD": "GET"]) == nil)
        #expect(throws: APIError.self) { try ProxySettings(environment: ["HTTPS_PROXY": "ftp://nope"]) }
        let configuration = try APIClient.Configuration.environment(["https_proxy": "http://127.0.0.1:9"])
        #expect(configuration.proxy?.https == Proxy(host: "127.0.0.1", port: 9))
        #expect(configuration.proxy?.http == nil)
    }

    @Test func choosesTheProxyByScheme() throws {
        let settings = ProxySettings(http: Proxy(host: "plain", port: 1), https: Proxy(host: "secure", port: 2))
        #expect(settings.proxy(for: try #require(URL(string: "http://example.com/")))?.host == "plain")
        #expect(settings.proxy(for: try #require(URL(string: "https://example.com/")))?.host == "secure")
        #expect(settings.proxy(for: try #require(URL(string: "ftp://example.com/"))) == nil)
    }

    @Test(arguments: [
        ("api.example.com", 443, ["example.com"], true),
        ("example.com", 443, [".example.com"], true),
        ("api.example.com", 443, ["*.example.com"], true),
        ("badexample.com", 443, ["example.com"], false),
        ("EXAMPLE.com.", 443, ["example.COM"], true),
        ("anything", 80, ["*"], true),
        ("example.com", 8080, ["example.com:8080"], true),
        ("example.com", 443, ["example.com:8080"], false),
        ("::1", 443, ["::1"], true),
        ("[::1]", 8443, ["[::1]:8443"], true),
        ("10.0.0.1", 443, ["10.0.0.10"], false),
        ("example.com", 443, ["", " "], false),
    ])
    func bypassesHostsAsNoProxyLists(host: String, port: Int, bypass: [String], bypassed: Bool) throws {
        let settings = ProxySettings(all: Proxy(host: "proxy", port: 1), bypass: bypass)
        let url = try #require(URL(string: "https://\(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host):\(port)/"))
        #expect((settings.proxy(for: url) == nil) == bypassed)
    }
}

/// The transports that can go through a proxy here: URLSession on Linux cannot
/// (FoundationNetworking ignores its proxy settings) and says so; see `urlSessionOnLinuxRefusesProxies`.
let proxyingTransports: [TransportKind] = {
    #if canImport(FoundationNetworking)
    [.asyncHTTPClient]
    #else
    TransportKind.allCases
    #endif
}()

@Suite("Proxies, through a real one", .hangGuard)
struct ProxyTests {
    @Test(arguments: proxyingTransports)
    func callsGoThroughTheProxy(kind: TransportKind) async throws {
        try await TestProxy.withRunning { proxy in
            try await withServer(transport: kind, configure: { $0.proxy = ProxySettings(all: Proxy(host: "127.0.0.1", port: proxy.port)) }) {
                server, client in
                let response = try await client.get(server.url("/get").absoluteString).send()
                #expect(response.status.code == 200)
                #expect(proxy.exchanges.count == 1)
                #expect(proxy.exchanges.first?.target.contains("127.0.0.1:\(server.port)") == true)
                #expect(proxy.relayedBytes > 0)
            }
        }
    }

    @Test(arguments: TransportKind.allCases)
    func hostsOnTheBypassListAreReachedDirectly(kind: TransportKind) async throws {
        try await TestProxy.withRunning { proxy in
            try await withServer(
                transport: kind, configure: { $0.proxy = ProxySettings(all: Proxy(host: "127.0.0.1", port: proxy.port), bypass: ["127.0.0.1"]) }
            ) { server, client in
                let response = try await client.get(server.url("/get").absoluteString).send()
                #expect(response.status.code == 200)
                #expect(proxy.exchanges.isEmpty)
            }
        }
    }

    @Test(.enabled(if: TransportKind.asyncHTTPClientIsBuilt), arguments: proxyingTransports)
    func proxyCredentialsGoToTheProxyOnly(kind: TransportKind) async throws {
        try await TestProxy.withRunning(credentials: ("alice", "hunter2")) { proxy in
            let settings = ProxySettings(all: Proxy(host: "127.0.0.1", port: proxy.port, credentials: .init(username: "alice", password: "hunter2")))
            try await withServer(transport: kind, configure: { $0.proxy = settings }) { server, client in
                // A Proxy-Authorization header on the request itself is never sent either.
                let response = try await client.get(server.url("/headers").absoluteString)
                    .header("Proxy-Authorization", "Basic c3RyYXk6c2VjcmV0").send()
                #expect(response.status.code == 200)
                let accepted = proxy.exchanges.filter { $0.status != 407 }
                #expect(accepted.count == 1)
                #expect(accepted.first?.proxyAuthorization == "Basic " + Data("alice:hunter2".utf8).base64EncodedString())
                let seen = try #require(server.requests.last)
                #expect(seen.headers.allSatisfy { $0.name.lowercased() != "proxy-authorization" })
            }
        }
    }

    @Test func aProxyThatWantsCredentialsIsAnErrorThatNamesItWithoutSecrets() async throws {
        try await TestProxy.withRunning(credentials: ("alice", "hunter2")) { proxy in
            let settings = ProxySettings(all: Proxy(host: "127.0.0.1", port: proxy.port, credentials: .init(username: "alice", password: "wrong-one")))
            try await withServer(configure: { $0.proxy = settings }) { server, client in
                let error = await apiError { _ = try await client.get(server.url("/get").absoluteString).send() }
                #expect(error?.code == .transport)
                #expect(error?.requestSent == false)
                #expect(error?.message.contains("407") == true, "\(String(describing: error))")
                #expect(error?.message.contains("proxy") == true)
                #expect(error?.description.contains("wrong-one") == false)
                #expect(server.requests.isEmpty)
            }
        }
    }

    @Test func theEnvironmentsProxyIsUsedByAClientBuiltWithIt() async throws {
        try await TestProxy.withRunning { proxy in
            try await TestServer.withRunning { server in
                let configuration = try APIClient.Configuration.environment(["http_proxy": proxy.url, "no_proxy": "example.com"])
                let transport = TransportKind.asyncHTTPClient.make()
                let client = APIClient(configuration: configuration, transport: transport)
                let response = try await client.get(server.url("/get").absoluteString).send()
                #expect(response.status.code == 200)
                #expect(proxy.exchanges.count == 1)
                try await transport.shutdown()
            }
        }
    }

    #if canImport(FoundationNetworking)
    @Test func urlSessionOnLinuxRefusesProxiesRatherThanGoingAroundThem() async throws {
        try await TestProxy.withRunning { proxy in
            try await withServer(transport: .urlSession, configure: { $0.proxy = ProxySettings(all: Proxy(host: "127.0.0.1", port: proxy.port)) }) {
                server, client in
                let error = await apiError { _ = try await client.get(server.url("/get").absoluteString).send() }
                #expect(error?.code == .invalidRequest)
                #expect(error?.message.contains("AsyncHTTPClientTransport") == true)
                #expect(server.requests.isEmpty)
            }
        }
    }
    #endif

    #if os(Linux) || os(Android) || os(Windows)
    @Test func aBorrowedHTTPClientCannotBeSentThroughAnotherProxy() async throws {
        let borrowed = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        let client = APIClient(
            configuration: .init { $0.proxy = ProxySettings(all: Proxy(host: "127.0.0.1", port: 9)) },
            transport: AsyncHTTPClientTransport(client: borrowed))
        let error = await apiError { _ = try await client.get("http://127.0.0.1:9/x").send() }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("borrows") == true)
        try await borrowed.shutdown()
    }
    #endif
}
