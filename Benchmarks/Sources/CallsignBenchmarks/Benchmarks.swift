import AsyncHTTPClient
import Callsign
import CallsignOpenAPI
import CallsignSQLite
import CallsignTesting
import Foundation
import HTTPTypes
import NIOCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Callsign side by side with raw AsyncHTTPClient and raw URLSession, against the in-process test
// server on 127.0.0.1, interleaved in one run. The server shares the process, so CPU figures
// include its work — equally for every row; compare ratios, not absolute numbers.

/// The ~1 KB object every request returns.
struct Item: Decodable, Sendable {
    struct Owner: Decodable, Sendable { let id: Int; let name: String; let email: String }
    let id: Int
    let title: String
    let summary: String
    let tags: [String]
    let owner: Owner
    let scores: [Double]
    let createdAt: String
    let active: Bool
}

let itemJSON: JSONValue = [
    "id": 42, "title": "Balsa Fish longboard, 9 foot 2",
    "summary": .string(String(repeating: "A classic single-fin longboard for small, clean waves. ", count: 8)),
    "tags": ["longboard", "single-fin", "balsa", "classic", "noserider", "glassed", "vintage"],
    "owner": ["id": 7, "name": "Ann Surfer", "email": "ann@example.com"],
    "scores": [9.5, 8.75, 9.0, 7.25, 8.5, 9.25, 6.75, 8.0], "createdAt": "2026-11-22T10:00:00Z", "active": true,
]

struct Sample {
    var seconds: Double
    var cpuMicroseconds: Double
    var serverCPUMicroseconds: Double
    var requests: Int
    var requestsPerSecond: Double { Double(requests) / seconds }
    var cpuPerRequest: Double { cpuMicroseconds / Double(requests) }
    var serverCPUPerRequest: Double { serverCPUMicroseconds / Double(requests) }
}

enum Measure {
    static func cpuMicroseconds() -> Double {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    }

    /// Peak resident set size in MiB since the last reset (Linux: VmHWM).
    static func peakRSS() -> Double { statusValue("VmHWM") / 1024 }
    static func currentRSS() -> Double { statusValue("VmRSS") / 1024 }

    /// Resets the peak to the current RSS (Linux ≥ 4.0).
    static func resetPeak() { try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8) }

    private static func statusValue(_ key: String) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }

    /// Runs `requests` calls with `concurrency` workers and returns time and CPU (this process's,
    /// and the server process's when there is one). With `executors`, each worker task prefers
    /// one of them (round robin) instead of the default global executor.
    static func run(
        requests: Int, concurrency: Int, server: ServerProcess? = nil, executors: [any TaskExecutor] = [],
        _ call: @escaping @Sendable () async throws -> Void
    ) async throws -> Sample {
        let cpu = cpuMicroseconds()
        let serverCPU = server?.cpuMicroseconds() ?? 0
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                let share = requests / concurrency + (worker < requests % concurrency ? 1 : 0)
                if executors.isEmpty {
                    // Not `addTask(executorPreference: nil)`: that marks the task as having a
                    // preference, and every executor switch in it then takes a lock to look it up.
                    group.addTask { for _ in 0..<share { try await call() } }
                } else {
                    group.addTask(executorPreference: executors[worker % executors.count]) { for _ in 0..<share { try await call() } }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = clock.now - start
        return Sample(
            seconds: elapsed.secondsValue, cpuMicroseconds: cpuMicroseconds() - cpu,
            serverCPUMicroseconds: (server?.cpuMicroseconds() ?? 0) - serverCPU, requests: requests)
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func format(_ value: Double, _ digits: Int = 0) -> String { String(format: "%.\(digits)f", value) }

func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let padding = String(repeating: " ", count: max(0, width - text.count))
    return right ? padding + text : text + padding
}

@main
struct Benchmarks {
    static func main() async throws {
        let rounds = Int(ProcessInfo.processInfo.environment["CALLSIGN_BENCH_ROUNDS"] ?? "") ?? 5
        let scale = Double(ProcessInfo.processInfo.environment["CALLSIGN_BENCH_SCALE"] ?? "") ?? 1
        let body = itemJSON.jsonData()
        if CommandLine.arguments.dropFirst().first == ServerProcess.serveArgument {
            Pinning.pinAndRestart(toCPU: Pinning.serverCPU)
            try await ServerProcess.serve(body: body)
            return
        }
        Pinning.pinAndRestart(toCPU: Pinning.clientCPU)
        let server = try ServerProcess.launch()
        print("Callsign \(APIClient.version) benchmarks — \(ProcessInfo.processInfo.processorCount) cores (\(Pinning.description)), "
            + "server on \(server.baseURL.absoluteString) (pid \(server.pid), a child process), body \(body.count) bytes, \(rounds) interleaved rounds")

        var ahcConfiguration = HTTPClient.Configuration()
        ahcConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 32
        ahcConfiguration.redirectConfiguration = .disallow
        let rawAHC = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: ahcConfiguration)
        do {
            try await run(server: server, rawAHC: rawAHC, rounds: rounds, scale: scale, body: body)
        } catch {
            print("benchmark failed: \(error)")
        }
        try await rawAHC.shutdown()
        server.stop()
    }

    static func run(server: ServerProcess, rawAHC: HTTPClient, rounds: Int, scale: Double, body: Data) async throws {
        let session = URLSession(configuration: .ephemeral)
        let itemURL = server.url("/bench/item")
        let decoder = JSONDecoder()

        let definitions = try APIDefinitions(values: ["DEFAULT": ["baseURL": .string(server.baseURL.absoluteString)], "Item": ["path": "bench/item", "responseType": "object"]])
        // Its pool sized to the concurrency, like the raw client's.
        let ahcTransport = AsyncHTTPClientTransport(maximumConnectionsPerHost: 32)
        let callsignAHC = APIClient(definitions: definitions, configuration: .init { $0.baseURL = server.baseURL }, transport: ahcTransport)
        let sessionTransport = URLSessionTransport()
        let callsignSession = APIClient(definitions: definitions, transport: sessionTransport)

        typealias Call = @Sendable () async throws -> Void
        let rawAHCCall: Call = {
            let response = try await rawAHC.execute(HTTPClientRequest(url: itemURL.absoluteString), timeout: .seconds(30))
            guard response.status == .ok else { throw URLError(.badServerResponse) }
            _ = try await response.body.collect(upTo: 1 << 20)
        }
        let rawAHCDecode: Call = {
            let response = try await rawAHC.execute(HTTPClientRequest(url: itemURL.absoluteString), timeout: .seconds(30))
            let buffer = try await response.body.collect(upTo: 1 << 20)
            _ = try decoder.decode(Item.self, from: Data(buffer.readableBytesView))
        }
        let rawSession: Call = {
            let (_, response) = try await session.data(from: itemURL)
            guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw URLError(.badServerResponse) }
        }
        let callsignAHCCall: Call = { _ = try await callsignAHC.call("Item") }
        let callsignAHCDecode: Call = { _ = try await callsignAHC.call("Item", as: Item.self) }
        let callsignSessionCall: Call = { _ = try await callsignSession.call("Item") }

        // A client whose own tasks run on the event loops (the opt-in), to show what that gives.
        let onLoops = APIClient(definitions: definitions, configuration: .init { $0.tasks.usesTransportExecutor = true }, transport: ahcTransport)

        struct Row {
            let name: String
            let reference: String?
            /// Worker tasks prefer the AHC transport's event loops (`preferredTaskExecutor`).
            var onLoops = false
            let call: Call
        }
        let rows = [
            Row(name: "raw AsyncHTTPClient", reference: nil, call: rawAHCCall),
            Row(name: "raw URLSession", reference: nil, call: rawSession),
            Row(name: "Callsign + AHC transport", reference: "raw AsyncHTTPClient", call: callsignAHCCall),
            Row(name: "Callsign + URLSession transport", reference: "raw URLSession", call: callsignSessionCall),
            Row(name: "raw AsyncHTTPClient + decode", reference: nil, call: rawAHCDecode),
            Row(name: "Callsign + AHC + decode", reference: "raw AsyncHTTPClient + decode", call: callsignAHCDecode),
            // Beyond parity: the calling tasks on the transport's event loops, against raw AHC
            // used the straightforward way (tasks on the default executor).
            Row(name: "raw AHC, tasks on its loops", reference: "raw AsyncHTTPClient", onLoops: true, call: rawAHCCall),
            Row(name: "Callsign + AHC, tasks on its loops", reference: "raw AsyncHTTPClient", onLoops: true, call: callsignAHCCall),
            Row(name: "Callsign + AHC + decode, on loops", reference: "raw AsyncHTTPClient + decode", onLoops: true, call: callsignAHCDecode),
            Row(name: "Callsign start(), its own task", reference: "raw AsyncHTTPClient", call: {
                _ = try await callsignAHC.start("Item").response
            }),
        ]

        let only = ProcessInfo.processInfo.environment["CALLSIGN_BENCH_ONLY"]
        // Diagnostics: AsyncHTTPClient's delegate API (what Callsign's transport uses), with and
        // without Callsign's two default headers; Callsign without those headers; Callsign's AHC
        // transport called directly; `start()` with the client's tasks off the event loops.
        let bare = APIClient(definitions: definitions, configuration: .init { $0.headers = [:]; $0.responses.decompression = .disabled }, transport: ahcTransport)
        let legacyURL = itemURL.absoluteString
        let delegateCall = { @Sendable (headers: [(String, String)]) async throws in
            var building = try HTTPClient.Request(url: legacyURL)
            for (name, value) in headers { building.headers.add(name: name, value: value) }
            let request = building
            let response = try await rawAHC.execute(
                request: request, delegate: ResponseAccumulator(request: request), deadline: .now() + .seconds(30)
            ).futureResult.get()
            guard response.status == .ok else { throw URLError(.badServerResponse) }
        }
        let transportRequest = HTTPRequest(
            method: .get, scheme: "http", authority: itemURL.host.map { "\($0):\(itemURL.port ?? 80)" }, path: itemURL.path)
        let experimentRows = [
            Row(name: "raw AHC delegate API", reference: "raw AsyncHTTPClient", call: { try await delegateCall([]) }),
            Row(name: "raw AHC delegate API + 2 headers", reference: "raw AsyncHTTPClient", call: {
                try await delegateCall([("User-Agent", "Callsign/\(APIClient.version)"), ("Accept-Encoding", "gzip, deflate")])
            }),
            Row(name: "Callsign, no extra headers", reference: "raw AsyncHTTPClient", call: { _ = try await bare.call("Item") }),
            Row(name: "Callsign's AHC transport alone", reference: "raw AsyncHTTPClient", call: {
                _ = try await ahcTransport.send(
                    TransportRequest(head: transportRequest, bodyReading: .collect(limit: 1 << 20), deadline: .now + .seconds(30)))
            }),
            Row(name: "Callsign start(), on the loops (opt-in)", reference: "raw AsyncHTTPClient", call: {
                _ = try await onLoops.start("Item").response
            }),
        ]
        let loopExecutor = ahcTransport.preferredTaskExecutor.map { [$0] } ?? []
        let tableRows = only == "experiment" ? [rows[0], rows[2]] + experimentRows : rows
        for concurrency in [1, 32] where only == nil || only == "requests" || only == "experiment" {
            // Rounds of a second or more: shorter ones moved the c=32 ratios by ±0.1.
            let requests = Int(Double(concurrency == 1 ? 3000 : 20_000) * scale)
            // Warm-up: connections, caches, lazy initialisation.
            func measure(_ row: Row, requests: Int) async throws -> Sample {
                try await Measure.run(requests: requests, concurrency: concurrency, server: server, executors: row.onLoops ? loopExecutor : [], row.call)
            }
            for row in tableRows { _ = try await measure(row, requests: max(100, requests / 10)) }
            var samples: [String: [Sample]] = [:]
            for _ in 0..<rounds {
                for row in tableRows { samples[row.name, default: []].append(try await measure(row, requests: requests)) }
            }
            print("")
            print("c=\(concurrency), \(requests) requests per round (medians)")
            print("\(pad("", 34)) \(pad("req/s", 9, right: true)) \(pad("CPU µs/req", 11, right: true)) \(pad("ratio req/s", 12, right: true)) \(pad("Δ CPU µs", 9, right: true)) \(pad("server CPU µs/req", 18, right: true))")
            for row in tableRows {
                let rps = median(samples[row.name, default: []].map(\.requestsPerSecond))
                let cpu = median(samples[row.name, default: []].map(\.cpuPerRequest))
                let serverCPU = median(samples[row.name, default: []].map(\.serverCPUPerRequest))
                var ratio = ""
                var delta = ""
                if let reference = row.reference {
                    ratio = format(rps / median(samples[reference, default: []].map(\.requestsPerSecond)), 2) + "×"
                    delta = (cpu - median(samples[reference, default: []].map(\.cpuPerRequest)) >= 0 ? "+" : "") + format(cpu - median(samples[reference, default: []].map(\.cpuPerRequest)), 1)
                }
                print("\(pad(row.name, 34)) \(pad(format(rps), 9, right: true)) \(pad(format(cpu, 1), 11, right: true)) \(pad(ratio, 12, right: true)) \(pad(delta, 9, right: true)) \(pad(format(serverCPU, 1), 18, right: true))")
            }
        }

        if only == "profile" {
            // For `perf record`: one row (CALLSIGN_BENCH_ROW, by name; default Callsign on the AHC
            // transport), one call at a time (CALLSIGN_BENCH_CONCURRENCY for more).
            let concurrency = Int(ProcessInfo.processInfo.environment["CALLSIGN_BENCH_CONCURRENCY"] ?? "") ?? 1
            let wanted = ProcessInfo.processInfo.environment["CALLSIGN_BENCH_ROW"] ?? "Callsign + AHC transport"
            if let picked = (rows + experimentRows).first(where: { $0.name == wanted })?.call {
                let sample = try await Measure.run(requests: Int(20_000 * scale) * max(1, concurrency / 4), concurrency: concurrency, picked)
                print("profile: \(format(sample.requestsPerSecond)) req/s, \(format(sample.cpuPerRequest, 1)) CPU µs/req")
            } else {
                print("no row named \"\(wanted)\"; rows: " + (rows + experimentRows).map(\.name).joined(separator: ", "))
            }
        }
        if only == nil || only == "pipeline" {
            try await pipeline(definitions: definitions, body: body, scale: scale, rounds: rounds)
        }
        if only == nil || only == "tls" {
            try await TLSBenchmark.run(body: body, scale: scale, rounds: rounds)
        }
        if only == nil || only == "openapi" {
            // An OpenAPI document of 1,000 operations whose responses go through $ref chains 20 deep.
            let document = OpenAPIFixtures.large(operations: 1_000, depth: 20)
            var seconds: [Double] = []
            for _ in 0..<rounds {
                let clock = ContinuousClock()
                let start = clock.now
                let operations = try OpenAPIOperations(data: document, format: .yaml)
                seconds.append((clock.now - start).secondsValue)
                precondition(operations.operations.count == 1_000)
            }
            print("")
            print("OpenAPI: \(document.count / 1024) KiB YAML, 1,000 operations, $ref chains 20 deep: loaded in \(format(median(seconds) * 1000, 0)) ms (median of \(rounds))")
        }
        if only == "queued-mock" {
            let mocked = APIClient(
                definitions: definitions,
                configuration: .init {
                    $0.tasks.concurrency = .limited(32)
                    $0.mocks = Mocks(realRequests: false) { _ in .json(["id": 1]) }
                })
            Measure.resetPeak()
            let before = Measure.currentRSS()
            let viaSend = ProcessInfo.processInfo.environment["CALLSIGN_BENCH_SEND"] != nil
            let sample = try await Measure.run(requests: 10_000, concurrency: 10_000) {
                if viaSend { _ = try await mocked.send(.get(itemURL.absoluteString)) } else { _ = try await mocked.call("Item") }
            }
            print("10,000 mocked calls queued under .limited(32): \(format(sample.seconds, 2)) s, peak RSS +\(format(Measure.peakRSS() - before, 1)) MiB")
        }
        if only == "sizes" {
            print("Request \(MemoryLayout<Request>.size) B, Response \(MemoryLayout<Response>.size) B, APIError \(MemoryLayout<APIError>.size) B, APIDefinition \(MemoryLayout<APIDefinition>.size) B, Configuration \(MemoryLayout<APIClient.Configuration>.size) B")
        }
        if only == "baseline" {
            // What 10,000 suspended tasks cost by themselves, for comparison with the queued row.
            Measure.resetPeak()
            let before = Measure.currentRSS()
            let (gate, open) = AsyncStream<Void>.makeStream()
            let waiting = Task {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<10_000 { group.addTask { for await _ in gate { return } } }
                }
            }
            try await Task.sleep(for: .seconds(1))
            print("10,000 suspended tasks: peak RSS +\(format(Measure.peakRSS() - before, 1)) MiB")
            open.finish()
            await waiting.value
        }

        // 10,000 calls queued under .limited(32).
        print("")
        if only == nil || only == "queued" {
        let queued = APIClient(definitions: definitions, configuration: .init { $0.tasks.concurrency = .limited(32) }, transport: ahcTransport)
        Measure.resetPeak()
        let before = Measure.currentRSS()
        let queuedSample = try await Measure.run(requests: 10_000, concurrency: 10_000) { _ = try await queued.call("Item") }
        print("10,000 calls queued under .limited(32): \(format(queuedSample.seconds, 2)) s, peak RSS \(format(Measure.peakRSS(), 1)) MiB (+\(format(Measure.peakRSS() - before, 1)) MiB over \(format(before, 1)) MiB)")
        }

        // A 100 MiB download streamed to a file.
        let size = Int(100 * 1024 * 1024 * min(scale, 1))
        let folder = FileManager.default.temporaryDirectory
        let rawFile = folder.appendingPathComponent("callsign-bench-raw.bin")
        let callsignFile = folder.appendingPathComponent("callsign-bench-callsign.bin")
        var rawRates: [Double] = []
        var callsignRates: [Double] = []
        var rawPeak = 0.0
        var callsignPeak = 0.0
        // Each side writes a fresh file (no old blocks to free or invalidate on its time), and the
        // two alternate who goes first, so the page cache's state favours neither.
        func measureRaw() async throws {
            try? FileManager.default.removeItem(at: rawFile)
            Measure.resetPeak()
            let start = Measure.currentRSS()
            let clock = ContinuousClock.now
            let response = try await rawAHC.execute(HTTPClientRequest(url: server.url("/bytes/\(size)").absoluteString), timeout: .seconds(600))
            _ = FileManager.default.createFile(atPath: rawFile.path, contents: nil)
            let handle = try FileHandle(forWritingTo: rawFile)
            for try await buffer in response.body { try handle.write(contentsOf: Data(buffer.readableBytesView)) }
            try handle.close()
            rawRates.append(Double(size) / 1_048_576 / (ContinuousClock.now - clock).secondsValue)
            rawPeak = max(rawPeak, Measure.peakRSS() - start)
        }
        func measureCallsign() async throws {
            try? FileManager.default.removeItem(at: callsignFile)
            Measure.resetPeak()
            let start = Measure.currentRSS()
            let clock = ContinuousClock.now
            _ = try await callsignAHC.download(.get("bytes/\(size)"), to: callsignFile)
            callsignRates.append(Double(size) / 1_048_576 / (ContinuousClock.now - clock).secondsValue)
            callsignPeak = max(callsignPeak, Measure.peakRSS() - start)
        }
        // A download takes well under a second here: ten each, for medians that hold still.
        let downloads = only == nil || only == "download"
        for round in 0..<(downloads ? max(10, rounds * 2) : 0) {
            if round.isMultiple(of: 2) {
                try await measureRaw()
                try await measureCallsign()
            } else {
                try await measureCallsign()
                try await measureRaw()
            }
        }
        try? FileManager.default.removeItem(at: rawFile)
        try? FileManager.default.removeItem(at: callsignFile)
        if downloads {
            print("\(size / 1_048_576) MiB download to a file: raw AHC \(format(median(rawRates))) MiB/s (peak RSS +\(format(rawPeak, 1)) MiB), "
            + "Callsign \(format(median(callsignRates))) MiB/s (peak RSS +\(format(callsignPeak, 1)) MiB), ratio \(format(median(callsignRates) / median(rawRates), 2))×")
        }

        if only == nil || only == "persistence" {
            try await persistence(server: server, rawAHC: rawAHC, scale: scale)
        }

        try await ahcTransport.shutdown()
        try await sessionTransport.shutdown()
        session.invalidateAndCancel()
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
    var enforcesDeadlines: Bool { true }
}

extension Benchmarks {
    /// Callsign's own CPU per call: the full default pipeline (definition by name, validation)
    /// over a transport that answers at once, one call at a time. No I/O, no thread hops — the
    /// number the "Δ CPU" columns above are made of, without the network's noise.
    static func pipeline(definitions: APIDefinitions, body: Data, scale: Double, rounds: Int) async throws {
        let head = HTTPResponse(status: .ok, headerFields: [.contentType: "application/json", .contentLength: String(body.count)])
        let client = APIClient(definitions: definitions, transport: InstantTransport(head: head, body: body))
        let decoder = JSONDecoder()
        let calls = Int(20_000 * scale)
        if ProcessInfo.processInfo.environment["CALLSIGN_BENCH_ROW"] == "pipeline call" {
            // For `perf stat`: plain calls only, nothing else in the process's run.
            let sample = try await Measure.run(requests: calls, concurrency: 1) { _ = try await client.call("Item") }
            print("pipeline call: \(format(sample.cpuPerRequest, 2)) CPU µs per call over \(calls) calls")
            return
        }
        var plain: [Double] = []
        var decoding: [Double] = []
        var decodeOnly: [Double] = []
        for round in 0...rounds {
            let a = try await Measure.run(requests: calls, concurrency: 1) { _ = try await client.call("Item") }
            let b = try await Measure.run(requests: calls, concurrency: 1) { _ = try await client.call("Item", as: Item.self) }
            let c = try await Measure.run(requests: calls, concurrency: 1) { _ = try decoder.decode(Item.self, from: body) }
            guard round > 0 else { continue }  // the first round warms up
            plain.append(a.cpuPerRequest)
            decoding.append(b.cpuPerRequest)
            decodeOnly.append(c.cpuPerRequest)
        }
        print("")
        print("Callsign's own CPU per call (instant in-memory transport, \(calls) calls per round, medians): "
            + "call \(format(median(plain), 1)) µs, call + decode \(format(median(decoding), 1)) µs "
            + "(JSONDecoder alone \(format(median(decodeOnly), 1)) µs)")
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

extension Request {
    func with(_ change: (inout Request) -> Void) -> Request {
        var copy = self
        change(&copy)
        return copy
    }
}

extension Duration {
    var secondsValue: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
