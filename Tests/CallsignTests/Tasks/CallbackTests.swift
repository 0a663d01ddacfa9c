import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// Records callback events in order, and lets a test await the last one.
final class CallbackLog: Sendable {
    let events = Mutex<[String]>([])
    private let done: AsyncStream<Void>.Continuation
    let finished: AsyncStream<Void>

    init() { (finished, done) = AsyncStream<Void>.makeStream() }

    func add(_ event: String) { events.withLock { $0.append(event) } }
    func finish() {
        add("finished")
        done.yield()
    }
    func waitUntilFinished() async { for await _ in finished { return } }
    var all: [String] { events.withLock { $0 } }
}

@Suite("Callbacks", .hangGuard)
struct CallbackTests {
    @Test("success, then completion, then finished — delivered on the main actor by default")
    func successOrder() async throws {
        let log = CallbackLog()
        try await withServer(definitions: DemoAPI.definitions) { server, client in
            client.request("UserProfile") { c in
                c.parameters = ["user_id": 7]
                c.success { (profile: Profile) in
                    log.add("success \(profile.id)")
                }
                c.failure { _ in log.add("failure") }
                c.completion { result in log.add("completion \((try? result.get()) != nil)") }
                c.finished { log.finish() }
            }
            await log.waitUntilFinished()
        }
        #expect(log.all == ["success 7", "completion true", "finished"])
    }

    @Test("failure with the error; a body that does not decode is a failure too")
    func failureOrder() async throws {
        let log = CallbackLog()
        try await withServer(definitions: DemoAPI.definitions, configure: { $0.callbacks.delivery = .immediate }) { server, client in
            client.request("UserProfile") { c in
                c.parameters = ["user_id": 4242]
                c.success { (_: Profile) in log.add("success") }
                c.failure { error in log.add("failure \(error.code)") }
                c.finished { log.finish() }
            }
            await log.waitUntilFinished()
            client.request("TopicListRecommended") { c in
                c.success { (_: Profile) in log.add("success") }
                c.failure { error in log.add("failure \(error.code)") }
                c.finished { log.finish() }
            }
            await log.waitUntilFinished()
        }
        #expect(log.all == ["failure unacceptableStatus", "finished", "failure decoding", "finished"])
    }

    @Test("cancellation is never a failure; completion and finished still run once")
    func cancellation() async throws {
        let log = CallbackLog()
        try await withServer(configure: { $0.callbacks.delivery = .immediate }) { server, client in
            let gate = Gate(on: server, path: "/held")
            var definitions = APIDefinitions()
            try definitions.add(APIDefinition(name: "Held", baseURL: server.baseURL, path: "held/x"))
            let callbacks = APIClient(definitions: definitions, configuration: client.configuration, transport: client.transport)
            callbacks.request("Held") { c in
                c.identifier = "held"
                c.failure { _ in log.add("failure") }
                c.completion { result in log.add("completion \(result.error?.code.description ?? "ok")") }
                c.finished { log.finish() }
            }
            await gate.waitForArrivals(1)
            callbacks.cancel(identifier: "held")
            await log.waitUntilFinished()
            gate.release()
        }
        #expect(log.all == ["completion cancelled", "finished"])
    }

    @Test("the central error handler sees failures first and can consume them")
    func errorHandler() async throws {
        let log = CallbackLog()
        try await withServer(definitions: DemoAPI.definitions, configure: {
            $0.callbacks.delivery = .immediate
            $0.callbacks.errorHandler = { failure in
                log.add("central \(failure.error.statusCode ?? 0)")
                return failure.error.statusCode == 404
            }
        }) { server, client in
            client.request("UserProfile") { c in
                c.parameters = ["user_id": 4242]
                c.failure { _ in log.add("failure") }
                c.finished { log.finish() }
            }
            await log.waitUntilFinished()
            client.request("NoSuchAPI") { c in
                c.failure { error in log.add("failure \(error.code)") }
                c.finished { log.finish() }
            }
            await log.waitUntilFinished()
        }
        #expect(log.all == ["central 404", "finished", "central 0", "failure unknownAPI", "finished"])
    }

    @Test("a call without its own failure handler is reported by the central handler, which can tell (RFAPI's default reporting)")
    func defaultReporting() async throws {
        let log = CallbackLog()
        try await withServer(definitions: DemoAPI.definitions, configure: {
            $0.callbacks.delivery = .immediate
            $0.callbacks.errorHandler = { failure in
                log.add("central \(failure.error.statusCode ?? 0) own:\(failure.callHandlesFailure)")
                return false
            }
        }) { server, client in
            client.request("UserProfile") { c in
                c.parameters = ["user_id": 4242]
                c.finished { outcome in
                    if case .failure(let error) = outcome { log.add("finished failure \(error.statusCode ?? 0)") }
                    log.finish()
                }
            }
            await log.waitUntilFinished()
            client.request("UserProfile") { c in
                c.parameters = ["user_id": 4242]
                c.failure { _ in log.add("own failure") }
                c.finished { log.finish() }
            }
            await log.waitUntilFinished()
        }
        #expect(
            log.all == [
                "central 404 own:false", "finished failure 404", "finished", "central 404 own:true", "own failure", "finished",
            ])
    }

    @Test("callbacks for requests and endpoint values, finished with the outcome, and form data in the context")
    func requestsEndpointsAndForms() async throws {
        let log = CallbackLog()
        try await withServer(configure: { $0.callbacks.delivery = .immediate }) { server, client in
            client.request(.get("/anything/plain")) { c in
                c.parameters = ["q": "swift"]
                c.headers = ["X-Trace": "t-1"]
                c.success { (echo: JSONValue) in log.add("request \(echo["args"]?["q"]?.stringValue ?? "-")") }
                c.finished { outcome in
                    if case .success(let response) = outcome { log.add("finished \(response.status.code)") }
                    log.finish()
                }
            }
            await log.waitUntilFinished()
            #expect(server.requests.last?.header("X-Trace") == "t-1")

            client.request(CallbackEndpoint.echo) { c in
                c.success { (echo: JSONValue) in log.add("endpoint \(echo["path"]?.stringValue ?? "-")") }
                c.finished { log.finish() }
            }
            await log.waitUntilFinished()

            var form = MultipartFormData()
            form.append(field: "title", value: "Balsa Fish")
            client.request(.post("/anything/upload")) { c in
                c.formData = form
                c.success { (echo: JSONValue) in
                    let part = echo["multipart"]?[0]
                    log.add("form \(part?["name"]?.stringValue ?? "-")=\(part?["value"]?.stringValue ?? "-")")
                }
                c.finished { log.finish() }
            }
            await log.waitUntilFinished()

            client.request(.get("/delay/10")) { c in
                c.identifier = "slow"
                c.finished { outcome in
                    if case .cancelled = outcome { log.add("cancelled") }
                    log.finish()
                }
            }
            #expect(client.isRunning(identifier: "slow"), "registered as soon as request(_:configure:) returns")
            client.cancel(identifier: "slow")
            await log.waitUntilFinished()
        }
        #expect(
            log.all == [
                "request swift", "finished 200", "finished", "endpoint /anything/endpoint", "finished", "form title=Balsa Fish", "finished",
                "cancelled", "finished",
            ])
    }
}

private enum CallbackEndpoint: Endpoint {
    case echo
    static let baseURL: URL? = nil
    var request: Request { .get("/anything/endpoint") }
}
