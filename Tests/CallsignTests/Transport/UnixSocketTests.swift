import Callsign
import CallsignTesting
import Foundation
import Testing

@Suite("http+unix: servers on a Unix domain socket", .hangGuard)
struct UnixSocketTests {
    /// A short folder: socket paths are limited to about 100 bytes.
    /// Runs `body` with a server on a new socket, stopped afterwards on every path.
    private func withSocketServer(_ body: (TestServer) async throws -> Void) async throws {
        let folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("cs-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestServer.start(unixSocketPath: folder.appendingPathComponent("api.sock").path)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("AsyncHTTPClient calls a local daemon by http+unix, from a base URL or a definitions file", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func calls() async throws {
        try await withSocketServer { server in
            #expect(server.baseURL.absoluteString.hasPrefix("http+unix://%2Ftmp%2Fcs-"))
            let client = APIClient(configuration: .init { $0.baseURL = server.baseURL }, transport: TransportKind.asyncHTTPClient.make())
            let echo = try await client.get("anything/containers").query(["all": "1"]).send().json()
            #expect(echo["path"] == "/anything/containers")
            #expect(server.requests.last?.rawQuery == "all=1")

            let definitions = try APIDefinitions(
                data: Data("DEFAULT:\n  baseURL: \(server.baseURL.absoluteString)\nContainers:\n  path: anything/v1.45/containers/json\n".utf8),
                format: .yaml)
            let named = try await APIClient(definitions: definitions, transport: TransportKind.asyncHTTPClient.make()).call("Containers")
            #expect(named.status.code == 200)
        }
    }

    @Test("URLSessionTransport refuses http+unix, and no redirect leads from the network to a socket")
    func refusals() async throws {
        try await withSocketServer { server in
            let session = APIClient(configuration: .init { $0.baseURL = server.baseURL }, transport: TransportKind.urlSession.make())
            let refused = await #expect(throws: APIError.self) { _ = try await session.get("get").send() }
            #expect(refused?.code == .invalidRequest)
            try await TestServer.withRunning { web in
                let target = server.url("/get").absoluteString
                web.route("/to-socket") { _ in ServerResponse(status: 302, headers: [("Location", target)]) }
                let client = APIClient(configuration: .init { $0.baseURL = web.baseURL }, transport: TransportKind.asyncHTTPClient.make())
                let error = await #expect(throws: APIError.self) { _ = try await client.get("to-socket").send() }
                #expect(error?.code == .redirect)
            }
            #expect(server.requests.isEmpty)
        }
    }
}
