import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

@testable import callsign

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("callsign get/post/… URL: ad-hoc calls, proxies, Ctrl-C", .hangGuard)
struct AdHocCommandTests {
    @Test("items read as HTTPie writes them; the first separator wins")
    func items() throws {
        let items = try AdHocItems(parsing: ["name=Ada Lovelace", "age:=36", "tags:=[\"math\"]", "q==a=b", "X-Trace:abc", "Authorization:Bearer a=b", "eq=x==y"])
        #expect(items.parameters == ["name": "Ada Lovelace", "age": 36, "tags": ["math"], "eq": "x==y"])
        #expect(items.query.map { "\($0.key)=\($0.value)" } == ["q=a=b"])
        #expect(items.headers["X-Trace"] == "abc")
        #expect(items.headers["Authorization"] == "Bearer a=b")
        for bad in ["novalue", "=x", "k:={bad"] {
            #expect(throws: APIError.self, "\(bad)") { try AdHocItems(parsing: [bad]) }
        }
    }

    @Test("a URL without a scheme is a path under the definitions' base URL, else http://")
    func targets() throws {
        let base = URL(string: "https://api.example.com/v1/")
        #expect(try AdHocCall.target("https://x.example/a", base: nil) == "https://x.example/a")
        #expect(try AdHocCall.target("users/1", base: base) == "users/1")
        #expect(try AdHocCall.target("example.com/a", base: nil) == "http://example.com/a")
        #expect(try AdHocCall.target(":8080/a", base: nil) == "http://localhost:8080/a")
        #expect(throws: APIError.self) { try AdHocCall.target("/users", base: nil) }
        #expect(throws: APIError.self) { try AdHocCall.target("ftp://example.com/x", base: nil) }
    }

    @Test("get sends items as query parameters and headers, and prints the body exactly")
    func get() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let result = try await CLIRunner.run(["get", server.url("/anything/x").absoluteString, "q==swift", "page:=2", "X-Trace:abc"])
            #expect(result.status == 0, "\(result.standardError)")
            let seen = try #require(server.requests.last)
            #expect(seen.method == "GET")
            #expect(seen.query("q") == "swift")
            #expect(seen.query("page") == "2")
            #expect(seen.header("X-Trace") == "abc")
            #expect(result.standardOutput.contains("\"q\""))
        }
    }

    @Test("post, put and patch send parameters as a JSON body; delete and head work; -X overrides")
    func methods() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            for command in ["post", "put", "patch"] {
                let result = try await CLIRunner.run([command, server.url("/anything/m").absoluteString, "name=Ada", "admin:=true"])
                #expect(result.status == 0, "\(command): \(result.standardError)")
                let seen = try #require(server.requests.last)
                #expect(seen.method == command.uppercased())
                #expect(try JSONValue(parsing: seen.body) == ["name": "Ada", "admin": true])
                #expect(seen.header("Content-Type")?.hasPrefix("application/json") == true)
            }
            let deleted = try await CLIRunner.run(["delete", server.url("/anything/m").absoluteString, "soft==1"])
            #expect(deleted.status == 0)
            #expect(server.requests.last?.method == "DELETE")
            #expect(server.requests.last?.query("soft") == "1")
            let head = try await CLIRunner.run(["head", server.url("/get").absoluteString, "--include"])
            #expect(head.status == 0)
            #expect(head.standardOutput.hasPrefix("HTTP/1.1 200 OK"))
            #expect(server.requests.last?.method == "HEAD")
            let overridden = try await CLIRunner.run(["get", server.url("/anything/o").absoluteString, "-X", "OPTIONS"])
            #expect(overridden.status == 0)
            #expect(server.requests.last?.method == "OPTIONS")
        }
    }

    @Test("ad-hoc calls take the one pipeline: retries, HAR recording, mocks, exit statuses, credentials for the named URL")
    func samePipeline() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            try await withTemporaryFolder("callsign-adhoc") { folder in
                let har = folder.appendingPathComponent("s.har").path

                // 503 twice, then 200: a GET is retried.
                server.route("/flaky") { request in
                    let count = server.hits("/flaky")
                    return count <= 2 ? ServerResponse(status: 503, headers: [("Retry-After", "0")]) : .json(["ok": true])
                }
                let retried = try await CLIRunner.run(["get", server.url("/flaky").absoluteString, "--retry", "3", "--har", har, "--bearer", "s3cret-token"])
                #expect(retried.status == 0, "\(retried.standardError)")
                #expect(server.hits("/flaky") == 3)
                #expect(server.requests.last?.header("Authorization") == "Bearer s3cret-token", "credentials named with the URL are sent to it")
                let recorded = try String(contentsOfFile: har, encoding: .utf8)
                #expect(recorded.contains("/flaky"))
                #expect(!recorded.contains("s3cret-token"))

                // The recording answers instead of the network.
                let before = server.requests.count
                let replayed = try await CLIRunner.run(["get", server.url("/flaky").absoluteString, "--mock", har])
                #expect(replayed.status == 0, "\(replayed.standardError)")
                #expect(server.requests.count == before)

                let missing = try await CLIRunner.run(["get", server.url("/status/404").absoluteString])
                #expect(missing.status == 22)
                let refused = try RefusingPort()
                let unreachable = try await CLIRunner.run(["get", "http://127.0.0.1:\(refused.port)/x", "--retry", "1"])
                #expect(unreachable.status == 7)
            }
        }
    }

    @Test("a definitions file lends its DEFAULT: base URL for paths, headers")
    func definitionsDefault() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            try await withTemporaryFolder("callsign-adhoc") { folder in
                let yaml = """
                    DEFAULT:
                      baseURL: \(server.baseURL.absoluteString)
                      headers:
                        X-App: demo
                    """
                try Data(yaml.utf8).write(to: folder.appendingPathComponent("callsign.yaml"))
                let result = try await CLIRunner.run(["get", "anything/relative", "k==v"], directory: folder)
                #expect(result.status == 0, "\(result.standardError)")
                #expect(server.requests.last?.rawPath == "/anything/relative")
                #expect(server.requests.last?.header("X-App") == "demo")
            }
        }
    }

    @Test("--proxy, HTTPS_PROXY and NO_PROXY as curl reads them; proxy credentials go to the proxy only", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func proxies() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            try await TestProxy.withRunning(credentials: ("alice", "hunter2")) { proxy in
                let url = server.url("/headers").absoluteString
                let viaOption = try await CLIRunner.run(["get", url, "--proxy", "http://alice:hunter2@127.0.0.1:\(proxy.port)"])
                #expect(viaOption.status == 0, "\(viaOption.standardError)")
                #expect(proxy.exchanges.filter { $0.method == "GET" && $0.status == nil }.count == 1, "forwarded in absolute form")
                #expect(!viaOption.standardOutput.lowercased().contains("proxy-authorization"), "the origin never saw the proxy's credentials")

                let viaEnvironment = try await CLIRunner.run(
                    ["call", "Echo", "-D", try definitions(server)], environment: ["http_proxy": "http://127.0.0.1:\(proxy.port)"] )
                #expect(viaEnvironment.status == 7, "a proxy that wants credentials is a connection failure")
                #expect(viaEnvironment.standardError.contains("407"))

                let withUser = try await CLIRunner.run(
                    ["get", url, "--proxy-user", "alice:hunter2"], environment: ["HTTP_PROXY": "http://127.0.0.1:\(proxy.port)"])
                #expect(withUser.status == 0, "\(withUser.standardError)")
                #expect(!withUser.standardError.contains("hunter2"))

                let tunnelled = proxy.exchanges.count
                let bypassed = try await CLIRunner.run(
                    ["get", url], environment: ["HTTP_PROXY": "http://127.0.0.1:\(proxy.port)", "NO_PROXY": "localhost,127.0.0.1"])
                #expect(bypassed.status == 0)
                #expect(proxy.exchanges.count == tunnelled, "NO_PROXY hosts are reached directly")

                let bad = try await CLIRunner.run(["get", url], environment: ["HTTPS_PROXY": "socks5://u:hunter2@127.0.0.1:1"])
                #expect(bad.status == 65)
                #expect(!bad.standardError.contains("hunter2"))
            }
        }
    }

    @Test("Ctrl-C cancels the call in flight and exits 130")
    func interrupt() async throws {
        try CLIRunner.requireBuilt()
        let arrived = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        try await TestServer.withRunning { server in
            server.route("/wait") { _ in
                arrived.continuation.yield()
                for await _ in release.stream {}
                return .json(["late": true])
            }
            let processID = Mutex<Int32?>(nil)
            async let result = CLIRunner.run(["get", server.url("/wait").absoluteString]) { id in processID.withLock { $0 = id } }
            var iterator = arrived.stream.makeAsyncIterator()
            await iterator.next()  // the request reached the server
            let id = try #require(processID.withLock { $0 })
            kill(id, SIGINT)
            let finished = try await result
            release.continuation.finish()
            #expect(finished.status == 130)
            #expect(finished.standardError.contains("interrupted"))
            #expect(finished.standardOutput.isEmpty)
        }
    }

    private func definitions(_ server: TestServer) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-proxy-\(UUID().uuidString).yaml")
        try Data("DEFAULT:\n  baseURL: \(server.baseURL.absoluteString)\nEcho:\n  path: headers\n".utf8).write(to: file)
        return file.path
    }
}
