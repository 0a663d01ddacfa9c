import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Synchronization
import Testing

/// Answers from a table, for the one case a loopback server cannot play: an https origin.
struct ScriptedTransport: Transport {
    let answers: [String: (Int, [String: String])]
    let seen = Seen()

    final class Seen: Sendable { let urls = Mutex<[String]>([]) }

    func send(_ transportRequest: TransportRequest) async throws -> TransportResponse {
        let request = transportRequest.head
        let url = "\(request.scheme ?? "")://\(request.authority ?? "")\(request.path ?? "")"
        seen.urls.withLock { $0.append(url) }
        let (status, headers) = answers[url] ?? (404, [:])
        var fields = HTTPFields()
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        return TransportResponse(head: HTTPResponse(status: .init(code: status), headerFields: fields), body: .empty)
    }
}

@Suite("Redirects", .hangGuard)
struct RedirectTests {
    @Test("GET redirects are followed up to the limit; one more is an error", arguments: TransportKind.allCases)
    func hops(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let response = try await client.get("/redirect/5").send()
            #expect(response.status == .ok)
            #expect(response.request.url == server.url("/get"))
            let error = await apiError { _ = try await client.get("/redirect/6").send() }
            #expect(error?.code == .redirect)
            #expect(error?.message.contains("more than 5 redirects") == true)
        }
    }

    @Test("a redirect cycle is detected")
    func loop() async throws {
        try await withServer { server, client in
            server.route("/loop-a") { _ in ServerResponse(status: 302, headers: [("Location", "/loop-b")]) }
            server.route("/loop-b") { _ in ServerResponse(status: 302, headers: [("Location", "/loop-a")]) }
            let error = await apiError { _ = try await client.get("/loop-a").send() }
            #expect(error?.code == .redirect)
            #expect(error?.message.contains("loop") == true)
            #expect(server.hits("/loop-a") == 1)
        }
    }

    @Test(
        "method and body rules: 301/302 after POST and 303 become GET without body; 307/308 keep both",
        arguments: [(301, "GET", false), (302, "GET", false), (303, "GET", false), (307, "POST", true), (308, "POST", true)])
    func methodRules(status: Int, method: String, keepsBody: Bool) async throws {
        try await withServer { server, client in
            let echo = try await client.post("/redirect-to").query(["url": "/anything/target", "status_code": .int(status)])
                .parameters(["title": "Balsa"]).send().json()
            #expect(echo["method"]?.stringValue == method)
            #expect(echo["path"] == "/anything/target")
            #expect(echo["args"] == [:])
            if keepsBody {
                #expect(echo["json"] == ["title": "Balsa"])
                #expect(echo["headers"]?["Content-Type"] == "application/json")
            } else {
                #expect(echo["data"] == "")
                #expect(echo["headers"]?["Content-Type"] == nil)
            }
        }
    }

    @Test("307 resends replayable bodies (data, file, factory) and refuses to replay a one-shot stream")
    func replayableBodies() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-body-\(UUID().uuidString)")
        try Data("from a file".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await withServer { server, client in
            let target: Parameters = ["url": "/anything/target", "status_code": 307]
            let bodies: [(RequestBody, String)] = [
                (.text("in memory"), "in memory"),
                (.file(file), "from a file"),
                (RequestBody(content: .factory { ["fac", "tory"].map { Data($0.utf8) }.asyncChunks }, contentType: "text/plain"), "factory"),
            ]
            for (body, text) in bodies {
                let echo = try await client.post("/redirect-to").query(target).body(body).send().json()
                #expect(echo["path"] == "/anything/target")
                #expect(echo["data"]?.stringValue == text)
            }
            let once = RequestBody.stream([Data("once".utf8)].asyncChunks)
            let error = await apiError { _ = try await client.post("/redirect-to").query(target).body(once).send() }
            #expect(error?.code == .redirect)
            #expect(error?.message.contains("one-shot") == true)
            // Without a redirect, a one-shot stream is sent normally.
            let sent = try await client.post("/anything").body(.stream(["on", "ce"].map { Data($0.utf8) }.asyncChunks)).send().json()
            #expect(sent["data"] == "once")
        }
    }

    @Test("a hop to another origin drops every credential, and they stay dropped")
    func crossOrigin() async throws {
        try await TestServer.withRunning { other in
            try await withServer(configure: { configuration in
                var auth = Authentication.bearer("s3cr3t")
                auth.headers = ["X-Api-Key": "k"]
                auth.parameters = ["api_key": "p"]
                auth.parameterPlacement = .query
                configuration.authentication = auth
                configuration.headers["Cookie"] = "session=1"
            }) { server, client in
                // Same origin first: credentials are sent.
                server.route("/start") { request in
                    ServerResponse(status: 302, headers: [("Location", request.query("to") ?? "/get")])
                }
                other.route("/bounce") { _ in
                    ServerResponse(status: 302, headers: [("Location", server.url("/anything/back").absoluteString)])
                }
                var request = Request.get("start", parameters: ["to": .string(other.url("/bounce").absoluteString)])
                request.needsAuthorization = true
                request.headers["Proxy-Authorization"] = "Basic eA=="
                let response = try await client.send(request)
                #expect(response.status == .ok)

                let first = try #require(server.requests.first { $0.rawPath == "/start" })
                #expect(first.header("Authorization") == "Bearer s3cr3t")
                #expect(first.query("api_key") == "p")

                let bounced = try #require(other.requests.first { $0.rawPath == "/bounce" })
                let back = try #require(server.requests.first { $0.rawPath == "/anything/back" })
                for hop in [bounced, back] {
                    for name in ["Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key"] {
                        #expect(hop.header(name) == nil, "\(name) on \(hop.rawPath)")
                    }
                    #expect(hop.query("api_key") == nil)
                }
            }
        }
    }

    @Test("a hop to another origin keeps only the allowlist: definition API keys, configuration and common headers and common parameters stay home")
    func crossOriginAllowlist() async throws {
        try await TestServer.withRunning(host: "127.0.0.2") { other in
            let yaml = "DEFAULT:\n  headers:\n    X-Api-Key: definition-key\nMove:\n  method: POST\n  path: move\n  contentType: json\n"
            try await withServer(definitions: yamlDefinitions(yaml), configure: { configuration in
                configuration.headers["X-Tenant"] = "tenant-secret"
                configuration.headers["X-Request-ID"] = "r-1"
                configuration.redirects.forwardedHeaders = ["X-Request-ID"]
                configuration.common.headers = { _ in ["X-Common": "common-secret"] }
                configuration.common.parameters = { _ in ["app_key": "common-param-secret"] }
            }) { server, client in
                server.route("/move") { _ in
                    ServerResponse(status: 307, headers: [("Location", other.url("/anything/landed").absoluteString)])
                }
                let response = try await client.call("Move", parameters: ["note": "hello"])
                #expect(response.status == .ok)

                let first = try #require(server.requests.first { $0.rawPath == "/move" })
                #expect(first.header("X-Api-Key") == "definition-key")
                #expect(first.header("X-Tenant") == "tenant-secret")
                #expect(first.header("X-Common") == "common-secret")
                #expect(first.query("app_key") == "common-param-secret")  // common parameters go into the query (xAPI)

                let landed = try #require(other.requests.first { $0.rawPath == "/anything/landed" })
                for name in ["X-Api-Key", "X-Tenant", "X-Common"] {
                    #expect(landed.header(name) == nil, "\(name) crossed to another origin")
                }
                #expect(landed.header("X-Request-ID") == "r-1")
                #expect(landed.header("User-Agent") != nil)
                #expect(landed.header("Content-Type") == "application/json")
                let body = String(decoding: landed.body, as: UTF8.self)
                #expect(body.contains("hello"))
                #expect(!body.contains("common-param-secret"))
                #expect(landed.query("app_key") == nil)
            }
        }
    }

    @Test("https to http is refused by default and followed when allowed")
    func downgrade() async throws {
        let transport = ScriptedTransport(answers: [
            "https://secure.test/start": (302, ["Location": "http://plain.test/next"]),
            "http://plain.test/next": (200, [:]),
        ])
        // An instant transport: the attempt limit is a hang guard for a starved machine, not an assertion.
        let strict = APIClient(configuration: .init { $0.timeouts.attempt = .seconds(600) }, transport: transport)
        let error = await apiError { _ = try await strict.send(.get("https://secure.test/start")) }
        #expect(error?.code == .redirect)
        #expect(error?.message.contains("https to http") == true)
        #expect(transport.seen.urls.withLock { $0 } == ["https://secure.test/start"])

        let lenient = APIClient(
            configuration: .init {
                $0.redirects.allowsHTTPSDowngrade = true
                $0.timeouts.attempt = .seconds(600)
            }, transport: transport)
        let response = try await lenient.send(.get("https://secure.test/start"))
        #expect(response.status == .ok)
    }

    @Test("a Location that is not http(s) is an error")
    func badLocation() async throws {
        try await withServer { server, client in
            server.route("/to-ftp") { _ in ServerResponse(status: 302, headers: [("Location", "ftp://example.com/x")]) }
            let error = await apiError { _ = try await client.get("/to-ftp").send() }
            #expect(error?.code == .redirect)
        }
    }
}
