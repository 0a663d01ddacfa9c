import Callsign
import CallsignTesting
import Foundation
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
