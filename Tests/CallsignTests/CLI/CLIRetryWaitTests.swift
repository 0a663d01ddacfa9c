import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

@testable import callsign

@Suite("callsign waits before a retry: said on stderr, and capped unless asked", .hangGuard)
struct CLIRetryWaitTests {
    /// Serves /limited/<delay>: the first request of each path gets 429 with `Retry-After: <delay>`,
    /// later ones 200.
    private func serving(_ body: @escaping @Sendable (TestServer) async throws -> Void) async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let seen = Mutex<Set<String>>([])
            server.route("/limited/") { request in
                let first = seen.withLock { $0.insert(request.rawPath).inserted }
                let delay = request.pathSegments.last ?? "1"
                return first
                    ? .json(["error": "slow down"], status: 429, headers: [("Retry-After", delay)])
                    : .json(["ok": true])
            }
            try await body(server)
        }
    }

    @Test("A Retry-After past 30 s ends the retries at once: exit 22, one request, a note naming the delay and the option")
    func longWaitRefused() async throws {
        try await serving { server in
            // No wait was taken (a wall clock would measure the machine's load, not the command):
            // no retry was announced, and the server saw one request.
            let result = try await CLIRunner.run(["get", server.url("/limited/290").absoluteString])
            #expect(!result.standardError.contains("attempt 2 of 3"), "\(result.standardError)")
            #expect(result.status == 22, "\(result.standardError)")
            #expect(server.hits("/limited/290") == 1)
            #expect(result.standardError.contains("asked to wait 290 s"), "\(result.standardError)")
            #expect(result.standardError.contains("--retry-max-wait 290"), "\(result.standardError)")

            // --quiet: the error line only.
            let quiet = try await CLIRunner.run(["get", server.url("/limited/291").absoluteString, "-q"])
            #expect(quiet.status == 22)
            #expect(!quiet.standardError.contains("asked to wait"))
        }
    }

    @Test("A wait within the limit is said on stderr before it is taken, and the retry answers")
    func shortWaitSaid() async throws {
        try await serving { server in
            let result = try await CLIRunner.run(["get", server.url("/limited/1").absoluteString])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(server.hits("/limited/1") == 2)
            #expect(result.standardError.contains("attempt 1 failed (status 429); attempt 2 of 3 in 1 s"), "\(result.standardError)")
        }
    }

    @Test("The user's --retry-max-wait and --deadline govern: a wait past either ends the retries at once, naming the delay")
    func userLimits() async throws {
        try await serving { server in
            let lowered = try await CLIRunner.run(["get", server.url("/limited/2").absoluteString, "--retry-max-wait", "1"])
            #expect(lowered.status == 22, "\(lowered.standardError)")
            #expect(lowered.standardError.contains("longer than the 1 s this command waits"), "\(lowered.standardError)")
            #expect(server.hits("/limited/2") == 1)

            let deadline = try await CLIRunner.run(["get", server.url("/limited/290").absoluteString, "--deadline", "120"])  // generous, and still short of the 290 s asked
            #expect(!deadline.standardError.contains("attempt 2 of 3"), "\(deadline.standardError)")
            #expect(server.hits("/limited/290") == 1)
            #expect(deadline.status == 22, "\(deadline.standardError)")
            #expect(deadline.standardError.contains("asked to wait 290 s"), "\(deadline.standardError)")
            #expect(deadline.standardError.contains("longer than the 120 s this command waits"), "\(deadline.standardError)")

            let bad = try await CLIRunner.run(["get", server.url("/limited/3").absoluteString, "--retry-max-wait", "-1"])
            #expect(bad.status == 64)
        }
    }
}
