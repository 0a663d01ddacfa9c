import AsyncHTTPClient
import Callsign
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


@main
struct Benchmarks {
    static func main() async throws {
        let rounds = Int(ProcessInfo.processInfo.environment["CALLSIGN_BENCH_ROUNDS"] ?? "") ?? 5
        let scale = Double(ProcessInfo.processInfo.environment["CALLSIGN_BENCH_SCALE"] ?? "") ?? 1
        let body = itemJSON.jsonData()
        if CommandLine.arguments.dropFirst().first == OpenAPIBenchmark.loadArgument {
            Pinning.unpin()
            let arguments = Array(CommandLine.arguments.dropFirst(2))
            // The operation count, the cache folder and the document's file; `-` for none.
            func given(_ index: Int) -> String? { arguments.count > index && arguments[index] != "-" ? arguments[index] : nil }
            try OpenAPIBenchmark.load(operations: Int(arguments.first ?? "") ?? 1_000, file: given(2), cache: given(1))
            return
        }
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
        // Callsign as a user gets it: the default configuration and the default transport (its
        // pool as the library sizes it), beside the raw client tuned for the concurrency.
        let ahcTransport = callsignAHCTransport()
        let callsignAHC = APIClient(definitions: definitions)
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
            Row(name: "Callsign by name, defaults", reference: "raw AsyncHTTPClient", call: callsignAHCCall),
            Row(name: "Callsign + URLSession transport", reference: "raw URLSession", call: callsignSessionCall),
            Row(name: "raw AsyncHTTPClient + decode", reference: nil, call: rawAHCDecode),
            Row(name: "Callsign + decode, defaults", reference: "raw AsyncHTTPClient + decode", call: callsignAHCDecode),
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
                    TransportRequest(head: transportRequest, bodyReading: .collect(limit: 1 << 20), attemptDeadline: .now + .seconds(30)))
            }),
            Row(name: "Callsign start(), on the loops (opt-in)", reference: "raw AsyncHTTPClient", call: {
                _ = try await onLoops.start("Item").response
            }),
        ]
        let loopExecutor = ahcTransport.preferredTaskExecutor.map { [$0] } ?? []
        let tableRows = only == "experiment" ? [rows[0], rows[2]] + experimentRows : rows
        let baseline = Baseline.shared
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
            print("c=\(concurrency), \(requests) requests per round (medians; a ratio and Δ are the median of each round's pair)")
            print("\(pad("", 34)) \(pad("req/s", 9, right: true)) \(pad("CPU µs/req", 11, right: true)) \(pad("ratio req/s", 12, right: true)) \(pad("Δ CPU µs", 9, right: true)) \(pad("allocs/req", 11, right: true)) \(pad("server CPU µs/req", 18, right: true))")
            for row in tableRows {
                let rps = median(samples[row.name, default: []].map(\.requestsPerSecond))
                let cpu = median(samples[row.name, default: []].map(\.cpuPerRequest))
                let serverCPU = median(samples[row.name, default: []].map(\.serverCPUPerRequest))
                let allocations = median(samples[row.name, default: []].map(\.allocationsPerRequest))
                var ratio = ""
                var delta = ""
                var gate = ""
                if let reference = row.reference {
                    // Each round's row against its reference in the same round (seconds apart),
                    // then the median of those: a machine that slows down between rounds moves
                    // both sides of a pair, not one side of a ratio of medians.
                    let pairs = zip(samples[row.name, default: []], samples[reference, default: []])
                    let value = median(pairs.map { $0.requestsPerSecond / $1.requestsPerSecond })
                    let extra = median(pairs.map { $0.cpuPerRequest - $1.cpuPerRequest })
                    ratio = format(value, 2) + "×"
                    delta = (extra >= 0 ? "+" : "") + format(extra, 1)
                    gate = baseline.ratio("c=\(concurrency) \(row.name)", value)
                }
                print("\(pad(row.name, 34)) \(pad(format(rps), 9, right: true)) \(pad(format(cpu, 1), 11, right: true)) \(pad(ratio, 12, right: true)) \(pad(delta, 9, right: true)) \(pad(format(allocations, 1), 11, right: true)) \(pad(format(serverCPU, 1), 18, right: true))\(gate)")
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
        if only == "pool" {
            // How the default pool size was chosen: Callsign's default configuration at c=32 and
            // c=64 over transports with pools of 8 to 128 connections, against raw AHC's 32.
            try await poolSizes(definitions: definitions, rawAHC: rawAHCCall, server: server, rounds: rounds, scale: scale)
        }
        if only == nil || only == "pipeline" {
            try await pipeline(definitions: definitions, body: body, scale: scale, rounds: rounds)
        }
        if only == nil || only == "tls" {
            try await TLSBenchmark.run(body: body, scale: scale, rounds: rounds)
        }
        if only == "fleet" {
            // Not in the default run: it starts a PostgreSQL cluster (installed if missing).
            try await FleetBenchmark.run(server: server, scale: scale)
        }
        if only == nil || only == "openapi" {
            try OpenAPIBenchmark.run(rounds: rounds)
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
            _ = try await callsignAHC.download(.get(server.url("/bytes/\(size)").absoluteString), to: callsignFile)
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
        if downloads {
            print("\(size / 1_048_576) MiB download to a file: raw AHC \(format(median(rawRates))) MiB/s (peak RSS +\(format(rawPeak, 1)) MiB), "
            + "Callsign \(format(median(callsignRates))) MiB/s (peak RSS +\(format(callsignPeak, 1)) MiB), ratio \(format(median(callsignRates) / median(rawRates), 2))×")
            // Memory over time, for the chart: one more download each, sampled every 5 ms, outside
            // the measured rounds (the sampler shares the client's core), after the line above.
            let rawSamples = try await Measure.sampledRSS { try await measureRaw() }
            let callsignSamples = try await Measure.sampledRSS { try await measureCallsign() }
            Measure.printRSSSamples("raw AHC, \(size / 1_048_576) MiB download to a file", rawSamples)
            Measure.printRSSSamples("Callsign, \(size / 1_048_576) MiB download to a file", callsignSamples)
        }
        try? FileManager.default.removeItem(at: rawFile)
        try? FileManager.default.removeItem(at: callsignFile)

        if only == nil || only == "upload" {
            try await UploadBenchmark.run(
                server: server, clients: [("Callsign on AsyncHTTPClient", callsignAHC), ("Callsign on URLSession", callsignSession)],
                session: session, scale: scale)
        }

        if only == nil || only == "persistence" {
            try await persistence(server: server, rawAHC: rawAHC, scale: scale)
        }

        try await sessionTransport.shutdown()
        session.invalidateAndCancel()
        Baseline.shared.finish()
    }

    /// Throughput of Callsign's default configuration with pools of several sizes, interleaved.
    static func poolSizes(
        definitions: APIDefinitions, rawAHC: @escaping @Sendable () async throws -> Void, server: ServerProcess, rounds: Int, scale: Double
    ) async throws {
        let sizes = [8, 16, 32, 64, 128]
        let clients = sizes.map { size in
            (size, APIClient(definitions: definitions, transport: callsignAHCTransport(maximumConnectionsPerHost: size)))
        }
        for concurrency in [32, 64] {
            let requests = Int(20_000 * scale)
            var rates: [String: [Double]] = [:]
            for round in 0...rounds {
                let raw = try await Measure.run(requests: requests, concurrency: concurrency, server: server, rawAHC)
                if round > 0 { rates["raw AHC (pool 32)", default: []].append(raw.requestsPerSecond) }
                for (size, client) in clients {
                    let sample = try await Measure.run(requests: requests, concurrency: concurrency, server: server) { _ = try await client.call("Item") }
                    if round > 0 { rates["Callsign, pool \(size)", default: []].append(sample.requestsPerSecond) }
                }
            }
            let reference = median(rates["raw AHC (pool 32)"] ?? [])
            print("")
            print("c=\(concurrency): default configuration by pool size (medians of \(rounds) rounds)")
            print("  raw AHC (pool 32)      \(pad(format(reference), 7, right: true)) req/s")
            for (size, _) in clients {
                let rate = median(rates["Callsign, pool \(size)"] ?? [])
                print("  Callsign, pool \(pad("\(size)", 4))    \(pad(format(rate), 7, right: true)) req/s  \(format(rate / reference, 2))×")
            }
        }
        for (_, client) in clients { try await client.transport.shutdown() }
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

/// Callsign's AsyncHTTPClient transport, which Callsign builds on Linux (the platform these
/// benchmarks are run on); elsewhere its URLSession transport, so that the benchmarks still build.
func callsignAHCTransport(maximumConnectionsPerHost: Int? = nil) -> any Transport {
    #if os(Linux) || os(Android) || os(Windows)
    guard let maximumConnectionsPerHost else { return AsyncHTTPClientTransport.shared }
    return AsyncHTTPClientTransport(maximumConnectionsPerHost: maximumConnectionsPerHost)
    #else
    return URLSessionTransport()
    #endif
}
