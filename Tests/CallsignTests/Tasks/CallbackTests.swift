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

@Suite("Callbacks", .timeLimit(.minutes(2)))
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
            $0.callbacks.errorHandler = { error in
                log.add("central \(error.statusCode ?? 0)")
                return error.statusCode == 404
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
}
