import AsyncHTTPClient
import Callsign
import CallsignSQLite
import CallsignTesting
import Foundation
import HTTPTypes
import InMemoryTracing
import Logging
import Metrics
import NIOCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A metrics backend that drops everything: what Callsign itself spends on metrics.
struct DroppingMetrics: MetricsFactory {
    final class Handler: CounterHandler, FloatingPointCounterHandler, RecorderHandler, TimerHandler, MeterHandler, Sendable {
        func increment(by: Int64) {}
        func increment(by: Double) {}
        func reset() {}
        func record(_ value: Int64) {}
        func record(_ value: Double) {}
        func recordNanoseconds(_ duration: Int64) {}
        func set(_ value: Int64) {}
        func set(_ value: Double) {}
        func increment(by: Double) async {}
        func decrement(by: Double) {}
    }
    let handler = Handler()
    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { handler }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler { handler }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler { handler }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { handler }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { handler }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}

/// A middleware that only passes the call on: what a stage's place in the chain costs.
struct PassOn: Middleware {
    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        try await next(request)
    }
}

/// A transport that answers at once from memory: what is left is Callsign's own CPU per call.
struct InstantTransport: Transport {
    let head: HTTPResponse
    let body: Data

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        TransportResponse(head: head, body: ResponseBodyStream(data: body))
    }

    /// It answers at once: no deadline can pass.
    var enforcesAttemptDeadlines: Bool { true }
}

extension Benchmarks {
    /// Callsign's own CPU per call: the full default pipeline (definition by name, validation)
    /// over a transport that answers at once, one call at a time. No I/O, no thread hops — the
    /// number the "Δ CPU" columns above are made of, without the network's noise. Then what each
    /// optional stage adds when it is configured (and that it adds nothing when it is not).
    static func pipeline(definitions: APIDefinitions, body: Data, scale: Double, rounds: Int) async throws {
        let head = HTTPResponse(status: .ok, headerFields: [.contentType: "application/json", .contentLength: String(body.count)])
        let transport = InstantTransport(head: head, body: body)
        let client = APIClient(definitions: definitions, transport: transport)
        let decoder = JSONDecoder()
        let calls = Int(20_000 * scale)
        if ProcessInfo.processInfo.environment["CALLSIGN_BENCH_ROW"] == "pipeline call" {
            // For `perf stat`: plain calls only, nothing else in the process's run.
            let sample = try await Measure.run(requests: calls, concurrency: 1) { _ = try await client.call("Item") }
            print("pipeline call: \(format(sample.cpuPerRequest, 2)) CPU µs per call over \(calls) calls")
            return
        }
        var plain: [Sample] = []
        var decoding: [Sample] = []
        var decodeOnly: [Sample] = []
        for round in 0...rounds {
            let a = try await Measure.run(requests: calls, concurrency: 1) { _ = try await client.call("Item") }
            let b = try await Measure.run(requests: calls, concurrency: 1) { _ = try await client.call("Item", as: Item.self) }
            let c = try await Measure.run(requests: calls, concurrency: 1) { _ = try decoder.decode(Item.self, from: body) }
            guard round > 0 else { continue }  // the first round warms up
            plain.append(a)
            decoding.append(b)
            decodeOnly.append(c)
        }
        let baseline = Baseline.shared
        let callCPU = median(plain.map(\.cpuPerRequest))
        let callAllocations = median(plain.map(\.allocationsPerRequest))
        print("")
        print("Callsign's own CPU per call (instant in-memory transport, \(calls) calls per round, medians): "
            + "call \(format(callCPU, 1)) µs\(baseline.cost("own CPU per call µs", callCPU)), "
            + "\(format(callAllocations, 1)) allocations\(baseline.cost("allocations per call", callAllocations)); "
            + "call + decode \(format(median(decoding.map(\.cpuPerRequest)), 1)) µs "
            + "(JSONDecoder alone \(format(median(decodeOnly.map(\.cpuPerRequest)), 1)) µs, \(format(median(decodeOnly.map(\.allocationsPerRequest)), 1)) allocations)")
        try await stageCosts(transport: transport, calls: calls / 2, rounds: rounds)
    }

    /// What each optional stage costs per call when it is configured, against the same client
    /// without it — and, in the first row, that an unconfigured stage costs nothing: a client
    /// with every optional stage off runs the same chain as the default one.
    static func stageCosts(transport: InstantTransport, calls: Int, rounds: Int) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-bench-stages-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let silent = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
        let quietLogger = {
            var logger = Logger(label: "bench.quiet")
            logger.logLevel = .info  // configured, but above the levels Callsign logs at
            return logger
        }()
        typealias Variant = (name: String, configure: @Sendable (inout APIClient.Configuration) -> Void, storePolicy: StorePolicy?)
        let variants: [Variant] = [
            ("every optional stage off (the default)", { _ in }, nil),
            ("+ deadline (60 s, never reached)", { $0.timeouts.deadline = .seconds(60) }, nil),
            ("+ cookies (a CookieJar)", { $0.cookies = CookieJar() }, nil),
            ("+ HTTP cache (memory; answers not storable)", { $0.cache = .memory(byteBudget: 1 << 20) }, nil),
            ("+ authentication (bearer)", { $0.authentication = .bearer("token") }, nil),
            ("+ offline queue (storePolicy .offline)", { _ in }, .offline),
            ("+ logger (level info: nothing logged)", { $0.observability.logger = quietLogger }, nil),
            ("+ logger (debug lines to a no-op handler)", {
                var logger = silent
                logger.logLevel = .debug
                $0.observability.logger = logger
            }, nil),
            ("+ metrics (a backend that drops them)", { $0.observability.metricsFactory = DroppingMetrics() }, nil),
            ("+ tracing (InMemoryTracer)", { $0.observability.tracer = InMemoryTracer() }, nil),
            ("+ rate limit (per origin, never reached)", { $0.rateLimits = RateLimits(perOrigin: .perSecond(1_000_000)) }, nil),
            ("+ circuit breaker (per origin, closed)", { $0.circuitBreaker = CircuitBreaker() }, nil),
            ("+ hedging (after 1 s: the answer comes first)", { $0.hedging = .after(.seconds(1)) }, nil),
            ("+ 4 middlewares of yours that pass the call on", { $0.middlewares = Array(repeating: PassOn(), count: 4) }, nil),
            ("+ HAR recording (a file per exchange)", { [folder] in $0.observability.recorder = HARRecorder(fileURL: folder.appendingPathComponent("bench.har")) }, nil),
        ]
        // The benchmark's definition, marked as needing authorization (the authentication row).
        let authorized = try APIDefinitions(values: [
            "DEFAULT": ["baseURL": "http://127.0.0.1:9/"],
            "Item": ["path": "bench/item", "responseType": "object", "needsAuthorization": true],
        ])
        // CALLSIGN_BENCH_STAGE (a row's start, such as "+ HTTP cache") runs that row and the
        // first alone, for `perf record`.
        let picked = ProcessInfo.processInfo.environment["CALLSIGN_BENCH_STAGE"]
        let measured = picked.map { name in variants.filter { $0.name == variants[0].name || $0.name.hasPrefix(name) } } ?? variants
        var costs: [String: [Double]] = [:]
        var allocations: [String: [Double]] = [:]
        for round in 0...rounds {
            for variant in measured {
                let client = APIClient(definitions: authorized, configuration: .init(variant.configure), transport: transport)
                var request = try authorized.definition(named: "Item").request()
                request.storePolicy = variant.storePolicy
                let call = request
                let sample = try await Measure.run(requests: calls, concurrency: 1) { _ = try await client.send(call).validate() }
                guard round > 0 else { continue }
                costs[variant.name, default: []].append(sample.cpuPerRequest)
                allocations[variant.name, default: []].append(sample.allocationsPerRequest)
            }
        }
        let base = median(costs[variants[0].name] ?? [])
        print("")
        print("What each stage costs when configured (instant transport, \(calls) calls per round, medians; an unconfigured stage is not in the chain):")
        for variant in measured {
            let cost = median(costs[variant.name] ?? [])
            let delta = variant.name == variants[0].name ? "" : " (\(cost - base >= 0 ? "+" : "")\(format(cost - base, 1)) µs)"
            print("  \(pad(variant.name, 46)) \(pad(format(cost, 1), 6, right: true)) µs\(delta), \(format(median(allocations[variant.name] ?? []), 1)) allocations")
        }
    }

    /// A fresh cache hit against a network round trip, and durable offline enqueues per second.
    static func persistence(server: ServerProcess, rawAHC: HTTPClient, scale: Double) async throws {
        let cachedURL = server.url("/bench/cached").absoluteString
        let calls = Int(3000 * scale)
        func microsecondsPerCall(_ count: Int, _ call: () async throws -> Void) async throws -> Double {
            let start = ContinuousClock.now
            for _ in 0..<count { try await call() }
            return (ContinuousClock.now - start).secondsValue / Double(count) * 1e6
        }
        let network = try await microsecondsPerCall(calls) {
            let response = try await rawAHC.execute(HTTPClientRequest(url: cachedURL), timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 20)
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var rows: [(String, Double)] = []
        for (name, storage) in [("memory", MemoryCacheStorage() as any HTTPCacheStorage), ("SQLite", SQLiteCacheStorage(directory: folder))] {
            let client = APIClient(configuration: .init { $0.cache = HTTPCache(storage: storage) })
            _ = try await client.send(.get(cachedURL))
            let perCall = try await microsecondsPerCall(calls) {
                let response = try await client.send(.get(cachedURL))
                guard response.source == .cache else { throw URLError(.badServerResponse) }
            }
            rows.append((name, perCall))
        }
        print("")
        print("cache fresh hit, \(calls) sequential calls: " + rows.map { "\($0.0) \(format($0.1, 1)) µs/call" }.joined(separator: ", ")
            + "; a network round trip with raw AHC: \(format(network, 1)) µs")

        let queue = SQLiteOfflineQueue(url: folder.appendingPathComponent("queue.sqlite"))
        let entry = QueuedRequest(method: "POST", url: "http://127.0.0.1:1/notes", headers: ["Content-Type": "application/json"], body: Data(#"{"text":"hello"}"#.utf8))
        _ = try await queue.enqueue(entry)
        let enqueues = Int(300 * scale)
        let durable = try await microsecondsPerCall(enqueues) { _ = try await queue.enqueue(entry) }
        let stopped = try await TestServer.start()
        await stopped.stop()
        let offline = APIClient(configuration: .init {
            $0.offline.queue = SQLiteOfflineQueue(url: folder.appendingPathComponent("calls.sqlite"))
            $0.retry = .none
        })
        let endToEnd = try await microsecondsPerCall(enqueues) {
            do {
                _ = try await offline.send(.post(stopped.url("/notes").absoluteString, parameters: ["text": "hello"]).with { $0.storePolicy = .offline })
            } catch let error as APIError where error.code == .queuedOffline {}
        }
        print("offline enqueue (SQLite, synchronous=FULL): \(format(1e6 / durable)) durable enqueues/s; "
            + "a call to a stopped server queued end to end: \(format(1e6 / endToEnd)) calls/s")
    }
}
