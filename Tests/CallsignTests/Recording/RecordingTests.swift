import Callsign
import CallsignTesting
import Foundation
import Logging
import Metrics
import MetricsTestKit
import InMemoryTracing
import Synchronization
import Testing
import Tracing

/// A tracer that propagates W3C `traceparent`, built on the in-memory tracer.
struct TraceparentTracer: Tracer {
    let memory = InMemoryTracer()

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
        function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        memory.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Carrier == Inject.Carrier {
        guard let span = context.inMemorySpanContext else { return }
        func hex(_ text: String, _ width: Int) -> String {
            let digits = text.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) }.map { String($0) }.joined()
            return String(repeating: "0", count: max(0, width - digits.count)) + digits.suffix(width)
        }
        injector.inject("00-\(hex(span.traceID, 32))-\(hex(span.spanID, 16))-01", forKey: "traceparent", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Carrier == Extract.Carrier {}

    func forceFlush() {}
}

@Suite("HAR, cURL, redaction, metrics and tracing", .hangGuard)
struct RecordingTests {
    @Test("a real exchange is written as valid HAR 1.2 and replays the same responses")
    func harRoundTrip() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-\(UUID().uuidString).har")
        defer { try? FileManager.default.removeItem(at: file) }
        let recorder = HARRecorder(fileURL: file)
        var recorded: [Data] = []
        try await withServer(configure: { $0.observability.recorder = recorder }) { server, client in
            recorded.append(try await client.get("/json").send().body)
            recorded.append(try await client.post("/anything/post").parameters(["title": "Balsa"]).send().body)
            recorded.append(try await client.get("/bytes/64").send().body)
            _ = try await client.get("/status/404").send()
        }
        #expect(recorder.count == 4)

        // The required fields of HAR 1.2.
        let har = try JSONValue(parsing: Data(contentsOf: file))
        #expect(har["log"]?["version"] == "1.2")
        #expect(har["log"]?["creator"]?["name"] == "Callsign")
        let entries = try #require(har["log"]?["entries"]?.arrayValue)
        #expect(entries.count == 4)
        for entry in entries {
            for key in ["startedDateTime", "time", "request", "response", "cache", "timings"] {
                #expect(entry[key] != nil, "entry.\(key)")
            }
            for key in ["method", "url", "httpVersion", "cookies", "headers", "queryString", "headersSize", "bodySize"] {
                #expect(entry["request"]?[key] != nil, "request.\(key)")
            }
            for key in ["status", "statusText", "httpVersion", "cookies", "headers", "content", "redirectURL", "headersSize", "bodySize"] {
                #expect(entry["response"]?[key] != nil, "response.\(key)")
            }
            #expect(entry["response"]?["content"]?["mimeType"] != nil)
            for key in ["send", "wait", "receive"] { #expect(entry["timings"]?[key] != nil) }
        }
        #expect(entries[1]["request"]?["postData"]?["text"] == #"{"title":"Balsa"}"#)
        #expect(entries[2]["response"]?["content"]?["encoding"] == "base64")

        // Replay: the same URLs give the same bodies, with no server at all.
        let replay = try HARReplay(contentsOf: file)
        let firstURL = try #require(entries[0]["request"]?["url"]?.stringValue)
        let port = try #require(URL(string: firstURL)?.port)
        let offline = APIClient(configuration: .init { $0.baseURL = URL(string: "http://127.0.0.1:\(port)/"); $0.retry = .none; $0.mocks = Mocks(replaying: replay) })
        #expect(try await offline.get("/json").send().body == recorded[0])
        #expect(try await offline.post("/anything/post").parameters(["title": "Balsa"]).send().body == recorded[1])
        #expect(try await offline.get("/bytes/64").send().body == recorded[2])
        #expect(try await offline.get("/status/404").send().status.code == 404)
        let unmatched = await apiError { _ = try await offline.get("/never-recorded").send() }
        #expect(unmatched?.code == .transport)
        #expect(unmatched?.message.contains("no recorded exchange for GET") == true)
    }

    @Test("the archive is whole after every exchange, entries in order, owner-only; through a link; and into /dev/null")
    func harAfterEachExchange() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-har-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let real = folder.appendingPathComponent("real.har")
        let link = folder.appendingPathComponent("session.har")
        #expect(FileManager.default.createFile(atPath: real.path, contents: Data("an older session".utf8)))
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        let recorder = HARRecorder(fileURL: link)
        let sink = HARRecorder(fileURL: URL(fileURLWithPath: "/dev/null"))
        try await withServer(configure: { $0.observability.recorder = recorder; $0.middlewares = [sink] }) { server, client in
            for index in 0..<40 {
                _ = try await client.get("/anything/\(index)").send()
                // A reader in the middle of the session sees a complete archive with every exchange so far.
                let har = try JSONValue(parsing: Data(contentsOf: link))
                let urls = try #require(har["log"]?["entries"]?.arrayValue).compactMap { $0["request"]?["url"]?.stringValue }
                #expect(urls.count == index + 1)
                #expect(urls.last?.hasSuffix("/anything/\(index)") == true)
                #expect(har["log"]?["version"] == "1.2")
            }
        }
        #expect(recorder.count == 40 && sink.count == 40)
        let attributes = try FileManager.default.attributesOfItem(atPath: real.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == real.path)
        let replay = try HARReplay(contentsOf: link)
        #expect(replay.count == 40)
        // /dev/null is still the system's device.
        let null = try FileManager.default.attributesOfItem(atPath: "/dev/null")
        #expect(null[.type] as? FileAttributeType == .typeCharacterSpecial)
    }

    @Test("the cURL line reproduces the request when run with the system curl")
    func curl() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "curl is not installed")
        try await withServer { server, client in
            let request = Request.post("anything/curl", parameters: ["title": "it's \"quoted\"", "n": 1]).adding(headers: ["X-Trace": "t-1"])
            let command = try await client.curlCommand(for: request)
            #expect(command.text.hasPrefix("curl -sS -X POST"))
            // Run it through a shell exactly as printed.
            let result = try await ProcessRunner.run("/bin/sh", ["-c", command.text])
            #expect(result.status == 0)
            let echo = try JSONValue(parsing: Data(result.standardOutput.utf8))
            #expect(echo["method"] == "POST")
            #expect(echo["path"] == "/anything/curl")
            #expect(echo["json"] == ["title": "it's \"quoted\"", "n": 1])
            #expect(echo["headers"]?["X-Trace"] == "t-1")
            #expect(echo["headers"]?["Content-Type"] == "application/json")
        }
    }

    @Test("a sentinel secret appears in no log, error, cURL line or HAR file, at the most verbose level")
    func redactionSentinel() async throws {
        let sentinel = "s3ntinel-\(UUID().uuidString)"
        let handler = CapturingLogHandler()
        var logger = Logger(label: "sentinel") { _ in handler }
        logger.logLevel = .trace
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-sentinel-\(UUID().uuidString).har")
        defer { try? FileManager.default.removeItem(at: file) }
        let recorder = HARRecorder(fileURL: file)
        var texts: [String] = []
        try await withServer(configure: { configuration in
            configuration.observability.logger = logger
            configuration.authentication = .bearer(sentinel)
            configuration.headers["Cookie"] = "session=\(sentinel)"
            configuration.headers["X-Api-Key"] = sentinel
            configuration.observability.recorder = recorder
        }) { server, client in
            server.route("/login") { _ in .json(["token": .string(sentinel), "user": "ann"], status: 500) }
            var request = Request.post("login", parameters: ["password": .string(sentinel), "name": "ann"])
            request.query = ["access_token": .string(sentinel)]
            request.needsAuthorization = true
            request.headers["Proxy-Authorization"] = "Basic \(sentinel)"
            let error = await apiError { _ = try await client.send(request).validate() }
            texts.append(error?.description ?? "")
            texts.append(error?.localizedDescription ?? "")
            texts.append(try await client.curlCommand(for: request).text)
            var form = request
            form.contentType = .formURLEncoded
            texts.append(try await client.curlCommand(for: form).text)
            let failing = Request.get("https://user:\(sentinel)@127.0.0.1:1/x?sig=\(sentinel)")
            texts.append((await apiError { _ = try await client.send(failing) })?.description ?? "")
        }
        texts += handler.lines.withLock { $0 }
        texts.append(String(decoding: try Data(contentsOf: file), as: UTF8.self))
        #expect(texts.count > 6)
        for text in texts {
            #expect(!text.contains(sentinel), "\(text.prefix(300))")
        }
        #expect(texts.joined().contains("REDACTED"))
    }

    @Test("metrics: count, duration and failures, labelled by API, method, status class and error code")
    func metrics() async throws {
        let metrics = TestMetrics()
        let yaml = "Ok:\n  path: get\nMissing:\n  path: status/404\n"
        try await withServer(
            definitions: yamlDefinitions(yaml),
            configure: { $0.observability.metricsFactory = metrics }
        ) { server, client in
            _ = try await client.call("Ok")
            _ = try await client.call("Ok")
            _ = await apiError { try await client.call("Missing") }
            _ = await apiError { _ = try await client.get("/misbehave/close").send() }
        }
        let ok = try metrics.expectCounter("callsign_requests_total", [("api", "Ok"), ("method", "GET"), ("status_class", "2xx")])
        #expect(ok.totalValue == 2)
        let timer = try metrics.expectTimer("callsign_request_duration_seconds", [("api", "Ok"), ("method", "GET")])
        #expect(timer.values.count == 2)
        let failure = try metrics.expectCounter("callsign_request_failures_total", [("api", "-"), ("method", "GET"), ("code", "transport")])
        #expect(failure.totalValue == 1)
        // A 404 from call(_:) is a validation failure, counted with its status class.
        let missing = try metrics.expectCounter("callsign_requests_total", [("api", "Missing"), ("method", "GET"), ("status_class", "4xx")])
        #expect(missing.totalValue == 1)
    }

    @Test("tracing: the server receives a traceparent when a tracer is set, and nothing without one")
    func tracing() async throws {
        let tracer = TraceparentTracer()
        try await withServer(configure: { $0.observability.tracer = tracer }) { server, client in
            _ = try await client.get("/get").send()
            let traceparent = try #require(server.requests.last?.header("traceparent"))
            #expect(traceparent.range(of: "^00-[0-9a-z]{32}-[0-9a-z]{16}-01$", options: .regularExpression) != nil)
        }
        let spans = tracer.memory.finishedSpans
        #expect(spans.contains { $0.operationName == "HTTP GET" && $0.kind == .client })
        #expect(spans.contains { $0.operationName == "HTTP GET attempt" })
        try await withServer { server, client in
            _ = try await client.get("/get").send()
            #expect(server.requests.last?.header("traceparent") == nil)
        }
    }

    @Test("tracing: a tracer bound with withTracer around the call is used when none is configured")
    func taskLocalTracer() async throws {
        let tracer = TraceparentTracer()
        try await withServer { server, client in
            try await withTracer(tracer) {
                _ = try await client.get("/get").send()
            }
            #expect(server.requests.last?.header("traceparent") != nil)
            // Outside the scope nothing is traced again.
            _ = try await client.get("/get").send()
            #expect(server.requests.last?.header("traceparent") == nil)
        }
        #expect(tracer.memory.finishedSpans.filter { $0.operationName == "HTTP GET" }.count == 1)
    }
}
