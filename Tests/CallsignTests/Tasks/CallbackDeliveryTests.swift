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

    /// Runs one successful and one failing callback call and returns where each callback ran.
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
                    c.success { (_: Response) in record("success") }
                    c.failure { _ in record("failure") }
                    c.completion { _ in record("completion") }
                    c.finished {
                        record("finished")
                        log.finish()
                    }
                }
                await log.waitUntilFinished()
            }
        }
        return places.withLock { $0 }
    }

    @Test("by default every callback runs on the main actor: its queue, and its thread")
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

    @Test("delivery on a given queue runs every callback on that queue, not the main actor's")
    func givenQueue() async throws {
        let queue = DispatchQueue(label: "callsign.test.callbacks")
        queue.setSpecific(key: Self.queueKey, value: "callbacks")
        let places = try await Self.places(delivery: .queue(queue))
        #expect(places.count == 6)
        for place in places {
            #expect(place.queue == "callbacks", "\(place.callback) ran on \(place.queue ?? "an unlabelled queue")")
        }
    }

    @Test("immediate delivery runs where the call finished: on no labelled queue, the main one included")
    func immediate() async throws {
        let places = try await Self.places(delivery: .immediate)
        #expect(places.count == 6)
        for place in places { #expect(place.queue == nil, "\(place.callback) ran on \(place.queue ?? "")") }
    }
}
