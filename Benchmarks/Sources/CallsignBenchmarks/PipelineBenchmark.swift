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
