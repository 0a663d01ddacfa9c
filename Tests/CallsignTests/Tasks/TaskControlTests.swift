@testable import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// A route that holds requests until released, and says when each has arrived.
final class Gate: Sendable {
    let arrivals: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation
    /// Whether the gate is open, and who waits while it is shut — under one lock, so a request
    /// that arrives while the gate opens is never left behind.
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    init(on server: TestServer, path: String) {
        (arrivals, continuation) = AsyncStream<String>.makeStream()
        server.route(path) { [self] request in
            continuation.yield(request.uri)
            await withCheckedContinuation { waiter in
                let isOpen = state.withLock { state in
                    if !state.open { state.waiters.append(waiter) }
                    return state.open
                }
                if isOpen { waiter.resume() }
            }
            return .json(["uri": .string(request.uri)])
        }
    }

    /// Waits until `count` requests have arrived.
    func waitForArrivals(_ count: Int) async {
        var seen = 0
        for await _ in arrivals {
            seen += 1
            if seen == count { return }
        }
    }

    /// Lets every held and future request through.
    func release() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

@Suite("Task control", .hangGuard)
struct TaskControlTests {
    @Test("cancel by identifier: the caller gets cancelled, others keep going")
    func cancelByIdentifier() async throws {
        try await withServer { server, client in
            let gate = Gate(on: server, path: "/held")
            let doomed = client.start(Request.get("held/a").with { $0.identifier = "login" })
            let survivor = client.start(Request.get("held/b").with { $0.identifier = "other" })
            await gate.waitForArrivals(2)
            #expect(client.isRunning(identifier: "login"))
            #expect(client.cancel(identifier: "login") == 1)
            let result = await doomed.result
            #expect(result.error?.code == .cancelled)
            gate.release()
            let response1 = try await survivor.response

            #expect(response1.status == .ok)
            #expect(!client.isRunning(identifier: "login"))
        }
    }

    @Test("cancel by group also removes queued calls, which are never sent")
    func cancelGroupWithQueued() async throws {
        try await withServer(configure: { $0.tasks.concurrency = .serial }) { server, client in
            let gate = Gate(on: server, path: "/held")
            let tasks = (0..<4).map { index in client.start(Request.get("held/\(index)").with { $0.group = "account" }) }
            await gate.waitForArrivals(1)  // one in flight, three waiting for their turn
            #expect(client.runningCalls(group: "account").count == 4)
            #expect(client.cancel(group: "account") == 4)
            for task in tasks {
                #expect(await task.result.error?.code == .cancelled)
            }
            gate.release()
            #expect(server.requests.filter { $0.rawPath.hasPrefix("/held") }.count == 1)
            #expect(client.runningCalls.isEmpty)
        }
    }

    @Test("cancelAll reaches calls started without identifier or group, also one cancelled at once")
    func cancelAllStartedCalls() async throws {
        try await withServer { server, client in
            let gate = Gate(on: server, path: "/held")
            let held = (0..<2).map { index in client.start(.get("held/\(index)")) }
            await gate.waitForArrivals(2)
            #expect(client.runningCalls.count == 2)
            #expect(client.cancelAll() == 2)
            for task in held { #expect(await task.result.error?.code == .cancelled) }
            #expect(client.runningCalls.isEmpty)

            let never = client.start(.get("held/never"))
            #expect(client.cancelAll() == 1)
            #expect(await never.result.error?.code == .cancelled)
            gate.release()
            let after = try await client.start(.get("held/after")).response
            #expect(after.status == .ok)
            #expect(client.runningCalls.isEmpty)
        }
    }

    @Test("an identifier already running: cancelPrevious (default, and the cancelled caller is told why) or join")
    func identifierConflict() async throws {
        try await withServer { server, client in
            let gate = Gate(on: server, path: "/held")
            let first = client.start(Request.get("held/1").with { $0.identifier = "search" })
            await gate.waitForArrivals(1)
            let second = client.start(Request.get("held/2").with { $0.identifier = "search" })
            await gate.waitForArrivals(1)
            let replaced = await first.result.error
            #expect(replaced?.code == .cancelled)
            #expect(replaced?.message.contains("a newer call with the identifier \"search\" replaced this one") == true, "\(String(describing: replaced?.message))")
            // Awaited directly (the shared path, which others could join), the same reason.
            let third = Task { try await client.send(Request.get("held/3").with { $0.identifier = "other" }) }
            await gate.waitForArrivals(1)
            _ = client.start(Request.get("held/4").with { $0.identifier = "other" })
            let thirdError = await #expect(throws: APIError.self) { try await third.value }
            #expect(thirdError?.message.contains("\"other\" replaced this one") == true, "\(String(describing: thirdError?.message))")
            gate.release()
            let response2 = try await second.response

            #expect(try response2.json()["uri"] == "/held/2")
        }
        try await withServer(configure: { $0.tasks.identifierConflict = .join }) { server, client in
            let gate = Gate(on: server, path: "/held")
            let first = client.start(Request.get("held/1").with { $0.identifier = "profile" })
            await gate.waitForArrivals(1)
            let joined = client.start(Request.get("held/2").with { $0.identifier = "profile" })
            // start() only creates the joiner's task: held/1 must still run when it is admitted,
            // or it would be a new call. Release once both callers wait on the one call.
            let running = try #require(client.registry.calls { $0.identifier == "profile" }.first)
            await running.waitUntil(waiting: 2)
            gate.release()
            let response3 = try await first.response

            #expect(try response3.json()["uri"] == "/held/1")
            let response4 = try await joined.response

            #expect(try response4.json()["uri"] == "/held/1")
            #expect(server.hits("/held/2") == 0)
        }
    }

    @Test(".limited(n) never has more than n requests in flight", arguments: [1, 3])
    func limited(count: Int) async throws {
        try await withServer(configure: { $0.tasks.concurrency = .limited(count) }) { server, client in
            server.route("/work") { _ in
                try? await Task.sleep(for: .milliseconds(20))
                return .json(["ok": true])
            }
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<20 { group.addTask { _ = try? await client.get("/work").send() } }
            }
            #expect(server.hits("/work") == 20)
            #expect(server.maxConcurrentRequests <= count)
            #expect(server.maxConcurrentRequests >= 1)
        }
    }

    @Test("per-tag limits apply to their tag only")
    func tagLimit() async throws {
        try await withServer(configure: { $0.tasks.tagConcurrency["uploads"] = .serial }) { server, client in
            let gate = Gate(on: server, path: "/held")
            let uploads = (0..<2).map { index in client.start(Request.get("held/u\(index)").with { $0.tag = "uploads" }) }
            let other = client.start(.get("held/other"))
            await gate.waitForArrivals(2)  // one upload and the untagged call
            #expect(server.requests.filter { $0.rawPath.hasPrefix("/held/u") }.count == 1)
            gate.release()
            for task in uploads { #expect(await task.result.error == nil) }
            #expect(await other.result.error == nil)
        }
    }

    @Test("de-duplication: 20 identical GETs make one server hit; one caller leaving does not cancel the rest")
    func deduplication() async throws {
        try await withServer(configure: { $0.tasks.deduplicatesRequests = true }) { server, client in
            let gate = Gate(on: server, path: "/held")
            let tasks = (0..<20).map { _ in client.start(.get("held/same")) }
            await gate.waitForArrivals(1)
            tasks[0].cancel()
            #expect(await tasks[0].result.error?.code == .cancelled)
            gate.release()
            for task in tasks.dropFirst() {
                let response5 = try await task.response

                #expect(try response5.json()["uri"] == "/held/same")
            }
            #expect(server.hits("/held/same") == 1)
            // Not de-duplicated: a different URL, or a POST.
            _ = try await client.get("/held/other").send()
            _ = try await client.post("/held/same").send()
            #expect(server.hits("/held/same") == 2)
        }
    }

    @Test("progress is monotonic, never above 1, and ends at 1")
    func progress() async throws {
        try await withServer { server, client in
            let task = client.start(.get("bytes/1000000"))
            var updates: [TransferProgress] = []
            for await update in task.progress { updates.append(update) }
            let response6 = try await task.response

            #expect(response6.body.count == 1_000_000)
            let downloads = updates.filter { $0.direction == .download }
            #expect(downloads.last?.fraction == 1)
            #expect(downloads.allSatisfy { ($0.fraction ?? 0) <= 1 })
            #expect(zip(downloads, downloads.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes })
        }
    }

    @Test("a small in-memory upload (one chunk) reports 0 then 1 before the first download update; the download ends at 1")
    func inMemoryUploadProgress() async throws {
        // Every update, as a CallObserver hears it: a task's stream keeps only the newest one for a
        // slow reader, so on a busy machine it may skip the upload's last update.
        let recorder = ProgressRecorder()
        try await withServer(configure: { $0.observability.observers = [recorder] }) { server, client in
            let text = String(repeating: "surf ", count: 4000)
            let task = client.start(.post("anything/notes", parameters: ["text": .string(text)]))
            let response = try await task.response
            let updates = recorder.updates.withLock { $0 }
            #expect(response.status == .ok)
            let uploads = updates.enumerated().filter { $0.element.direction == .upload }
            let firstDownload = updates.firstIndex { $0.direction == .download }
            #expect(uploads.map(\.element.fraction) == [0, 1])
            #expect(uploads.last.map { $0.offset < (firstDownload ?? -1) } == true)
            #expect(uploads.last?.element.totalBytes ?? 0 > 20_000)
            let downloads = updates.filter { $0.direction == .download }
            #expect(downloads.last?.fraction == 1)
            #expect(downloads.last?.completedBytes == Int64(response.body.count))
            #expect(zip(downloads, downloads.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes })
        }
    }

    @Test("progress starts again from zero when an attempt is retried")
    func progressResetOnRetry() async throws {
        try await withServer(configure: { $0.clock = TestClock(); $0.retry = RetryPolicy(maximumAttempts: 2, jitter: .none) }) {
            server, client in
            let failed = Mutex(false)
            server.route("/retry-bytes") { _ in
                let first = failed.withLock { seen in defer { seen = true }; return !seen }
                return first
                    ? ServerResponse(status: 503, headers: [("Content-Type", "text/plain")], body: .data(Data(repeating: 1, count: 5000)))
                    : ServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: .generated(count: 20000))
            }
            let task = client.start(.get("retry-bytes"))
            var updates: [TransferProgress] = []
            for await update in task.progress { updates.append(update) }
            _ = try await task.response
            let downloads = updates.filter { $0.direction == .download }
            let restarts = zip(downloads, downloads.dropFirst()).filter { $1.completedBytes < $0.completedBytes }
            #expect(restarts.count <= 1)
            #expect(downloads.last?.completedBytes == 20000)
            #expect(downloads.last?.fraction == 1)
        }
    }

    @Test("observers see every call start, move bytes, retry and end, with its loading message, and the running count")
    func observers() async throws {
        final class Recorder: CallObserver {
            let events = Mutex<[String]>([])
            func callDidStart(_ call: ObservedCall) { events.withLock { $0.append("start \(call.id) \(call.loadMessage ?? "-")") } }
            func callDidProgress(_ call: ObservedCall, progress: TransferProgress) {
                events.withLock { if $0.last != "progress \(call.id)" { $0.append("progress \(call.id)") } }
            }
            func callWillRetry(_ call: ObservedCall, after report: AttemptReport) {
                events.withLock { $0.append("retry \(call.id) after attempt \(report.attempt): \(report.outcome)") }
            }
            func callDidEnd(_ call: ObservedCall) { events.withLock { $0.append("end \(call.id)") } }
            func activeCallCountDidChange(_ count: Int) { events.withLock { $0.append("active \(count)") } }
        }
        let recorder = Recorder()
        try await withServer(configure: {
            $0.observability.observers = [recorder]
            $0.clock = TestClock()
            $0.retry = RetryPolicy(maximumAttempts: 2)
        }) { server, client in
            server.route("/busy") { _ in .json([:], status: server.hits("/busy") < 2 ? 503 : 200) }
            _ = try await client.send(Request.get("get").with { $0.loadMessage = "Loading…" })
            _ = try await client.send(.get("busy"))
        }
        #expect(
            recorder.events.withLock { $0 } == [
                "active 1", "start 1 Loading…", "progress 1", "end 1", "active 0",
                "active 1", "start 2 -", "progress 2", "retry 2 after attempt 1: status 503", "progress 2", "end 2", "active 0",
            ])
    }
}

/// Every progress update of every call, in order.
final class ProgressRecorder: CallObserver {
    let updates = Mutex<[TransferProgress]>([])
    func callDidProgress(_ call: ObservedCall, progress: TransferProgress) { updates.withLock { $0.append(progress) } }
}

extension Request {
    /// A copy changed by `change`, for building requests in one expression.
    func with(_ change: (inout Request) -> Void) -> Request {
        var copy = self
        change(&copy)
        return copy
    }
}

extension Result where Failure == APIError {
    var error: APIError? { if case .failure(let error) = self { error } else { nil } }
}
