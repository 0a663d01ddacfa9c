import ArgumentParser
import Callsign
import CallsignSQLite
import CallsignTesting
import Foundation
import Synchronization

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: localized("Start the demo API on 127.0.0.1 and walk through Callsign's features against it.")
    )

    @Flag(name: .customLong("keep-files"), help: .localized("Keep the files the demo writes (the definitions file)."))
    var keepFiles = false

    @Flag(help: .localized("After the tour, keep the demo API running (until Ctrl-C) to try `callsign call` against it."))
    var serve = false

    @OptionGroup var config: ConfigFileOption

    func run() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-demo-\(UUID().uuidString)")
        // The tour stops the demo API once and starts it again on the same port.
        var tour = DemoTour(server: try await TestServer.start(), folder: folder, serving: serve)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try await tour.run()
            if serve {
                Terminal.out("")
                Terminal.out(localized("The demo API keeps running at \(tour.server.baseURL.absoluteString); press Ctrl-C to stop."))
                while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
            }
            await tour.server.stop()
            if !keepFiles && !serve { try? FileManager.default.removeItem(at: folder) }
        } catch {
            await tour.server.stop()
            if !keepFiles { try? FileManager.default.removeItem(at: folder) }
            Terminal.error(localized("callsign demo: \(error)"))
            throw ExitCode.failure
        }
    }
}

/// The demo's steps. Each prints what it does and what came back.
struct DemoTour {
    private(set) var server: TestServer
    let folder: URL
    let serving: Bool
    private var stepNumber = 0

    init(server: TestServer, folder: URL, serving: Bool) {
        self.server = server
        self.folder = folder
        self.serving = serving
    }

    mutating func run() async throws {
        Terminal.out(localized("Callsign \(APIClient.version) demo — the demo API is running at \(server.baseURL.absoluteString)"))
        Terminal.out(localized("Nothing leaves this machine: every request goes to 127.0.0.1."))

        let file = folder.appendingPathComponent("demo-api.yaml")
        try FileWriter.write(Data(DemoAPI.definitionsYAML(baseURL: server.baseURL).utf8), to: file)
        let definitions = try APIDefinitions(contentsOf: file)
        let recorder = HARRecorder(fileURL: FileManager.default.temporaryDirectory.appendingPathComponent("callsign-demo.har"))
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.baseURL = server.baseURL
            $0.observability.recorder = recorder
        })

        try await callingSteps(file: file, definitions: definitions, client: client)
        try await openAPIStep()
        try await reliabilitySteps(definitions: definitions, client: client)
        await failureSteps(client: client)
        try await resilienceSteps()
        try await mockAndCacheSteps(definitions: definitions)
        let servedBefore = try await offlineSteps(definitions: definitions)
        try await downloadSteps(client: client)
        try await webSocketStep(client: client)
        try await tlsStep()
        step("Recording: the main client wrote every exchange to a HAR file (secrets redacted)")
        say("\(recorder.count) exchanges in \(recorder.fileURL.path)")
        say("open it in a browser's developer tools, or replay it: callsign call … --mock \(recorder.fileURL.lastPathComponent)")

        Terminal.out("")
        Terminal.out(localized("Done: \(servedBefore + server.requests.count) requests served by the demo API."))
        if serving {
            Terminal.out(localized("Try these in another terminal:"))
            Terminal.out("  swift run callsign list --definitions \(file.path)")
            Terminal.out("  swift run callsign call UserProfile --definitions \(file.path) -p user_id=7 --include")
            Terminal.out("  swift run callsign call TopicListRecommended --definitions \(file.path) -p page:=2 -p page_size:=3")
        } else {
            Terminal.out(localized("Run `swift run callsign demo --serve` to keep the demo API running and call it yourself."))
        }
    }

    /// Definitions, and the four ways to call.
    private mutating func callingSteps(file: URL, definitions: APIDefinitions, client: APIClient) async throws {
        step("Load API definitions from a YAML file")
        say("file: \(file.path)")
        for name in definitions.names {
            let definition = try definitions.definition(named: name)
            say("\(name): \((definition.method ?? .get).rawValue) \(definition.urlTemplate() ?? "")")
        }

        step("Call by name — RFAPI's rules, \"Response Type: 3\" means an array")
        let topics = try await client.call("TopicListRecommended", parameters: ["page": 1, "page_size": 3], as: [DemoTopic].self)
        sent()
        for topic in topics { say("topic \(topic.id): \(topic.title)") }

        step("Call by name with a path template — user/{user_id}/profile")
        let profile = try await client.call("UserProfile", parameters: ["user_id": 42], as: DemoProfile.self)
        sent()
        say("profile: \(profile.name) — \(profile.bio)")

        step("Call by endpoint value — an enum describes the API (Malibu / Moya style)")
        let board = try await client.send(DemoBoards.show(id: 7)).validate().decode(DemoBoard.self)
        sent()
        say("board \(board.id ?? 0): \(board.title)")
        let created = try await client.send(DemoBoards.create(title: "Balsa Fish")).validate().decode(DemoBoard.self)
        sent()
        say("created board \(created.id ?? 0) (accepted status 201 for this case)")

        step("Call with the fluent builder and an xAPI envelope {code, msg, data}")
        let users = try await client.get("demo/v1/{room}/users").baseURL(server.baseURL).parameters(["room": "lobby"])
            .tag("system1").envelope().send().decode([DemoUser].self)
        sent()
        say("users in the lobby: \(users.map(\.name).joined(separator: ", "))")

        step("Common parameters and headers by tag (xAPI), computed per request")
        let tagged = APIClient(definitions: definitions, configuration: .init {
            $0.common.parameters = { tag in tag == "system1" ? ["app": "callsign-demo", "channel": "cli"] : [:] }
            $0.common.headers = { tag in ["X-Subsystem": tag ?? "none"] }
        })
        _ = try await tagged.call("RoomUsers", parameters: ["room": "lobby"])
        sent()
        say("with header X-Subsystem: \(server.requests.last?.header("X-Subsystem") ?? "")")

    }

    /// Tokens, redirects, retry and task control.
    private mutating func reliabilitySteps(definitions: APIDefinitions, client: APIClient) async throws {
        step("Bearer tokens: an expired token gets a 401, one refresh, and the call is resent")
        let refreshes = RefreshCounter()
        let authorized = APIClient(definitions: definitions, configuration: .init {
            $0.authentication = .tokens(DemoTokens(client: client, refreshes: refreshes))
        })
        let me = try await authorized.call("Me", as: DemoUser.self)
        for request in server.requests.suffix(3) {
            // Which token went out, without printing a credential.
            switch request.header("Authorization") {
            case "Bearer \(DemoAPI.currentAccessToken)"?: say("→ \(request.method) \(request.uri) with the refreshed token")
            case .some: say("→ \(request.method) \(request.uri) with the expired token")
            case nil: say("→ \(request.method) \(request.uri)")
            }
        }
        say("signed in as \(me.name) after \(refreshes.count) refresh")

        step("Redirects: followed by Callsign's own policy, the same on every transport")
        let moved = try await client.call("OldBoard", parameters: ["id": 7], as: DemoBoard.self)
        for request in server.requests.suffix(2) { say("→ \(request.method) \(request.uri)") }
        say("board \(moved.id ?? 0): \(moved.title)")

        step("Retry: a 503 with Retry-After is waited out and retried, inside one overall deadline")
        let busy = Mutex(0)
        server.route("/demo/busy") { _ in
            let seen = busy.withLock { count -> Int in
                count += 1
                return count
            }
            return seen == 1
                ? .json(["error": "busy, try again"], status: 503, headers: [("Retry-After", "1")])
                : .json(["id": 1, "title": "Balsa Fish"])
        }
        let retrying = APIClient(configuration: .init {
            $0.baseURL = server.baseURL
            $0.timeouts.deadline = .seconds(60)  // the server asks for 1 s; a busy machine may add many
            $0.observability.observers = [RetryPrinter { report in
                Terminal.out(localized("   attempt \(report.attempt): \(report.outcome); waiting \(APIClientDemoFormat.seconds(report.wait)) as the server asked"))
            }]
        })
        let calm = try await retrying.get("demo/busy").send().decode(DemoBoard.self)
        say("attempt 2: 200 OK — board \(calm.id ?? 0): \(calm.title)")

        step("Task control: a group of calls cancelled together, queued ones never sent")
        let (arrivals, arrived) = AsyncStream<Void>.makeStream()
        server.route("/demo/slow") { _ in
            arrived.yield()
            return ServerResponse(status: 200).with(.delay(.seconds(30)))
        }
        let queued = APIClient(configuration: .init { $0.baseURL = server.baseURL; $0.tasks.concurrency = .serial; $0.retry = .none })
        let feed = (1...3).map { index in
            var request = Request.get("demo/slow", parameters: ["item": .int(index)])
            request.group = "feed"
            return queued.start(request)
        }
        for await _ in arrivals { break }  // the first call has reached the server; the others wait their turn
        say("running or waiting in group \"feed\": \(queued.runningCalls(group: "feed").count)")
        say("cancel(group: \"feed\") cancelled \(queued.cancel(group: "feed")) calls")
        for (index, task) in feed.enumerated() {
            if case .failure(let error) = await task.result { say("call \(index + 1): \(error.code)") }
        }
        say("requests that reached the server: \(server.hits("/demo/slow")) (the other two were still queued)")

    }

    /// Failures: typed errors, and bad input refused before a byte is sent.
    private mutating func failureSteps(client: APIClient) async {
        step("An envelope with a failure code becomes one typed error")
        await expectFailure { _ = try await client.call("RoomAudiences", parameters: ["room": "closed"]) }

        step("A status outside the accepted set is a validation error, with the response kept")
        await expectFailure { _ = try await client.call("UserProfile", parameters: ["user_id": 4242], as: DemoProfile.self) }

        step("A path value fills exactly one segment: \"../admin\" cannot climb out of the path")
        await expectFailure { _ = try await client.call("UserProfile", parameters: ["user_id": "../admin"]) }
        sent()

        step("Bad input is refused before a byte is sent")
        let before = server.requests.count
        await expectFailure { _ = try await client.call("UserProfile", parameters: ["user_id": ".."]) }
        await expectFailure {
            _ = try await client.get("demo/boards").baseURL(server.baseURL).header("X-Note", "a\r\nInjected: yes").send()
        }
        await expectFailure { _ = try await client.call("UserProfil") }
        say("requests sent for these: \(server.requests.count - before)")

    }

    /// Mocks and the HTTP cache.
    private mutating func mockAndCacheSteps(definitions: APIDefinitions) async throws {
        step("Mocks: the same call answered by a mock, through the same validation and decoding")
        let mocked = APIClient(definitions: definitions, configuration: .init {
            $0.mocks = Mocks(realRequests: false) { request in
                request.apiName == "UserProfile" ? .json(["id": 42, "name": "Mock User", "bio": "Never left this process."]) : nil
            }
        })
        let mockProfile = try await mocked.call("UserProfile", parameters: ["user_id": 42], as: DemoProfile.self)
        say("profile: \(mockProfile.name) — \(mockProfile.bio)")

        step("HTTP cache (RFC 9111): fresh answers come from the cache; stale ones are revalidated")
        let cacheFolder = folder.appendingPathComponent("cache", isDirectory: true)
        let cached = APIClient(definitions: definitions, configuration: .init {
            $0.baseURL = server.baseURL
            $0.cache = HTTPCache(storage: SQLiteCacheStorage(directory: cacheFolder))
        })
        say("cache file: \(cacheFolder.appendingPathComponent("callsign-cache.sqlite").path)")
        for attempt in 1...2 {
            let boards = try await cached.get("demo/boards").send()
            say("GET /demo/boards #\(attempt): \(boards.status.code), \(CacheReport.describe(boards.source)) (Cache-Control: \(boards.headers[.cacheControl] ?? ""))")
        }
        for attempt in 1...2 {
            let catalog = try await cached.call("Catalog")
            say("Catalog #\(attempt): \(catalog.status.code), \(CacheReport.describe(catalog.source)), \(catalog.body.count) bytes")
        }
        say("the server sent the catalog \(server.responses("/demo/api/v2/catalog", status: 200))× in full and answered 304 Not Modified \(server.responses("/demo/api/v2/catalog", status: 304))×")
        say("GET requests for /demo/boards that reached the server: \(server.requests.filter { $0.method == "GET" && $0.rawPath == "/demo/boards" }.count)")

    }

    /// The offline queue across a server outage; returns how many requests the stopped server had served.
    private mutating func offlineSteps(definitions: APIDefinitions) async throws -> Int {
        let servedBefore = server.requests.count
        step("Offline queue: a note written while the server is down is kept on disk and goes out by itself when the server is back")
        let queueFile = folder.appendingPathComponent("offline-queue.sqlite")
        let offline = APIClient(definitions: definitions, configuration: .init {
            $0.offline.queue = SQLiteOfflineQueue(url: queueFile)
            $0.observability.observers = [RetryPrinter { report in Terminal.out(localized("   attempt \(report.attempt): \(report.outcome); retrying")) }]
        })
        let port = server.port
        await server.stop()
        say("the demo API on port \(port) is stopped")
        let queuedNote = await Self.failure { () async throws(APIError) in
            _ = try await offline.call("CreateNote", parameters: ["text": "Wax the longboard"])
        }
        say(queuedNote.map { "✓ \($0.code): \($0.message)" } ?? "unexpectedly sent")
        for entry in try await offline.queuedRequests() {
            say("in \(queueFile.lastPathComponent): #\(entry.id) \(entry.method) \(entry.url) (Idempotency-Key \(entry.idempotencyKey ?? "none"))")
        }
        var events = offline.drainEvents.makeAsyncIterator()
        server = try await TestServer.start(port: port)
        say("the demo API is back on port \(server.port); nobody calls replay(): the client probes the server and sends the note itself")
        drain: while let event = await events.next() {
            switch event {
            case .item(let item):
                if case .sent(let response) = item.outcome {
                    say("sent #\(item.request.id) by itself → \(response.status.code) \(response.string())")
                }
            case .waiting(_, let retryIn):
                say("the server does not answer yet; next probe in \(retryIn.components.seconds) s")
            case .drained:
                break drain
            case .paused, .resumed:
                continue
            }
        }
        say("still queued: \(try await offline.queuedRequests().count)")
        return servedBefore

    }

    /// A large download, interrupted and resumed.
    private mutating func downloadSteps(client: APIClient) async throws {
        step("Large downloads: streamed to a file with a progress bar, interrupted, then resumed")
        let archive = folder.appendingPathComponent("archive.bin")
        let size = 40 << 20
        let source = Request.get(server.url("/bytes/\(size)?truncate=\(15 << 20)").absoluteString)
        let bar = ProgressBar(enabled: true, terminal: ResponsePrinter.isTerminal(STDERR_FILENO))
        let interrupted = client.startDownload(source, to: archive)
        for await progress in interrupted.progress where progress.direction == .download { bar.show(progress) }
        bar.finish()
        if case .failure(let error) = await interrupted.result {
            let partial = folder.appendingPathComponent(".archive.bin.callsign-partial")
            let kept = (try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? 0
            say("✗ \(error.code): \(error.message)")
            say("kept \(ByteCount.text(Int64(kept))) in \(partial.lastPathComponent), with the server's ETag")
        }
        let resumedBar = ProgressBar(enabled: true, terminal: ResponsePrinter.isTerminal(STDERR_FILENO))
        let resuming = client.startDownload(source, to: archive)
        for await progress in resuming.progress where progress.direction == .download { resumedBar.show(progress) }
        resumedBar.finish()
        let finished = try await resuming.response
        if let last = server.requests.last {
            say("→ \(last.method) \(last.uri) with Range: \(last.header("Range") ?? "none"), If-Range: \(last.header("If-Range") ?? "none")")
        }
        say("← \(finished.status.code) Partial Content: only the rest was sent")
        let identical = (try? Data(contentsOf: archive)) == TestServer.expectedBytes(count: size)
        let verdict = identical ? localized("yes") : localized("NO")
        say("saved \(archive.lastPathComponent): \(ByteCount.text(Int64(size))), identical to the server's bytes: \(verdict)")

    }

    /// HTTPS on a second demo server: a private CA, a pinned key, HTTP/2 by ALPN.
    private mutating func tlsStep() async throws {
        step("HTTPS: a private CA, a pinned public key, and HTTP/2 negotiated by ALPN")
        let certificates = try TestCertificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        try await TestServer.withRunning(tls: .init(identity: certificates.localhost)) { secure in
            let pinned = try APIClient(configuration: .init {
                $0.baseURL = secure.baseURL
                $0.tls.trustRoots = .only(authority)
                $0.tls.pins = try CertificatePins([secure.host: [certificates.localhost.pin]])
            })
            let versions = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 1...3 { group.addTask { try await pinned.get("anything/\(index)").send().httpVersion } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            say("pin: \(certificates.localhost.pin)")
            say("3 calls to \(secure.baseURL.absoluteString) over \(versions.sorted().joined(separator: ", ")), on \(secure.connectionCount) connection")
            let before = secure.requests.count
            let strict = try APIClient(configuration: .init {
                $0.baseURL = secure.baseURL
                $0.tls.trustRoots = .only(authority)
                $0.tls.pins = try CertificatePins([secure.host: [certificates.authority.pin]])
            })
            if let error = await Self.failure({ () async throws(APIError) in _ = try await strict.get("get").send() }) {
                say("✗ \(error.code): \(error.message)")
            }
            say("requests sent over the refused connection: \(secure.requests.count - before)")
        }
    }

    mutating func step(_ title: LocalizedMessage) {
        stepNumber += 1
        Terminal.out("")
        Terminal.out("\(stepNumber). \(localized(title))")
    }

    func say(_ text: LocalizedMessage) { Terminal.out("   \(localized(text))") }

    static func failure(_ body: () async throws(APIError) -> Void) async -> APIError? {
        do throws(APIError) {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    func sent() {
        guard let last = server.requests.last else { return }
        say("→ \(last.method) \(last.uri)")
    }

    private func expectFailure(_ body: () async throws -> Void) async {
        do {
            try await body()
            say("unexpectedly succeeded")
        } catch let error as APIError {
            say("✗ \(error.code): \(error.message)")
            if let response = error.response {
                say("  the response is kept: \(response.status.code), \(response.string().prefix(60))")
            }
        } catch {
            say("✗ \(error)")
        }
    }
}
