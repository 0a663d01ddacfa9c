import Callsign
import CallsignTesting
import Foundation
import Testing

@testable import CallsignTesting

/// The command line as an everyday HTTP tool, as curl and HTTPie users expect it: each behaviour
/// checked by running the built binary against the in-process server.
@Suite("callsign as curl and HTTPie users expect it", .hangGuard)
struct HTTPToolTests {
    @Test("plain http:// goes to the proxy in absolute form, as curl sends it; --proxytunnel tunnels it")
    func proxiesAsCurlUsesThem() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            // CONNECT to port 443 only, as Squid's stock configuration allows.
            try await TestProxy.withRunning(tunnelPorts: [443]) { proxy in
                let url = server.url("/get").absoluteString
                let forwarded = try await CLIRunner.run(["get", url, "q==1"], environment: ["http_proxy": proxy.url])
                #expect(forwarded.status == 0, "\(forwarded.standardError)")
                #expect(proxy.exchanges.map(\.method) == ["GET"])
                #expect(proxy.exchanges.first?.target == "http://127.0.0.1:\(server.port)/get?q=1")

                let tunnelled = try await CLIRunner.run(["get", url, "--proxytunnel", "-x", proxy.url])
                #expect(tunnelled.status == 7, "\(tunnelled.standardError)")
                #expect(tunnelled.standardError.contains("did not open a tunnel"))
                #expect(proxy.exchanges.last?.method == "CONNECT")

                let withoutProxy = try await CLIRunner.run(["get", url, "--proxytunnel"])
                #expect(withoutProxy.status == 64, "\(withoutProxy.standardError)")
            }
        }
    }

    @Test("plain http:// through a real Squid with its stock rules, credentials to Squid only")
    func squid() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            do {
                try await SquidTestProxy.withRunning(credentials: true) { squid in
                    let (username, password) = SquidTestProxy.credentials
                    let result = try await CLIRunner.run(
                        ["get", server.url("/headers").absoluteString, "--proxy-user", "\(username):\(password)"],
                        environment: ["HTTP_PROXY": squid.url])
                    #expect(result.status == 0, "\(result.standardError)")
                    let seen = try #require(server.requests.last)
                    #expect(seen.headers.contains { $0.name.lowercased() == "via" && $0.value.contains("squid") })
                    #expect(seen.headers.allSatisfy { $0.name.lowercased() != "proxy-authorization" })
                    #expect(!result.standardOutput.contains(password) && !result.standardError.contains(password))
                }
            } catch let unavailable as SquidTestProxy.Unavailable {
                try Test.cancel(Comment(rawValue: unavailable.description))
            }
        }
    }
}
