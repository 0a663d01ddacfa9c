import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Synchronization
import Testing

/// Records the order in which middlewares run.
final class Trail: Sendable {
    let entries = Mutex<[String]>([])
    func add(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

struct Marker: Middleware {
    let name: String
    let trail: Trail
    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        trail.add(name)
        var request = request
        request.headers.add("X-Trail", name)
        return try await next(request)
    }
}

@Suite("Middleware chain", .hangGuard)
struct MiddlewareTests {
    @Test("documented order: client, call, then built-ins with insertions; the wire seam sees and changes exactly what is sent")
    func order() async throws {
        let trail = Trail()
        let yaml = "Thing:\n  path: anything/thing\n  needsAuthorization: true\n"
        try await withServer(
            definitions: yamlDefinitions(yaml),
            configure: { configuration in
                configuration.middlewares = [
                    .changingRequest { request in
                        trail.add("changingRequest")
                        return request.adding(headers: ["X-Before": "1"])
                    },
                    Marker(name: "client1", trail: trail), Marker(name: "client2", trail: trail),
                    AnyMiddleware { request, context, next in
                        if context.apiName == "Thing" { trail.add("definition") }
                        return try await next(request)
                    },
                ]
                configuration.common.headers = { _ in trail.add("common"); return [:] }
                configuration.authentication = .bearer("t")
                configuration.insert(Marker(name: "beforeAuth", trail: trail), before: .authentication)
                configuration.insert(Marker(name: "afterAuth", trail: trail), after: .authentication)
                configuration.insert(Marker(name: "beforeEncoding", trail: trail), before: .encoding)
                configuration.insert(Marker(name: "afterCommon", trail: trail), after: .commonParameters)
                configuration.wireMiddlewares = [
                    .changingHead { head in
                        trail.add("changingHead")
                        var head = head
                        head.headerFields[HTTPField.Name("X-Pre")!] = "done"
                        return head
                    }
                ]
                configuration.insert(
                    AnyWireMiddleware { request, _, next in
                        trail.add("beforeTransport")
                        // The exact head that goes out: the request seam's headers and the wire seam's change.
                        #expect(request.head.headerFields[HTTPField.Name("X-Pre")!] == "done")
                        #expect(request.head.headerFields[.authorization] == "Bearer t")
                        return try await next(request)
                    }, before: .transport)
                configuration.insert(
                    AnyWireMiddleware { request, _, next in
                        trail.add("afterSigning")
                        return try await next(request)
                    }, after: .signing)
            }
        ) { server, client in
            var request = try client.definitions.definition(named: "Thing").request()
            request.middlewares = [Marker(name: "call", trail: trail)]
            let response = try await client.send(request)
            let echo = try response.json()
            #expect(
                trail.all == [
                    "changingRequest", "client1", "client2", "definition", "call", "common", "afterCommon", "beforeAuth",
                    "afterAuth", "beforeEncoding", "afterSigning", "changingHead", "beforeTransport",
                ])
            #expect(echo["headers"]?["X-Pre"] == "done")
            #expect(echo["headers"]?["X-Before"] == "1")
            #expect(echo["headers"]?["Authorization"] == "Bearer t")
            #expect(server.requests.last?.headers.filter { $0.name == "X-Trail" }.count == 7, "every Marker's header, in one request")
            // The response's request reports what was sent, the wire seam's header included.
            #expect(response.request.headers["X-Pre"] == "done")
        }
    }

    @Test("a middleware reads the call's facts and passes changed ones down: attempts, deadline, body reading")
    func contextFacts() async throws {
        let seen = Mutex<[String]>([])
        let below = Mutex<[Int]>([])
        try await withServer(configure: { configuration in
            configuration.retry = RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(1))
            configuration.clock = TestClock()
            configuration.timeouts.deadline = .seconds(600)
            configuration.insert(
                AnyMiddleware { request, context, next in
                    let reading = context.bodyReading == .memory ? "memory" : "other"
                    seen.withLock { $0.append("attempt \(context.attempt) deadline \(context.deadline != nil) \(reading)") }
                    var context = context
                    context.attempt *= 10  // passed down: the stages below this one see it, those above keep theirs
                    return try await next(request, context: context)
                }, after: .retry)
            configuration.insert(
                AnyMiddleware { request, context, next in
                    below.withLock { $0.append(context.attempt) }
                    return try await next(request)
                }, before: .timeout)
        }) { server, client in
            server.route("/flaky") { _ in
                .json([:], status: server.hits("/flaky") < 3 ? 503 : 200)
            }
            _ = try await client.get("/flaky").send().validate()
            #expect(seen.withLock { $0 } == ["attempt 1 deadline true memory", "attempt 2 deadline true memory", "attempt 3 deadline true memory"])
            #expect(below.withLock { $0 } == [10, 20, 30])
        }
    }

    @Test("the deadline stage is in a call's chain when the call, its client or a middleware above it sets a deadline, and only then")
    func deadlineStageWhenAsked() async throws {
        /// What a middleware below the deadline stage saw: whether the call had a deadline.
        let seen = Mutex<[Bool]>([])
        let probe = AnyMiddleware { request, context, next in
            seen.withLock { $0.append(context.deadline != nil) }
            return try await next(request)
        }
        let setsDeadline = AnyMiddleware { request, _, next in
            var request = request
            request.deadline = .seconds(600)
            return try await next(request)
        }
        func observed(_ configure: @escaping (inout APIClient.Configuration) -> Void, _ make: (APIClient) -> Request) async throws -> [Bool] {
            seen.withLock { $0 = [] }
            try await withServer(configure: { configuration in
                configure(&configuration)
                // Below the hedging stage: by itself it leaves the optional stages out.
                configuration.insert(probe, before: .timeout)
            }) { server, client in
                server.route("/ok") { _ in .json(["ok": true]) }
                _ = try await client.send(make(client)).validate()
            }
            return seen.withLock { $0 }
        }
        // No deadline anywhere: the stage is left out, and nothing below has one.
        #expect(try await observed({ _ in }) { _ in .get("/ok") } == [false])
        // The call's own deadline.
        #expect(try await observed({ _ in }) { _ in
            var request = Request.get("/ok")
            request.deadline = .seconds(600)
            return request
        } == [true])
        // The client's.
        #expect(try await observed({ $0.timeouts.deadline = .seconds(600) }) { _ in .get("/ok") } == [true])
        // A middleware of the call's own, of the client's, or one inserted above the stage.
        #expect(try await observed({ _ in }) { _ in
            var request = Request.get("/ok")
            request.middlewares = [setsDeadline]
            return request
        } == [true])
        #expect(try await observed({ $0.middlewares = [setsDeadline] }) { _ in .get("/ok") } == [true])
        #expect(try await observed({ $0.insert(setsDeadline, before: .deadline) }) { _ in .get("/ok") } == [true])
    }

    @Test("an async middleware can suspend before the request, answer it itself, or reject it")
    func asyncMiddleware() async throws {
        let fetchToken = AnyMiddleware { request, _, next in
            try await Task.sleep(for: .milliseconds(5))  // e.g. an async token fetch
            var request = request
            request.headers["X-Token"] = "fetched"
            return try await next(request)
        }
        let reject = AnyMiddleware { request, _, next in
            if request.path.hasSuffix("/forbidden") {
                throw APIError(.invalidRequest, "not allowed from this screen")
            }
            if request.path.hasSuffix("/broken") { throw CocoaError(.featureUnsupported) }
            if request.path.hasSuffix("/local") {
                return Response(request: request, status: .ok, body: Data("{\"local\":true}".utf8))
            }
            return try await next(request)
        }
        try await withServer(configure: { $0.middlewares = [fetchToken, reject] }) { server, client in
            let echo = try await client.get("/anything/ok").send().json()
            #expect(echo["headers"]?["X-Token"] == "fetched")

            let rejected = await apiError { _ = try await client.get("/anything/forbidden").send() }
            #expect(rejected?.code == .invalidRequest)
            #expect(rejected?.message == "not allowed from this screen")

            let broken = await apiError { _ = try await client.get("/anything/broken").send() }
            #expect(broken?.code == .invalidRequest)
            #expect(broken?.message.contains("a middleware failed") == true)

            let local = try await client.get("/anything/local").send().json()
            #expect(local["local"] == true)
            #expect(server.requests.count == 1)
        }
    }

    @Test("client-info headers are opt-in and a request's own header wins")
    func clientInfo() async throws {
        try await withServer(configure: {
            $0.clientInfo = ClientInfo.automatic.with(appName: "Surfboard", appVersion: "2.1")
        }) { server, client in
            let headers = try await client.get("/headers").header("X-Client-App-Version", "9").send().json()["headers"]
            #expect(headers?["X-Client-OS"] == "Linux" || headers?["X-Client-OS"] == "macOS" || headers?["X-Client-OS"] != nil)
            #expect(headers?["X-Client-OS-Version"]?.stringValue?.isEmpty == false)
            #expect(headers?["X-Client-Device-Type"]?.stringValue?.isEmpty == false)
            #expect(headers?["X-Client-App-Name"] == "Surfboard")
            #expect(headers?["X-Client-App-Version"] == "9")
            #expect(headers?["X-Client-Device-VendorId"] == "unknown", "APE's value when the app supplies none")
        }
        try await withServer(configure: {
            $0.clientInfo = .automatic.with(vendorIdentifier: "9C32B72F-8532-4F73-BA76-18C9E522E539\r\n")
        }) { server, client in
            let headers = try await client.get("/headers").send().json()["headers"]
            #expect(headers?["X-Client-Device-VendorId"] == "9C32B72F-8532-4F73-BA76-18C9E522E539")
        }
        try await withServer { server, client in
            let headers = try await client.get("/headers").send().json()["headers"]
            #expect(headers?["X-Client-OS"] == nil)
        }
    }

    @Test("common parameters by tag: the query by default (xAPI), with the parameters when asked, call wins, auth wins over call")
    func commonParameters() async throws {
        try await withServer(configure: { configuration in
            configuration.common.parameters = { _ in ["app": "demo"] }
        }) { server, client in
            // xAPI's default, xAPICommonParamsUsagePath: the query, even for a POST with a JSON body.
            let post = try await client.post("/anything").parameters(["title": "t"]).send().json()
            #expect(post["args"]?["app"] == "demo")
            #expect(post["json"] == ["title": "t"])
        }
        try await withServer(configure: { configuration in
            configuration.common.placement = .parameters
            configuration.common.parameters = { tag in
                tag == "system1" ? ["app": "one", "page": 0, "sig": "common"] : ["app": "other"]
            }
            configuration.common.headers = { tag in ["X-System": .init(tag ?? "none")] }
            var auth = Authentication.headers(["X-Key": "k"], parameters: ["sig": "auth"])
            auth.parameterPlacement = .parameters
            configuration.authentication = auth
        }) { server, client in
            let get = try await client.get("/anything").tag("system1").parameters(["page": 3]).send().json()
            #expect(get["args"]?["app"] == "one")
            #expect(get["args"]?["page"] == "3")  // the call's own parameter wins
            #expect(get["headers"]?["X-System"] == "system1")

            let post = try await client.post("/anything").tag("system2").parameters(["title": "t"]).send().json()
            // A call no definition built, to the client's own origin: the authentication's parameters come too.
            #expect(post["json"] == ["app": "other", "title": "t", "sig": "auth"])
            let optedOut = try await client.post("/anything").tag("system2").parameters(["title": "t"]).authorized(false).send().json()
            #expect(optedOut["json"] == ["app": "other", "title": "t"])
            #expect(post["query"] == .null)

            var request = Request.post("anything", parameters: ["title": "t"])
            request.tag = "system1"
            request.commonParameterPlacement = .query
            request.needsAuthorization = true
            let placed = try await client.send(request).json()
            #expect(placed["args"]?["app"] == "one")
            #expect(placed["json"]?["app"] == nil)
            #expect(placed["json"]?["sig"] == "auth")  // an auth parameter wins over everything
            #expect(placed["headers"]?["X-Key"] == "k")
        }
    }
}
