import Callsign
import CallsignSQLite
import CallsignTesting
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("callsign queue and cache commands", .hangGuard)
struct PersistenceCommandTests {
    private func definitionsFile(port: Int) throws -> URL {
        let file = Scratch.folder().appendingPathComponent("demo.yaml")
        let base = URL(string: "http://127.0.0.1:\(port)/") ?? URL(fileURLWithPath: "/")
        try Data(DemoAPI.definitionsYAML(baseURL: base).utf8).write(to: file)
        return file
    }

    @Test("A queue written by processes killed with SIGKILL is replayed from a new process: all, in order, once each")
    func survivesSIGKILL() async throws {
        try CLIRunner.requireBuilt()
        let refusing = try RefusingPort()
        defer { refusing.release() }  // held for the whole test, so no parallel test takes the port
        let port = refusing.port
        let definitions = try definitionsFile(port: port)
        let queue = definitions.deletingLastPathComponent().appendingPathComponent("queue.sqlite")
        let script = """
            echo "group $$"
            i=0
            while [ $i -lt 500 ]; do
              i=$((i+1))
              "$CALLSIGN" call CreateNote -D "$DEFINITIONS" -p n:=$i --queue-offline --queue "$QUEUE" --retry 1
              echo "exit $i $?"
            done
            """
        let run = try ScriptRun(
            script, environment: ["CALLSIGN": CLIRunner.executable.path, "DEFINITIONS": definitions.path, "QUEUE": queue.path])
        let lines = await run.lines { lines in lines.filter { $0.contains("queued as #") }.count >= 6 }
        let group = try #require(lines.first.flatMap { $0.hasPrefix("group ") ? pid_t($0.dropFirst(6)) : nil })
        kill(-group, SIGKILL)  // lands on the shell and whichever callsign is running, mid-enqueue or not
        _ = try await run.exitStatus()
        let reported = lines.filter { $0.contains("queued as #") }.count
        #expect(lines.filter { $0.hasPrefix("exit") }.allSatisfy { $0.hasSuffix(" 75") })

        let server = try await TestServer.start(port: port)  // shares the port `refusing` still holds
        let replay = try await CLIRunner.run(["queue", "replay", "--queue", queue.path])
        #expect(replay.status == 0, "\(replay.standardOutput)\(replay.standardError)")
        let numbers = server.requests.filter { $0.rawPath == "/demo/api/v2/notes" }
            .compactMap { try? JSONValue(parsing: $0.body)["n"]?.intValue }
        #expect(numbers.count >= reported)
        #expect(numbers == Array(1...max(1, numbers.count)))
        let keys = server.requests.compactMap { $0.header("Idempotency-Key") }
        #expect(Set(keys).count == keys.count)
        let list = try await CLIRunner.run(["queue", "list", "--queue", queue.path])
        #expect(list.standardOutput.contains("The queue is empty."))
        await server.stop()
    }

    @Test("call --queue-offline, queue list, drop and replay", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func queueCommands() async throws {
        try CLIRunner.requireBuilt()
        let refusing = try RefusingPort()
        defer { refusing.release() }  // held for the whole test, so no parallel test takes the port
        let definitions = try definitionsFile(port: refusing.port)
        let queue = definitions.deletingLastPathComponent().appendingPathComponent("queue.sqlite").path
        for text in ["first", "second"] {
            let queued = try await CLIRunner.run(["call", "CreateNote", "-D", definitions.path, "-p", "text=\(text)", "--queue-offline", "--queue", queue, "--retry", "1"])
            #expect(queued.status == 75)
            #expect(queued.standardError.contains("the server refused the connection"))
            #expect(queued.standardError.contains("callsign queue replay"))
        }
        let list = try await CLIRunner.run(["queue", "list", "--queue", queue])
        #expect(list.standardOutput.contains("#1  POST http://127.0.0.1:\(refusing.port)/demo/api/v2/notes  [CreateNote]"))
        #expect(list.standardOutput.contains("#2  POST"))
        let drop = try await CLIRunner.run(["queue", "drop", "#1", "--queue", queue])
        #expect(drop.standardOutput.contains("Dropped #1."))
        let missing = try await CLIRunner.run(["queue", "drop", "1", "--queue", queue])
        #expect(missing.status == 65)

        let waiting = try await CLIRunner.run(["queue", "replay", "--queue", queue])
        #expect(waiting.status == 1)
        #expect(waiting.standardOutput.contains("kept         #2"))
        #expect(waiting.standardOutput.contains("0 sent, 0 dead-lettered, 1 still queued"))

        let server = try await TestServer.start(port: refusing.port)  // shares the port `refusing` still holds
        let replay = try await CLIRunner.run(["queue", "replay", "--queue", queue])
        #expect(replay.status == 0)
        #expect(replay.standardOutput.contains("sent         #2 POST"))
        #expect(server.requests.map { String(decoding: $0.body, as: UTF8.self) } == [#"{"text":"second"}"#])
        await server.stop()
    }

    @Test("two queue watch processes on one queue, started while the server is down, deliver each queued POST once when it is back, and end with 0 on Ctrl-C", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func queueWatch() async throws {
        try CLIRunner.requireBuilt()
        let refusing = try RefusingPort()
        defer { refusing.release() }  // held for the whole test, so no parallel test takes the port
        let definitions = try definitionsFile(port: refusing.port)
        let queue = definitions.deletingLastPathComponent().appendingPathComponent("queue.sqlite").path
        for number in 1...4 {
            let queued = try await CLIRunner.run(["call", "CreateNote", "-D", definitions.path, "-p", "n:=\(number)", "--queue-offline", "--queue", queue, "--retry", "1"])
            #expect(queued.status == 75)
        }
        // And as the issue puts it: an ad-hoc `post URL`.
        let posted = try await CLIRunner.run(["post", "http://127.0.0.1:\(refusing.port)/demo/api/v2/notes", "n:=5", "--queue-offline", "--queue", queue, "--retry", "1"])
        #expect(posted.status == 75, "\(posted.standardError)")

        let environment = ["CALLSIGN": CLIRunner.executable.path, "QUEUE": queue]
        let watchers = try (0..<2).map { _ in try ScriptRun(#"echo "group $$"; exec "$CALLSIGN" queue watch --queue "$QUEUE""#, environment: environment) }
        var groups: [pid_t] = []
        for watcher in watchers {
            // Each has tried the head once, found the server down, and waits.
            let started = await watcher.lines { lines in lines.contains { $0.hasPrefix("waiting ") } }
            groups.append(try #require(started.first.flatMap { $0.hasPrefix("group ") ? pid_t($0.dropFirst(6)) : nil }))
            #expect(started.contains { $0.contains("watching \(queue): 5 queued; Ctrl-C to stop") }, "\(started)")
            #expect(started.contains { $0.hasPrefix("waiting      http://127.0.0.1:\(refusing.port) does not answer; next try in ") }, "\(started)")
        }

        let server = try await TestServer.start(port: refusing.port)  // shares the port `refusing` still holds
        var sent: [String] = []
        for watcher in watchers {
            let lines = await watcher.lines { lines in lines.contains { $0.contains("nothing to send now; watching") } }
            sent += lines.filter { $0.hasPrefix("sent ") }
        }
        for group in groups { kill(-group, SIGINT) }
        for watcher in watchers { #expect(try await watcher.exitStatus() == 0) }
        #expect(sent.count == 5, "\(sent)")
        let notes = server.requests.filter { $0.rawPath == "/demo/api/v2/notes" }
        let numbers = notes.compactMap { try? JSONValue(parsing: $0.body)["n"]?.intValue }
        #expect(numbers == [1, 2, 3, 4, 5], "each once, in order")
        #expect(Set(notes.compactMap { $0.header("Idempotency-Key") }).count == 5)
        let list = try await CLIRunner.run(["queue", "list", "--queue", queue])
        #expect(list.standardOutput.contains("The queue is empty."))
        await server.stop()
    }

    @Test("queue replay refuses --bearer without definitions; queue retry moves a dead letter back")
    func replayCredentialsAndRetry() async throws {
        try CLIRunner.requireBuilt()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-retry-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let queuePath = folder.appendingPathComponent("queue.sqlite")
        let refused = try await CLIRunner.run(["queue", "replay", "--queue", queuePath.path, "--bearer", "t0ken"])
        #expect(refused.status == 64, "\(refused.standardError)")
        #expect(refused.standardError.contains("--definitions"))

        let storage = SQLiteOfflineQueue(url: queuePath)
        let stored = try await storage.enqueue(QueuedRequest(method: "POST", url: "http://127.0.0.1:9/x", headers: [:]))
        _ = try await storage.claimNext(lease: .seconds(60), owner: "test")
        try await storage.moveToDeadLetter(stored.id, owner: "test", error: "the server answered 422")
        let retried = try await CLIRunner.run(["queue", "retry", "#\(stored.id)", "--queue", queuePath.path])
        #expect(retried.status == 0, "\(retried.standardError)")
        #expect(try await storage.list(.pending).map(\.id) == [stored.id])
        #expect(try await storage.list(.deadLetter).isEmpty)
        let missing = try await CLIRunner.run(["queue", "retry", "99", "--queue", queuePath.path])
        #expect(missing.status == 65)
    }

    @Test("A read-only queue database: the call is not queued, and says so")
    func readOnlyQueue() async throws {
        try CLIRunner.requireBuilt()
        let refusing = try RefusingPort()
        let definitions = try definitionsFile(port: refusing.port)
        let folder = definitions.deletingLastPathComponent()
        let queue = folder.appendingPathComponent("queue.sqlite")
        // Create the database, then take write permission away from the file and its folder.
        let client = APIClient(configuration: .init { $0.offline.queue = SQLiteOfflineQueue(url: queue) })
        _ = try await client.queuedRequests()
        chmod(queue.path, 0o444)
        chmod(folder.path, 0o555)
        defer { chmod(folder.path, 0o755) }
        let arguments = ["call", "CreateNote", "-D", definitions.path, "-p", "text=x", "--queue-offline", "--queue", queue.path, "--retry", "1"]
        // Root ignores permission bits; in a user namespace without a mapping it does not.
        let result = geteuid() == 0
            ? try await ProcessRunner.run("/usr/bin/env", ["unshare", "--user", CLIRunner.executable.path] + arguments)
            : try await CLIRunner.run(arguments)
        #expect(result.status == 74, "\(result.standardError)")
        #expect(result.standardError.contains("storage"))
        #expect(result.standardError.contains("NOT queued"))
        #expect(result.standardError.contains("read-only"))
        withExtendedLifetime(refusing) {}
    }

    @Test("call --cache DIR --verbose says network, fresh hit or revalidated")
    func cacheFlag() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let definitions = try definitionsFile(port: server.port)
            let cache = definitions.deletingLastPathComponent().appendingPathComponent("cache").path
            let first = try await CLIRunner.run(["call", "Catalog", "-D", definitions.path, "--cache", cache, "--verbose"])
            #expect(first.status == 0)
            #expect(first.standardError.contains("cache: from the network"))
            let second = try await CLIRunner.run(["call", "Catalog", "-D", definitions.path, "--cache", cache, "--verbose"])
            #expect(second.standardError.contains("cache: revalidated: the server said 304 Not Modified"))
            #expect(second.standardOutput.contains("SKU-40"))
            #expect(server.responses("/demo/api/v2/catalog", status: 304) == 1)
        }
    }

    @Test("get --cache DIR behaves as the library: a 304 without a validator refreshes the stored answer, one request, no second")
    func cacheAsLibrary() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let origin = ScriptedOrigin([
                answer(200, [("ETag", "\"v1\""), ("Cache-Control", "max-age=0"), ("Content-Type", "text/plain")]),
                answer(304, [("Cache-Control", "max-age=3600")], body: ""),
            ])
            origin.install(on: server)
            let cache = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-cli-cache-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: cache) }
            let url = server.url(origin.path).absoluteString
            _ = try await CLIRunner.run(["get", url, "--cache", cache, "--verbose"])
            let second = try await CLIRunner.run(["get", url, "--cache", cache, "--verbose"])
            #expect(second.standardError.contains("cache: revalidated"), "\(second.standardError)")
            #expect(second.standardOutput == "stored body")
            let third = try await CLIRunner.run(["get", url, "--cache", cache, "--verbose"])
            #expect(third.standardError.contains("cache: fresh hit"), "\(third.standardError)")
            #expect(origin.requests.count == 2)
        }
        // Byte ranges through the same cache: a part from the origin, then one inside it from storage.
        try await TestServer.withRunning { server in
            let origin = ScriptedOrigin([ranged()])
            origin.install(on: server)
            let cache = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-cli-cache-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: cache) }
            let url = server.url(origin.path).absoluteString
            let part = try await CLIRunner.run(["get", url, "Range:bytes=0-4", "--cache", cache, "--verbose"])
            #expect(part.standardOutput == "01234", "\(part.standardError)")
            let inside = try await CLIRunner.run(["get", url, "Range:bytes=2-3", "--cache", cache, "--verbose"])
            #expect(inside.standardOutput == "23" && inside.standardError.contains("cache: fresh hit"), "\(inside.standardError)")
            #expect(origin.requests.count == 1)
        }
    }
}

@Suite("Offline queue leases across processes", .serialized, .hangGuard)
struct QueueLeaseTests {
    @Test("two processes replay one queue while the server asks to wait longer than the lease: each request is delivered once, in order")
    func leaseRenewedDuringRetryAfter() async throws {
        try CLIRunner.requireBuilt()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-lease-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let queuePath = folder.appendingPathComponent("queue.sqlite")
        // A lease of 5 s renewed every 5/3 s: only a renewal more than 3 s late lets the claim lapse,
        // which a busy machine does not make. The Retry-After wait (12 s) outlasts the lease by far, so the
        // second process starts while the first still waits.
        let lease = 5.0
        try await TestServer.withRunning { server in
            let deliveries = Deliveries()
            let arrived = AsyncStream<Date>.makeStream()
            server.route("/orders") { request in
                let key = request.header("Idempotency-Key") ?? "?"
                if deliveries.firstArrival(key), key == "order-1" {
                    arrived.continuation.yield(Date())
                    return ServerResponse(status: 503, headers: [("Retry-After", "12")])
                }
                deliveries.delivered(key)
                return ServerResponse(status: 201, headers: [])
            }
            let storage = SQLiteOfflineQueue(url: queuePath)
            for number in 1...3 {
                _ = try await storage.enqueue(
                    QueuedRequest(method: "POST", url: server.url("/orders").absoluteString, headers: ["Idempotency-Key": "order-\(number)"]))
            }
            let arguments = ["queue", "replay", "--queue", queuePath.path, "--lease", "\(lease)"]
            async let first = CLIRunner.run(arguments)
            // The first replayer claimed order-1 before sending it: its original lease ends by
            // `arrival + lease` (the queue's clock is the wall clock too).
            var arrivals = arrived.stream.makeAsyncIterator()
            let arrival = try #require(await arrivals.next())
            let originalLeaseEnd = arrival.addingTimeInterval(lease)
            while Date() <= originalLeaseEnd { try await Task.sleep(for: .milliseconds(100)) }
            // Past the original lease the claim is still live — renewed — so nobody else may take
            // order-1. (Were it lapsed, this probe would take it: the failure the test looks for.)
            let probe = try await storage.claimNext(lease: .seconds(60), owner: "probe")
            #expect(probe == nil, "the first replayer's claim lapsed after its original lease")
            let second = try await CLIRunner.run(arguments)
            let firstResult = try await first
            #expect(firstResult.status == 0, "\(firstResult.standardOutput)\(firstResult.standardError)")
            #expect(deliveries.log == ["order-1", "order-2", "order-3"], "\(second.standardOutput)")
        }
    }
}

extension QueueLeaseTests {
    @Test("a replaying process killed with SIGKILL at random points, 200 times: every queued item arrives, none is processed twice, the file stays sound")
    func replayerKilledAtRandom() async throws {
        try CLIRunner.requireBuilt()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-kill-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let queuePath = folder.appendingPathComponent("queue.sqlite")
        try await TestServer.withRunning { server in
            let deliveries = Deliveries()
            // A server that deduplicates by Idempotency-Key: it processes a key's first arrival only.
            server.route("/jobs") { request in
                let key = request.header("Idempotency-Key") ?? "?"
                if deliveries.firstArrival(key) { deliveries.delivered(key) }
                return ServerResponse(status: 201, headers: []).with(.delay(.milliseconds(Int64.random(in: 0...15))))
            }
            let storage = SQLiteOfflineQueue(url: queuePath)
            let keys = (1...40).map { "job-\($0)" }
            for key in keys {
                _ = try await storage.enqueue(QueuedRequest(method: "POST", url: server.url("/jobs").absoluteString, headers: ["Idempotency-Key": key]))
            }
            let script = #"""
                for i in $(seq 1 200); do
                  "$CALLSIGN" queue replay --queue "$QUEUE" --lease 0.1 >/dev/null 2>&1 &
                  pid=$!
                  sleep "0.0$((RANDOM % 10))"
                  kill -9 "$pid" 2>/dev/null
                  wait "$pid" 2>/dev/null
                done
                echo killed
                """#
            let killing = try await ProcessRunner.run("/bin/bash", ["-c", script], environment: ["CALLSIGN": CLIRunner.executable.path, "QUEUE": queuePath.path])
            #expect(killing.standardOutput.contains("killed"))
            // A last replayer finishes the queue once the killed ones' claims (0.1 s) have lapsed.
            var remaining = try await storage.list(.pending).count
            for _ in 0..<50 where remaining > 0 {
                _ = try await CLIRunner.run(["queue", "replay", "--queue", queuePath.path, "--lease", "0.1"])
                remaining = try await storage.list(.pending).count
                if remaining > 0 { try await Task.sleep(for: .milliseconds(150)) }
            }
            #expect(remaining == 0)
            #expect(deliveries.log == keys, "every acknowledged item processed once, in queue order")
            #expect(try await storage.list(.deadLetter).isEmpty)
        }
        let check = try await ProcessRunner.run(
            "/usr/bin/env", ["python3", "-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])", queuePath.path])
        #expect(check.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
    }
}

/// What the server delivered, by idempotency key, in order.
private final class Deliveries: Sendable {
    private let state = Mutex<(seen: Set<String>, log: [String])>(([], []))
    func firstArrival(_ key: String) -> Bool { state.withLock { $0.seen.insert(key).inserted } }
    func delivered(_ key: String) { state.withLock { $0.log.append(key) } }
    var log: [String] { state.withLock { $0.log } }
}
