import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Synchronization
import Testing

/// The host door: international names go out as IDNA A-labels, IPv6 literals keep their
/// brackets, and `NO_PROXY` reads addresses and CIDR blocks as curl does.
@Suite("Host names and addresses", .hangGuard)
struct HostAddressTests {
    /// A wire middleware that answers every request itself, noting the authority and path it
    /// would have sent.
    private final class WireRecorder: WireMiddleware {
        let seen = Mutex<[(authority: String?, path: String?, url: String)]>([])
        func intercept(_ request: WireRequest, context: MiddlewareContext, next: WireNext) async throws -> TransportResponse {
            seen.withLock { $0.append((request.head.authority, request.head.path, request.url?.absoluteString ?? "")) }
            return TransportResponse(head: HTTPResponse(status: .ok), body: .empty)
        }
    }

    @Test("an international name reaches the wire as IDNA A-labels, however the URL spells it")
    func internationalNamesGoOutAsALabels() async throws {
        let recorder = WireRecorder()
        try await withServer(configure: { $0.wireMiddlewares = [recorder] }) { _, client in
            for url in [
                "http://bücher.test/ä?q=ü", "http://BÜCHER.test/ä?q=ü", "http://b%C3%BCcher.test/ä?q=ü", "http://xn--bcher-kva.test/ä?q=ü",
            ] {
                _ = try await client.get(url).send()
            }
        }
        let seen = recorder.seen.withLock { $0 }
        #expect(seen.count == 4)
        for entry in seen {
            #expect(entry.authority?.lowercased() == "xn--bcher-kva.test", "\(entry)")
            #expect(entry.path == "/%C3%A4?q=%C3%BC", "\(entry)")
            #expect(entry.url.lowercased().hasPrefix("http://xn--bcher-kva.test/"), "\(entry)")
        }
        // A base URL in another script, and a port.
        try await withServer(configure: {
            $0.baseURL = URL(string: "https://例え.テスト:8443/v1/")
            $0.wireMiddlewares = [recorder]
        }) { _, client in
            _ = try await client.get("users/{id}").parameters(["id": "7"]).send()
        }
        #expect(recorder.seen.withLock { $0.last?.authority } == "xn--r8jz45g.xn--zckzah:8443")
    }

    @Test("through a real proxy, the request line and Host carry the A-label")
    func internationalNamesThroughAProxy() async throws {
        #if canImport(FoundationNetworking)
        let kind = TransportKind.asyncHTTPClient  // FoundationNetworking's URLSession ignores proxies.
        #else
        let kind = TransportKind.urlSession
        #endif
        try await TestProxy.withRunning { proxy in
            try await withServer(transport: kind, configure: { $0.proxy = ProxySettings(all: Proxy(host: "127.0.0.1", port: proxy.port)) }) {
                _, client in
                // The name does not resolve, so the proxy answers 502; what matters is what it was asked.
                _ = try? await client.get("http://bücher.test/ä").send()
            }
            let target = try #require(proxy.exchanges.first?.target)
            #expect(target == "http://xn--bcher-kva.test/%C3%A4")
        }
    }

    /// FoundationNetworking's URLSession refuses IPv6 literal URLs on Linux; the transport says so.
    private func refusedOnThisPlatform(_ kind: TransportKind, _ body: () async throws -> Void) async throws {
        #if canImport(FoundationNetworking)
        if kind == .urlSession {
            let error = await apiError { try await body() }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message.contains("IPv6 literal") == true, "\(String(describing: error))")
            return
        }
        #endif
        try await body()
    }

    @Test("an IPv6 literal URL is called, with its brackets in Host", arguments: TransportKind.allCases)
    func ipv6LiteralsAreCalled(kind: TransportKind) async throws {
        try await TestServer.withRunning(host: "::1") { server in
            #expect(server.baseURL.absoluteString == "http://[::1]:\(server.port)/")
            try await refusedOnThisPlatform(kind) {
                try await withServer(transport: kind) { _, client in
                    let response = try await client.get("http://[::1]:\(server.port)/get?a=1").send()
                    #expect(response.status.code == 200)
                    #expect(server.requests.last?.header("Host") == "[::1]:\(server.port)")
                }
                // A base URL with a literal, and a path under it.
                try await withServer(transport: kind, configure: { $0.baseURL = URL(string: "http://[0:0:0:0:0:0:0:1]:\(server.port)/") }) {
                    _, client in
                    let response = try await client.get("get").send()
                    #expect(response.status.code == 200)
                }
            }
        }
    }

    @Test("a redirect to an IPv6 literal is followed", arguments: TransportKind.allCases)
    func redirectsToIPv6LiteralsAreFollowed(kind: TransportKind) async throws {
        try await TestServer.withRunning(host: "::1") { target in
            try await withServer(transport: kind) { server, client in
                let location = "http://[::1]:\(target.port)/get"
                try await refusedOnThisPlatform(kind) {
                    let response = try await client.get("/redirect-to").query(["url": .string(location)]).send()
                    #expect(response.status.code == 200)
                    #expect(target.requests.count == 1)
                    #expect(target.requests.last?.header("Host") == "[::1]:\(target.port)")
                }
            }
        }
    }

    @Test("hosts that are neither a name nor an IPv6 address are refused before sending")
    func malformedHostsAreRefused() async throws {
        let recorder = WireRecorder()
        try await withServer(configure: { $0.wireMiddlewares = [recorder] }) { _, client in
            for url in ["http://[::g]/", "http://[v1.x]/", "http://[1.2.3.4]/", "http://[::1%25lo]/", "http://a%2Fb.test/", "http://a%40b.test/"] {
                let error = await apiError { _ = try await client.get(url).send() }
                #expect(error?.code == .invalidRequest, "\(url)")
            }
        }
        #expect(recorder.seen.withLock { $0.isEmpty })
        let definitionError = #expect(throws: APIError.self) {
            try APIDefinitions(data: Data(#"{"DEFAULT": {"baseURL": "http://[::zz]/"}, "Ping": {"path": "ping"}}"#.utf8), format: .json)
        }
        #expect(definitionError?.code == .invalidDefinition)
    }

    @Test(
        "NO_PROXY addresses and CIDR blocks match addresses as bytes, as curl reads them",
        arguments: [
            ("127.0.0.1", ["127.0.0.0/8"], true),
            ("127.200.3.4", ["127.0.0.0/8"], true),
            ("128.0.0.1", ["127.0.0.0/8"], false),
            ("10.1.2.3", ["10.0.0.0/8"], true),
            ("11.1.2.3", ["10.0.0.0/8"], false),
            ("192.168.1.77", ["192.168.1.64/26"], true),
            ("192.168.1.128", ["192.168.1.64/26"], false),
            ("::1", ["::1/128"], true),
            ("::1", ["0:0:0:0:0:0:0:1"], true),
            ("fd12::5", ["fd00::/8"], true),
            ("fe80::1", ["fd00::/8"], false),
            ("10.0.0.1", ["::/0"], false),  // versions never match each other
            ("10.0.0.1", ["0.0.0.0/0"], true),
            ("10.0.0.1", ["10.0.0.0/33", "10.0.0.0/x", "10.0.0.0/-1", "10.0.0.0/"], false),  // malformed blocks match nothing
            ("xn--bcher-kva.test", ["bücher.test"], true),
            ("shop.xn--bcher-kva.test", [".Bücher.test"], true),
            ("1.10.0.0.1", ["10.0.0.1"], false),
        ])
    func bypassesAddressBlocks(host: String, bypass: [String], bypassed: Bool) throws {
        let settings = ProxySettings(all: Proxy(host: "proxy", port: 1), bypass: bypass)
        let url = try #require(URL(string: "http://\(host.contains(":") ? "[\(host)]" : host):8080/"))
        #expect((settings.proxy(for: url) == nil) == bypassed, "\(host) \(bypass)")
    }

    @Test("NO_PROXY=127.0.0.0/8 keeps loopback calls off the proxy", arguments: TransportKind.allCases)
    func cidrBypassReachesServersDirectly(kind: TransportKind) async throws {
        try await TestProxy.withRunning { proxy in
            let settings = try #require(try ProxySettings(environment: ["all_proxy": proxy.url, "NO_PROXY": "localhost,127.0.0.0/8,::1"]))
            try await withServer(transport: kind, configure: { $0.proxy = settings }) { server, client in
                let response = try await client.get(server.url("/get").absoluteString).send()
                #expect(response.status.code == 200)
                #expect(proxy.exchanges.isEmpty)
            }
        }
    }

    @Test("the command line calls and downloads from IPv6 literal and international URLs")
    func commandLineTakesIPv6AndInternationalURLs() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning(host: "::1") { server in
            let get = try await CLIRunner.run(["get", "http://[::1]:\(server.port)/get", "a==1"])
            #expect(get.status == 0, "\(get.standardError)")
            #expect(get.standardOutput.contains("\"a\""))
            let folder = Scratch.folder()
            let file = folder.appendingPathComponent("got.json")
            let download = try await CLIRunner.run(["download", "http://[::1]:\(server.port)/json", "-o", file.path])
            #expect(download.status == 0, "\(download.standardError)")
            #expect(FileManager.default.fileExists(atPath: file.path))
        }
        try await TestProxy.withRunning { proxy in
            let run = try await CLIRunner.run(["get", "http://bücher.test/x"], environment: ["http_proxy": proxy.url])
            #expect(run.status != 0)
            #expect(proxy.exchanges.first?.target == "http://xn--bcher-kva.test/x")
        }
    }
}
