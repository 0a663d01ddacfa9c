import Callsign
@testable import CallsignTesting
import Foundation
import Synchronization
import Testing

@Suite("TestServer: routes behave as documented", .hangGuard)
struct TestServerTests {
    @Test("listens on 127.0.0.1 with an ephemeral port and stops on every path")
    func lifecycle() async throws {
        struct Boom: Error {}
        var seenPort = 0
        var stopped: TestServer?
        await #expect(throws: Boom.self) {
            try await TestServer.withRunning { server in
                seenPort = server.port
                stopped = server
                #expect(server.baseURL.host == "127.0.0.1")
                #expect(server.port > 0)
                throw Boom()
            }
        }
        // Stopped although the body threw: the server answers nothing any more. (On a busy
        // machine another test's server may already have the freed port and answer instead:
        // what counts is that this one never saw the request.)
        let transport = URLSessionTransport()
        let client = APIClient(configuration: .init { $0.retry = .none }, transport: transport)
        let error = await apiError { _ = try await client.send(.get("http://127.0.0.1:\(seenPort)/get?after-stop")) }
        try await transport.shutdown()
        #expect(stopped?.requests.contains { $0.rawQuery == "after-stop" } == false)
        if let error { #expect(error.code == .transport) }
    }

    @Test("a server stopped while clients keep connecting stops cleanly: what it accepted but had not taken is closed, never a trap")
    func stopWhileConnecting() async throws {
        // The listener drops connections it accepted but its loop had not taken when it closes
        // (swift-nio issue 2813); each used to trap when its channel became active, ending the
        // whole test run. Thirty servers of each kind, each stopped in a stream of connects.
        for round in 0..<30 {
            let server: (port: Int, stop: @Sendable () async -> Void)
            if round.isMultiple(of: 2) {
                let http = try await TestServer.start()
                server = (http.port, { await http.stop() })
            } else {
                let raw = try await RawServer.start([.bytes(Array("HTTP/1.1 204 No Content\r\n\r\n".utf8))])
                server = (raw.port, { await raw.stop() })
            }
            let connecting = Connector(port: server.port)
            await connecting.started(connections: 20)
            await server.stop()
            let made = await connecting.stop()
            #expect(made >= 20)
        }
    }

    /// Opens and closes TCP connections to a port, on a thread of its own, until stopped.
    private final class Connector: Sendable {
        private final class Count: Sendable {
            let state = Mutex<(stopped: Bool, made: Int, waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?)>((false, 0, nil))
        }
        private let count = Count()
        private let done: Task<Int, Never>

        init(port: Int) {
            let count = self.count
            done = Task {
                (try? await onOwnThread {
                    while !count.state.withLock({ $0.stopped }) {
                        let socket = Connector.connect(port: port)
                        if socket >= 0 { close(socket) }
                        let ready = count.state.withLock { state -> CheckedContinuation<Void, Never>? in
                            state.made += 1
                            guard let waiter = state.waiter, state.made >= waiter.count else { return nil }
                            state.waiter = nil
                            return waiter.continuation
                        }
                        ready?.resume()
                    }
                    return count.state.withLock { $0.made }
                }) ?? 0
            }
        }

        /// Returns once `connections` attempts have been made.
        func started(connections: Int) async {
            await withCheckedContinuation { continuation in
                let now = count.state.withLock { state in
                    if state.made >= connections { return true }
                    state.waiter = (connections, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }

        /// Stops and returns how many attempts were made.
        func stop() async -> Int {
            count.state.withLock { $0.stopped = true }
            return await done.value
        }

        private static func connect(port: Int) -> Int32 {
            let descriptor = socket(AF_INET, streamSocket(SOCK_STREAM), 0)
            guard descriptor >= 0 else { return -1 }
            // A connect that meets a closing listener may wait out a SYN retransmission (a
            // second or more): give up after 50 ms and make the next one.
            var limit = timeval(tv_sec: 0, tv_usec: 50_000)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Foundation.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            return descriptor
        }
    }

    @Test("httpbin-style routes")
    func routes() async throws {
        try await withServer(configure: { $0.redirects = .none }) { server, client in
            let auth = try await client.get("/basic-auth/ann/pw").header("Authorization", "Basic \(Data("ann:pw".utf8).base64EncodedString())")
                .send()
            #expect(auth.status.code == 200)
            #expect(try auth.json()["user"] == "ann")
            #expect(try await client.get("/basic-auth/ann/pw").send().status.code == 401)

            let headers = try await client.get("/headers").header("X-One", "1").send().json()
            #expect(headers["headers"]?["X-One"] == "1")

            let redirect = try await client.get("/redirect-to").query(["url": "/json", "status_code": 307]).send()
            #expect(redirect.status.code == 307)
            #expect(redirect.headers[.location] == "/json")

            let see = try await client.get("/status/303").send()
            #expect(see.headers[.location] == "/get")
            #expect(try await client.get("/status/503").send().headers[.retryAfter] == "1")

            let delayed = try await client.get("/delay/0.1").send()
            #expect(delayed.duration >= .milliseconds(100))

            let retryAfter = try await client.get("/misbehave/retry-after").query(["after": 7]).send()
            #expect(retryAfter.status.code == 503)
            #expect(retryAfter.headers[.retryAfter] == "7")

            let wrong = try await client.get("/misbehave/wrong-content-type").send()
            #expect(wrong.mediaType == "text/html")

            let closed = await apiError { _ = try await client.get("/misbehave/close").send() }
            #expect(closed != nil)

            #expect(try await client.get("/nowhere").send().status.code == 404)
            #expect(try await client.post("/get").send().status.code == 405)
            #expect(server.hits("/get") == 1)
        }
    }

    @Test("custom routes win, see the request, and can be async")
    func customRoutes() async throws {
        try await withServer { server, client in
            server.route("/json") { request in
                try? await Task.sleep(for: .milliseconds(1))
                return .json(["overridden": true, "method": .string(request.method)])
            }
            let body = try await client.put("/json").send().json()
            #expect(body["overridden"] == true)
            #expect(body["method"] == "PUT")
            server.resetRecords()
            #expect(server.requests.isEmpty)
        }
    }
}
