import Callsign
import CallsignTesting
import Foundation
import MetricsTestKit
import Synchronization
import Testing
import Tracing

@testable import Callsign
@testable import callsign

/// Whether URLSession hands over task metrics on this platform: Apple's does, Linux's
/// FoundationNetworking collects none.
private let urlSessionDeliversMetrics: Bool = {
    #if canImport(FoundationNetworking)
    false
    #else
    true
    #endif
}()

/// Every exchange's timings, as an observer hears them.
private final class TimingsRecorder: CallObserver {
    let measured = Mutex<[PhaseTimings]>([])
    func callDidMeasure(_ call: ObservedCall, timings: PhaseTimings) { measured.withLock { $0.append(timings) } }
}

@Suite("Phase timings: what each transport measures, and where it goes (observers, metrics, spans, HAR, -w)", .hangGuard)
struct PhaseTimingsTests {
    @Test("each exchange's phases reach the response, the observers, metrics, spans and HAR, in order, on both transports", arguments: TransportKind.allCases)
    func everyCallMeasured(kind: TransportKind) async throws {
        let observer = TimingsRecorder()
        let metrics = TestMetrics()
        let tracer = TraceparentTracer()
        let file = Scratch.folder().appendingPathComponent("timings.har")
        try await withServer(transport: kind, configure: {
            $0.observability.observers = [observer]
            $0.observability.metricsFactory = metrics
            $0.observability.tracer = tracer
            $0.observability.recorder = HARRecorder(fileURL: file)
        }) { server, client in
            let fetched = try await client.get("/bytes/200000").send()
            let posted = try await client.send(Request(method: .post, path: "/anything", body: .data(Data(repeating: 7, count: 100_000))))
            for response in [fetched, posted] {
                let timings = response.timings
                let firstByte = try #require(timings.firstByte, "\(kind): the head's arrival is measured")
                let complete = try #require(timings.complete, "\(kind): the body's end is measured")
                #expect(firstByte <= complete)
                #expect(firstByte > .zero)
                let milestones = [timings.nameLookup, timings.connect, timings.secureConnect, timings.connectionReady, timings.requestSent, timings.firstByte, timings.complete]
                    .compactMap { $0 }
                #expect(milestones == milestones.sorted(), "\(kind): the phases end in order: \(timings)")
                #expect(timings.secureConnect == nil, "no TLS over http")
                switch kind {
                case .asyncHTTPClient:
                    // What AsyncHTTPClient reports: the head written, the request sent.
                    #expect(timings.connectionReady != nil)
                    #expect(timings.requestSent != nil)
                    #expect(timings.nameLookup == nil && timings.connect == nil && timings.reusedConnection == nil, "not observable there")
                case .urlSession where urlSessionDeliversMetrics:
                    #expect(timings.requestSent != nil)
                    #expect(timings.reusedConnection != nil)
                    #expect(timings.remoteAddress == "127.0.0.1")
                    #expect(timings.remotePort == server.baseURL.port)
                case .urlSession:
                    #expect(timings.remoteAddress == nil)
                }
            }
            // A body of the request, sent in full, is sent before the answer comes.
            if let sent = posted.timings.requestSent { #expect(sent <= posted.timings.firstByte ?? .zero) }

            // A redirect: each hop measured, the answer knows how many there were.
            let redirected = try await client.get("/redirect/2").send()
            #expect(redirected.redirects == 2)
            #expect(fetched.redirects == 0)
        }
        // The observer heard every exchange: two calls, and three hops of the third.
        let heard = observer.measured.withLock { $0 }
        #expect(heard.count == 5)
        #expect(heard.allSatisfy { $0.firstByte != nil && $0.complete != nil })

        // Metrics: each phase that happened, under HAR's names.
        let wait = try metrics.expectTimer("callsign_request_phase_seconds", [("api", "-"), ("method", "GET"), ("phase", "wait")])
        #expect(wait.values.count == 2, "the fetch and the redirect's final answer")
        _ = try metrics.expectTimer("callsign_request_phase_seconds", [("api", "-"), ("method", "POST"), ("phase", "receive")])
        if kind == .asyncHTTPClient {
            _ = try metrics.expectTimer("callsign_request_phase_seconds", [("api", "-"), ("method", "GET"), ("phase", "blocked")])
        }

        // Spans: each attempt's milestones as events, its protocol as an attribute.
        let attempts = tracer.memory.finishedSpans.filter { $0.operationName.hasSuffix("attempt") }
        #expect(attempts.count == 5)
        for span in attempts {
            let names = span.events.map(\.name)
            #expect(names.contains("first_byte") && names.contains("complete"), "\(names)")
            let stamps = span.events.map(\.nanosecondsSinceEpoch)
            #expect(stamps == stamps.sorted())
            #expect(span.attributes.get("network.protocol.version") != nil)
        }

        // HAR: the phases in milliseconds, `time` their sum.
        let har = try JSONValue(parsing: Data(contentsOf: file))
        let entries = try #require(har["log"]?["entries"]?.arrayValue)
        #expect(entries.count == 5)
        for entry in entries {
            let timings = try #require(entry["timings"])
            var sum = 0.0
            for key in ["blocked", "dns", "connect", "send", "wait", "receive"] {
                let value = try #require(timings[key]?.doubleValue, "timings.\(key)")
                #expect(value >= 0 || value == -1, "\(key): \(value)")
                if value >= 0 { sum += value }
            }
            for key in ["send", "wait", "receive"] { #expect((timings[key]?.doubleValue ?? -1) >= 0) }
            let time = try #require(entry["time"]?.doubleValue)
            #expect(abs(time - sum) < 0.001)
            #expect(time > 0)
        }
    }

    @Test("a streamed answer knows its first byte; a download its end too", arguments: TransportKind.allCases)
    func streamsAndDownloads(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let stream = try await client.stream(Request(path: "/bytes/50000"))
            #expect(stream.response.timings.firstByte != nil)
            for try await _ in stream.chunks {}
            let destination = Scratch.folder().appendingPathComponent("file.bin")
            let downloaded = try await client.download(Request(path: "/bytes/300000"), to: destination)
            let firstByte = try #require(downloaded.timings.firstByte)
            let complete = try #require(downloaded.timings.complete)
            #expect(firstByte <= complete)
        }
    }

    @Test("URLSession's task metrics become timings measured from the fetch's start: clamped, in order, the address checked")
    func transactionDates() throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        func at(_ milliseconds: Double) -> Date { start.addingTimeInterval(milliseconds / 1000) }
        let dates = TransactionDates(
            fetchStart: start, domainLookupEnd: at(5), connectEnd: at(40), secureConnectionStart: at(15), secureConnectionEnd: at(40),
            requestStart: at(41), requestEnd: at(42), responseStart: at(100), responseEnd: at(120), reusedConnection: false,
            networkProtocol: "h2", remoteAddress: "2001:db8::1", remotePort: "443")
        let timings = try #require(dates.timings)
        #expect(timings.nameLookup == .milliseconds(5))
        #expect(timings.connect == .milliseconds(15), "curl's connect ends where TLS starts")
        #expect(timings.secureConnect == .milliseconds(40))
        #expect(timings.connectionReady == .milliseconds(41))
        #expect(timings.requestSent == .milliseconds(42))
        #expect(timings.firstByte == .milliseconds(100))
        #expect(timings.complete == .milliseconds(120))
        #expect(timings.reusedConnection == false)
        #expect(timings.remoteAddress == "2001:db8::1")
        #expect(timings.remotePort == 443)
        #expect(dates.httpVersion == "HTTP/2")

        // HAR: each phase on its own, `connect` holding `ssl`.
        let har = timings.har
        #expect(har.dns == 5)
        #expect(har.connect == 35)
        #expect(har.ssl == 25)
        #expect(har.send == 1)
        #expect(har.wait == 58)
        #expect(har.receive == 20)
        #expect(har.blocked == -1)
        #expect(har.total == 119, "the phases that happened; the millisecond between TLS and the request is in none")

        // What the delegate saw itself fills only what the metrics leave out.
        var seen = PhaseTimings()
        seen.firstByte = .milliseconds(3)
        seen.remotePort = 8080
        #expect(timings.filling(from: seen).firstByte == .milliseconds(100))
        #expect(timings.filling(from: seen).remotePort == 443)
        #expect(PhaseTimings().filling(from: seen) == seen)

        // A reused connection, without TLS: no lookup, no connect.
        let reused = try #require(
            TransactionDates(fetchStart: start, requestStart: at(1), requestEnd: at(1), responseStart: at(9), responseEnd: at(9), reusedConnection: true).timings)
        #expect(reused.nameLookup == nil && reused.connect == nil && reused.secureConnect == nil)
        #expect(reused.har.dns == -1 && reused.har.connect == -1 && reused.har.ssl == -1)
        #expect(reused.har.wait == 8)

        // Wall-clock dates out of order (the clock was set back): never a negative phase.
        let skewed = try #require(
            TransactionDates(fetchStart: start, domainLookupEnd: at(-50), connectEnd: at(30), requestStart: at(20), responseStart: at(10), responseEnd: at(60))
                .timings)
        #expect(skewed.nameLookup == .zero)
        let order = [skewed.nameLookup, skewed.connect, skewed.connectionReady, skewed.firstByte, skewed.complete].compactMap { $0 }
        #expect(order == order.sorted())
        #expect(skewed.har.wait >= 0 && skewed.har.receive >= 0 && skewed.har.send >= 0)

        // What is printed is checked first.
        for hostile in ["127.0.0.1\u{1B}[2J", "evil.example", "", String(repeating: "1", count: 65), "fe80::1%en0%x"] {
            #expect(TransactionDates(fetchStart: start, remoteAddress: hostile).timings?.remoteAddress == nil, "\(hostile)")
        }
        #expect(TransactionDates(fetchStart: start, remoteAddress: "fe80::1%en0").timings?.remoteAddress == "fe80::1%en0")
        for port in ["0", "65536", "-1", "http", "99999999999999999999"] {
            #expect(TransactionDates(fetchStart: start, remotePort: port).timings?.remotePort == nil, "\(port)")
        }
        #expect(TransactionDates(remoteAddress: "127.0.0.1").timings == nil, "no start, nothing to measure from")
    }

    @Test("-w reads curl's formats: variables, escapes, %%, and what is not a variable")
    func writeOutFormat() {
        let format = WriteOut(#"%{http_code}\t%%{x} %{nope}\n%{time_total}%{"#)
        #expect(format.unknown == ["nope"])
        #expect(format.pieces == [.variable(.httpCode), .text("\t%{x} \n"), .variable(.timeTotal), .text("%{")])
        #expect(WriteOut.seconds(.milliseconds(1234)) == "1.234000")
        #expect(WriteOut.seconds(.microseconds(7)) == "0.000007")
        #expect(WriteOut.seconds(nil) == "0.000000")
        #expect(WriteOut.seconds(.seconds(-3)) == "0.000000")
        #expect(WriteOut(#"a\qb\"#).pieces == [.text(#"a\qb\"#)])
    }

    @Test("callsign get -w prints the code and the times as curl does, after the body; a failed call prints 000")
    func writeOutCommand() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let url = server.baseURL.appendingPathComponent("redirect/2").absoluteString
            let result = try await CLIRunner.run([
                "get", url, "-o", "/dev/null",
                "-w", #"%{http_code} %{time_connect} %{time_total}\n%{num_redirects} %{size_download} %{method} %{http_version} %{time_starttransfer} %{wat}\n"#,
            ])
            #expect(result.status == 0, "\(result.standardError)")
            let lines = result.standardOutput.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 3 && lines[2].isEmpty, "\(result.standardOutput)")
            #expect(lines.first?.wholeMatch(of: #/200 \d+\.\d{6} \d+\.\d{6}/#) != nil, "\(result.standardOutput)")
            #expect(lines.dropFirst().first?.wholeMatch(of: #/2 \d+ GET 1\.1 \d+\.\d{6} /#) != nil, "\(result.standardOutput)")
            #expect(result.standardError.contains("unknown --write-out variable: 'wat'"))

            let refusing = try RefusingPort()
            let refused = try await CLIRunner.run([
                "get", "http://127.0.0.1:\(refusing.port)/", "--retry", "1", "-w", #"%{http_code} %{errormsg}\n"#,
            ])
            #expect(refused.status != 0)
            #expect(refused.standardOutput.hasPrefix("000 "), "\(refused.standardOutput)")
            #expect(refused.standardOutput.hasSuffix("\n"))
        }
    }
}
