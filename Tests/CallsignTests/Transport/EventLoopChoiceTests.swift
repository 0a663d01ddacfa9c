@testable import Callsign
import Foundation
import Testing

#if os(Linux) || os(Android) || os(Windows)
import AsyncHTTPClient
import NIOCore
import NIOPosix

/// Which of AsyncHTTPClient's event loops a collected request is handed to
/// (`ClientOwner.handOff`): the delegate is called there, and a connection there is preferred.
@Suite("Event loops: calls one at a time stay on the loop of the one before; calls under way together take turns")
struct EventLoopChoiceTests {
    /// A client on a group of its own with two loops, shut down after `body`.
    private func withOwner(_ body: (ClientOwner) async throws -> Void) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let owner = ClientOwner(client: HTTPClient(eventLoopGroup: group), owned: true)
        do {
            try await body(owner)
        } catch {
            try await owner.shutdown()
            try await group.shutdownGracefully()
            throw error
        }
        try await owner.shutdown()
        try await group.shutdownGracefully()
    }

    /// The loops `count` calls made one after another are handed to.
    private func loops(of owner: ClientOwner, calls count: Int) async throws -> Set<ObjectIdentifier> {
        var loops = Set<ObjectIdentifier>()
        for _ in 0..<count {
            loops.insert(try await owner.handOff { ObjectIdentifier($0) })
        }
        return loops
    }

    @Test("twenty calls one after another are all handed to one loop")
    func oneAtATime() async throws {
        try await withOwner { owner in
            let loops = try await loops(of: owner, calls: 20)
            #expect(loops.count == 1)
        }
    }

    @Test("while a call is under way, the calls made meanwhile take turns over both loops; afterwards they stay on one again")
    func takingTurnsWhileBusy() async throws {
        try await withOwner { owner in
            let (release, releaser) = AsyncStream<Void>.makeStream()
            let (started, starter) = AsyncStream<Void>.makeStream()
            // One call that stays under way until released.
            let busy = Task {
                try await owner.handOff { _ in
                    starter.yield()
                    for await _ in release { break }
                }
            }
            for await _ in started { break }
            let meanwhile = try await loops(of: owner, calls: 4)
            #expect(meanwhile.count == 2)
            releaser.yield()
            try await busy.value
            let afterwards = try await loops(of: owner, calls: 6)
            #expect(afterwards.count == 1)
        }
    }

    @Test("a call already running on one of the loops is handed to that loop")
    func stayingOnTheCallersLoop() async throws {
        try await withOwner { owner in
            for _ in 0..<10 {
                let here = try await withTaskExecutorPreference(owner.executor) {
                    try await owner.handOff { $0.inEventLoop }
                }
                #expect(here)
            }
        }
    }

    @Test("a call that throws is no longer counted as under way")
    func throwingCallEnds() async throws {
        struct Failure: Error {}
        try await withOwner { owner in
            let first = try await owner.handOff { ObjectIdentifier($0) }
            for _ in 0..<5 {
                await #expect(throws: Failure.self) { try await owner.handOff { _ in throw Failure() } }
            }
            // Had a thrown call stayed counted, these would take turns.
            for _ in 0..<5 {
                #expect(try await owner.handOff { ObjectIdentifier($0) } == first)
            }
        }
    }
}
#endif
