import Callsign
import CallsignTesting
import Foundation
import Testing

@testable import CallsignTesting

/// Proxies as curl uses them: a plain `http://` request goes to the proxy in absolute form
/// (`GET http://host/path HTTP/1.1`), `https://` through `CONNECT`, `Proxy.alwaysTunnels` tunnels
/// both — against the in-process TestProxy and a real Squid with its stock rules.
@Suite("Proxies as curl uses them: absolute form for http, CONNECT for https", .hangGuard)
struct ForwardProxyTests {
    static let certificates: TestCertificates? = try? TestCertificates()

    private func proxySettings(port: Int, credentials: Proxy.Credentials? = nil, alwaysTunnels: Bool = false) -> ProxySettings {
        ProxySettings(all: Proxy(host: "127.0.0.1", port: port, credentials: credentials, alwaysTunnels: alwaysTunnels))
    }

    @Test func plainHTTPGoesToTheProxyInAbsoluteFormNeverThroughConnect() async throws {
        // The proxy tunnels to port 443 only, as Squid's stock configuration does.
        try await TestProxy.withRunning(tunnelPorts: [443]) { proxy in
            try await withServer(configure: { $0.proxy = proxySettings(port: proxy.port) }) { server, client in
                let first = try await client.get(server.url("/get").absoluteString).query(["q": "a b"]).send()
                let second = try await client.post(server.url("/post").absoluteString).body(.text("hello")).send()
                #expect(first.status.code == 200)
                #expect(second.status.code == 200)
                let exchanges = proxy.exchanges
                #expect(exchanges.map(\.method) == ["GET", "POST"])
                #expect(exchanges.first?.target == "http://127.0.0.1:\(server.port)/get?q=a%20b")
                #expect(exchanges.allSatisfy { $0.status == nil }, "forwarded, not answered by the proxy")
                #expect(server.requests.map(\.uri) == ["/get?q=a%20b", "/post"])
                #expect(server.requests.last.map { String(decoding: $0.body, as: UTF8.self) } == "hello")
            }
        }
    }

    @Test func alwaysTunnelsSendsPlainHTTPThroughConnectWhichAStockProxyRefuses() async throws {
        try await TestProxy.withRunning { proxy in
            try await withServer(configure: { $0.proxy = proxySettings(port: proxy.port, alwaysTunnels: true) }) { server, client in
                let response = try await client.get(server.url("/get").absoluteString).send()
                #expect(response.status.code == 200)
                #expect(proxy.exchanges.map(\.method) == ["CONNECT"])
                #expect(proxy.exchanges.first?.target == "127.0.0.1:\(server.port)")
            }
        }
        // What every plain-http request did before: a tunnel to a port other than 443.
        try await TestProxy.withRunning(tunnelPorts: [443]) { proxy in
            try await withServer(configure: { $0.proxy = proxySettings(port: proxy.port, alwaysTunnels: true) }) { server, client in
                let error = await apiError { _ = try await client.get(server.url("/get").absoluteString).send() }
                #expect(error?.code == .transport)
                #expect(error?.requestSent == false)
                #expect(error?.message.contains("did not open a tunnel") == true, "\(String(describing: error))")
                #expect(proxy.exchanges.map(\.status) == [403])
                #expect(server.requests.isEmpty)
            }
        }
    }

    @Test func proxyCredentialsInAbsoluteFormGoToTheProxyOnlyAndA407IsTheProxysRefusal() async throws {
        try await TestProxy.withRunning(credentials: ("alice", "hunter2")) { proxy in
            let right = Proxy.Credentials(username: "alice", password: "hunter2")
            try await withServer(configure: { $0.proxy = proxySettings(port: proxy.port, credentials: right) }) { server, client in
                let response = try await client.get(server.url("/headers").absoluteString).send()
                #expect(response.status.code == 200)
                #expect(proxy.exchanges.map(\.method) == ["GET"])
                #expect(proxy.exchanges.first?.proxyAuthorization == "Basic " + Data("alice:hunter2".utf8).base64EncodedString())
                let seen = try #require(server.requests.last)
                #expect(seen.headers.allSatisfy { $0.name.lowercased() != "proxy-authorization" })
            }
            let wrong = Proxy.Credentials(username: "alice", password: "wrong-one")
            try await withServer(configure: { $0.proxy = proxySettings(port: proxy.port, credentials: wrong) }) { server, client in
                let error = await apiError { _ = try await client.get(server.url("/get").absoluteString).send() }
                #expect(error?.code == .transport)
                #expect(error?.requestSent == false)
                #expect(error?.message.contains("407") == true, "\(String(describing: error))")
                #expect(error?.description.contains("wrong-one") == false)
                #expect(server.requests.isEmpty)
            }
        }
    }

    @Test func httpsGoesThroughATunnel() async throws {
        let certificates = try #require(Self.certificates)
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        try await TestProxy.withRunning { proxy in
            try await TestServer.withRunning(tls: .init(identity: certificates.localhost)) { server in
                let transport = TransportKind.asyncHTTPClient.make()
                let client = APIClient(
                    configuration: .init {
                        $0.proxy = proxySettings(port: proxy.port)
                        $0.tls.trustRoots = .adding(authority)
                    }, transport: transport)
                let response = try await client.get(server.url("/get").absoluteString).send()
                try await transport.shutdown()
                #expect(response.status.code == 200)
                #expect(proxy.exchanges.map(\.method) == ["CONNECT"])
                #expect(proxy.exchanges.first?.target.hasSuffix(":\(server.port)") == true)
            }
        }
    }

    // MARK: A real Squid, with its stock rules

    /// Runs `body` with Squid, or skips the test when Squid cannot be installed here.
    private func withSquid(tunnelPorts: [Int] = [], credentials: Bool = false, _ body: (SquidTestProxy) async throws -> Void) async throws {
        do {
            try await SquidTestProxy.withRunning(tunnelPorts: tunnelPorts, credentials: credentials, body)
        } catch let unavailable as SquidTestProxy.Unavailable {
            try Test.cancel(Comment(rawValue: unavailable.description))
        }
    }

    @Test func plainHTTPThroughSquidsStockRules() async throws {
        try await withSquid { squid in
            try await withServer(configure: { $0.proxy = proxySettings(port: squid.port) }) { server, client in
                let response = try await client.post(server.url("/post").absoluteString).body(.text("through squid")).send()
                #expect(response.status.code == 200)
                let seen = try #require(server.requests.last)
                #expect(seen.uri == "/post")
                #expect(String(decoding: seen.body, as: UTF8.self) == "through squid")
                let via = seen.headers.first { $0.name.lowercased() == "via" }?.value ?? ""
                #expect(via.contains("squid"), "the request came through Squid: Via is \(via)")
            }
            // The reported failure: a tunnel to a port other than 443 is refused by Squid.
            try await withServer(configure: { $0.proxy = proxySettings(port: squid.port, alwaysTunnels: true) }) { server, client in
                let error = await apiError { _ = try await client.get(server.url("/get").absoluteString).send() }
                #expect(error?.code == .transport)
                #expect(error?.message.contains("did not open a tunnel") == true, "\(String(describing: error))")
                #expect(server.requests.isEmpty)
            }
        }
    }

    @Test func squidsCredentialsGoToSquidOnly() async throws {
        try await withSquid(credentials: true) { squid in
            let (username, password) = SquidTestProxy.credentials
            let right = Proxy.Credentials(username: username, password: password)
            try await withServer(configure: { $0.proxy = proxySettings(port: squid.port, credentials: right) }) { server, client in
                let response = try await client.get(server.url("/headers").absoluteString).send()
                #expect(response.status.code == 200)
                let seen = try #require(server.requests.last)
                #expect(seen.headers.allSatisfy { $0.name.lowercased() != "proxy-authorization" })
            }
            try await withServer(configure: { $0.proxy = proxySettings(port: squid.port) }) { server, client in
                let error = await apiError { _ = try await client.get(server.url("/get").absoluteString).send() }
                #expect(error?.code == .transport)
                #expect(error?.requestSent == false)
                #expect(error?.message.contains("407") == true, "\(String(describing: error))")
                #expect(server.requests.isEmpty)
            }
        }
    }

    @Test func httpsThroughSquidIsATunnel() async throws {
        let certificates = try #require(Self.certificates)
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        try await TestServer.withRunning(tls: .init(identity: certificates.localhost)) { server in
            for allowed in [true, false] {
                try await withSquid(tunnelPorts: allowed ? [server.port] : []) { squid in
                    let transport = TransportKind.asyncHTTPClient.make()
                    let client = APIClient(
                        configuration: .init {
                            $0.proxy = proxySettings(port: squid.port)
                            $0.tls.trustRoots = .adding(authority)
                            $0.retry = .none
                        }, transport: transport)
                    let before = server.requests.count
                    let error = await apiError { _ = try await client.get(server.url("/get").absoluteString).send() }
                    try await transport.shutdown()
                    if allowed {
                        #expect(error == nil, "\(String(describing: error))")
                        #expect(server.requests.count == before + 1)
                    } else {
                        // Squid's stock rule: CONNECT to port 443 only.
                        #expect(error?.message.contains("did not open a tunnel") == true, "\(String(describing: error))")
                        #expect(server.requests.count == before)
                    }
                }
            }
        }
    }
}
