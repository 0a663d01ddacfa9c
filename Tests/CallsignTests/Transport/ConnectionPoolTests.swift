import Callsign
import CallsignTesting
import Foundation
import Testing

// AsyncHTTPClientTransport is built where Package.swift links AsyncHTTPClient into Callsign.
#if os(Linux) || os(Android) || os(Windows)
@Suite("AsyncHTTPClient transport: connection pool", .hangGuard)
struct ConnectionPoolTests {
    @Test("maximumConnectionsPerHost caps the requests in flight to one host; the rest wait and then succeed")
    func connectionCap() async throws {
        try await TestServer.withRunning { server in
            let gate = Gate(on: server, path: "/held")
            // The three that wait for a connection wait for the two the gate holds: far longer than
            // the default 10 s may pass before both arrive on a busy machine.
            let transport = AsyncHTTPClientTransport(connectTimeout: .seconds(300), maximumConnectionsPerHost: 2)
            let client = APIClient(configuration: .init { $0.baseURL = server.baseURL }, transport: transport)
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<5 {
                    group.addTask { try await client.send(.get("held/\(index)")).status.code }
                }
                await gate.waitForArrivals(2)  // two connections, both held by the server
                gate.release()
                var statuses: [Int] = []
                for try await status in group { statuses.append(status) }
                #expect(statuses == Array(repeating: 200, count: 5))
            }
            #expect(server.maxConcurrentRequests == 2)
            try await transport.shutdown()
        }
    }
}
#endif
