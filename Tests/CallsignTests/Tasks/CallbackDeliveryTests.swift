import Callsign
import CallsignTesting
import Dispatch
import Foundation
import Synchronization
import Testing

/// Where callbacks run: checked from inside each callback, not inferred from their order.
///
/// The main actor's executor is the main dispatch queue, on Linux and on Apple platforms. Whether
/// that queue runs on the main *thread* depends on the process: a test process on Linux hands the
/// main queue to a dispatch worker thread (`dispatch_main` leaves the main thread), so
/// `Thread.isMainThread` alone would prove nothing there. Each callback therefore records the
/// dispatch-queue specific it sees — the main queue carries one this suite sets — and its thread,
/// which must be wherever a main-actor hop of the test itself lands.
@Suite("Callback delivery: the main actor by default, or the queue asked for", .hangGuard)
struct CallbackDeliveryTests {
    /// What one callback saw of where it ran.
    struct Place: Sendable, Equatable {
        var callback: String
        var isMainThread: Bool
        var queue: String?
    }

    /// Which of the test's labelled queues a closure runs on, read with `DispatchQueue.getSpecific`.
    static let queueKey = DispatchSpecificKey<String>()

    /// Runs one successful and one failing callback call with nonisolated callbacks (the ones the
    /// delivery places) and returns where each callback ran.
    static func places(delivery: CallbackDelivery?) async throws -> [Place] {
        let places = Mutex<[Place]>([])
        @Sendable func record(_ callback: String) {
            let place = Place(callback: callback, isMainThread: Thread.isMainThread, queue: DispatchQueue.getSpecific(key: queueKey))
            places.withLock { $0.append(place) }
        }
        try await withServer(definitions: DemoAPI.definitions, configure: { if let delivery { $0.callbacks.delivery = delivery } }) {
            server, client in
            for userID in [7, 4242] {  // 4242 is answered with 404: a failure
                let log = CallbackLog()
                client.request("UserProfile") { c in
                    c.parameters = ["user_id": .int(userID)]
                    c.nonisolated.success { (_: Response) in record("success") }
                    c.nonisolated.failure { _ in record("failure") }
                    c.nonisolated.completion { _ in record("completion") }
                    c.nonisolated.finished {
                        record("finished")
                        log.finish()
                    }
                }
                await log.waitUntilFinished()
            }
        }
        return places.withLock { $0 }
    }

    @Test("by default every nonisolated callback runs on the main actor too: its queue, and its thread")
    func mainActorByDefault() async throws {
        DispatchQueue.main.setSpecific(key: Self.queueKey, value: "main")
        // Where this process runs the main actor: its queue is the main queue, its thread the main
        // thread where that queue is serviced there (an app), else a dispatch worker.
        let mainActor = await MainActor.run { Place(callback: "hop", isMainThread: Thread.isMainThread, queue: DispatchQueue.getSpecific(key: Self.queueKey)) }
        try #require(mainActor.queue == "main", "the main actor does not run on the main queue here")

        let places = try await Self.places(delivery: nil)
        #expect(places.map(\.callback) == ["success", "completion", "finished", "failure", "completion", "finished"])
        for place in places {
            #expect(place.queue == "main", "\(place.callback) ran on \(place.queue ?? "an unlabelled queue"), not the main actor's")
            #expect(place.isMainThread == mainActor.isMainThread, "\(place.callback) ran on another thread than the main actor's")
        }
        // Said explicitly, the same.
        #expect(try await Self.places(delivery: .mainActor).allSatisfy { $0.queue == "main" && $0.isMainThread == mainActor.isMainThread })
    }

    @Test("delivery on a given queue runs every nonisolated callback on that queue, not the main actor's")
    func givenQueue() async throws {
        let queue = DispatchQueue(label: "callsign.test.callbacks")
        queue.setSpecific(key: Self.queueKey, value: "callbacks")
        let places = try await Self.places(delivery: .queue(queue))
        #expect(places.count == 6)
        for place in places {
            #expect(place.queue == "callbacks", "\(place.callback) ran on \(place.queue ?? "an unlabelled queue")")
        }
    }

    @Test("immediate delivery runs nonisolated callbacks where the call finished: on no labelled queue, the main one included")
    func immediate() async throws {
        let places = try await Self.places(delivery: .immediate)
        #expect(places.count == 6)
        for place in places { #expect(place.queue == nil, "\(place.callback) ran on \(place.queue ?? "")") }
    }

    @Test("@MainActor callbacks update a main-actor screen directly, and run on the main actor whatever the delivery", arguments: [
        "main actor", "queue", "immediate",
    ])
    func mainActorCallbacks(delivery name: String) async throws {
        DispatchQueue.main.setSpecific(key: Self.queueKey, value: "main")
        let delivery: CallbackDelivery = switch name {
        case "queue": .queue(DispatchQueue(label: "callsign.test.other"))
        case "immediate": .immediate
        default: .mainActor
        }
        let screen = ProfileScreen()
        try await withServer(definitions: DemoAPI.definitions, configure: { $0.callbacks.delivery = delivery }) { _, client in
            await screen.load(7, from: client)
            await screen.load(4242, from: client)  // answered with 404: a failure
        }
        // Written as UI code is: plain assignments to a main-actor object, no assumeIsolated.
        await MainActor.run {
            #expect(screen.title == "User 7")
            #expect(screen.errorText == "404")
            #expect(screen.events == ["success", "completion", "finished", "failure", "completion", "finished"])
            #expect(screen.queues.allSatisfy { $0 == "main" }, "callbacks ran on \(screen.queues)")
            #expect(screen.spinnerVisible == false)
        }
    }

    @Test("mixing @MainActor and nonisolated callbacks keeps their order: success, completion, finished")
    func mixedOrder() async throws {
        let queue = DispatchQueue(label: "callsign.test.mixed")
        queue.setSpecific(key: Self.queueKey, value: "mixed")
        DispatchQueue.main.setSpecific(key: Self.queueKey, value: "main")
        let log = CallbackLog()
        try await withServer(definitions: DemoAPI.definitions, configure: { $0.callbacks.delivery = .queue(queue) }) { _, client in
            client.request("UserProfile") { c in
                c.parameters = ["user_id": 7]
                c.success { (_: Response) in log.add("success on \(DispatchQueue.getSpecific(key: Self.queueKey) ?? "?")") }
                c.nonisolated.completion { _ in log.add("completion on \(DispatchQueue.getSpecific(key: Self.queueKey) ?? "?")") }
                c.finished {
                    log.add("finished on \(DispatchQueue.getSpecific(key: Self.queueKey) ?? "?")")
                    log.finish()
                }
            }
            await log.waitUntilFinished()
        }
        #expect(log.all == ["success on main", "completion on mixed", "finished on main", "finished"])
    }
}

/// A screen as an app writes one: main-actor state, changed from callbacks as plain statements.
@MainActor
final class ProfileScreen {
    var title = ""
    var errorText = ""
    var spinnerVisible = false
    var events: [String] = []
    var queues: [String] = []

    func load(_ userID: Int, from client: APIClient) async {
        spinnerVisible = true
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            client.request("UserProfile") { c in
                c.parameters = ["user_id": .int(userID)]
                c.success { (profile: Profile) in
                    self.title = profile.name
                    self.note("success")
                }
                c.failure { error in
                    self.errorText = error.statusCode.map(String.init) ?? "\(error.code)"
                    self.note("failure")
                }
                c.completion { _ in self.note("completion") }
                c.finished {
                    self.spinnerVisible = false
                    self.note("finished")
                    done.resume()
                }
            }
        }
    }

    private func note(_ event: String) {
        events.append(event)
        queues.append(DispatchQueue.getSpecific(key: CallbackDeliveryTests.queueKey) ?? "an unlabelled queue")
    }
}
