@testable import Callsign
import CallsignTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `HTTPFields` traps past 65,535 fields. Every source of header fields — a HAR file, a
/// definitions file, a stored row, a mock, code — is generated here at and far past that count:
/// each ends in a clear error from the one field door, with bounded memory.
@Suite("Header fields at and past the limits, from every source", .hangGuard)
struct FieldLimitTests {
    static let counts = [65_535, 1_000_000]

    @Test("a HAR file whose response has 65,535 or 1,000,000 fields is refused when it is loaded", arguments: counts)
    func harFile(count: Int) async throws {
        let (error, grew) = try await Self.refusal { _ = try HARReplay(data: Self.har(fieldCount: count), name: "many.har") }
        #expect(grew < 2 << 30, "peak memory grew by \(grew >> 20) MiB")
        #expect(error?.code == .invalidDefinition)
        #expect(error?.message.contains("\"many.har\": entry 1 has more than 500 header fields") == true, "\(error?.message ?? "")")
    }

    @Test("a definitions file with 65,535 or 1,000,000 headers names the API and the key", arguments: counts)
    func definitionsFile(count: Int) async throws {
        let (error, grew) = try await Self.refusal {
            var json = #"{"Many": {"path": "x", "headers": {"#
            json += (0..<count).map { #""X-\#($0)": "v""# }.joined(separator: ",")
            json += "}}}"
            _ = try APIDefinitions(data: Data(json.utf8), format: .json)
        }
        #expect(grew < 2 << 30, "peak memory grew by \(grew >> 20) MiB")
        #expect(error?.code == .invalidDefinition)
        #expect(error?.message.contains("Many") == true)
        #expect(error?.message.contains("more than 500 header fields") == true, "\(error?.message ?? "")")
    }

    @Test("a YAML definitions file with 65,536 headers is refused the same way")
    func yamlDefinitionsFile() async throws {
        let (error, _) = try await Self.refusal {
            let yaml = "Many:\n  path: x\n  headers:\n" + (0...65_535).map { "    X-\($0): v\n" }.joined()
            _ = try APIDefinitions(data: Data(yaml.utf8), format: .yaml)
        }
        #expect(error?.message.contains("more than 500 header fields") == true, "\(error?.message ?? "")")
    }

    @Test("a stored row with 65,535 or 1,000,000 fields is a storage error, not a trap", arguments: counts)
    func storedRow(count: Int) async throws {
        let row = try await onOwnThread { Data(("[" + (0..<count).map { #"["X-\#($0)","v"]"# }.joined(separator: ",") + "]").utf8) }
        for direction in [FieldReader.Direction.request, .response] {
            let (error, _) = try await Self.refusal { _ = try StoredFields.decode(row, direction: direction) }
            #expect(error?.code == .storage)
        }
        // Under the limits a stored list reads back as written, repeated names and order kept.
        let fields = try StoredFields.decodeHeaders(StoredFields.encode(Headers([.init(name: "B", value: "1"), .init(name: "a", value: "2"), .init(name: "B", value: "3")])))
        #expect(fields.fields.map(\.name) == ["B", "a", "B"])
        #expect(fields.values(for: "b") == ["1", "3"])
    }

    @Test("a request with 65,536 fields built in code is refused before anything is sent")
    func requestInCode() async throws {
        try await withServer { server, client in
            let headers = Headers((0...65_535).map { Headers.Field(name: "X-\($0)", value: "v") })
            let error = await apiError { _ = try await client.send(.get("get", headers: headers)) }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message.contains("more than 500 header fields") == true, "\(error?.message ?? "")")
            #expect(server.hits("/get") == 0)
        }
    }

    @Test("the count is configurable, and a limit past 65,534 counts as 65,534 (HTTPFields traps at 65,535)")
    func configurable() async throws {
        try await withServer(configure: { $0.limits.maximumHeaderFieldCount = 12 }) { server, client in
            let few = Headers((0..<3).map { Headers.Field(name: "X-\($0)", value: "v") })
            _ = try await client.send(.get("get", headers: few))
            let many = Headers((0..<13).map { Headers.Field(name: "X-\($0)", value: "v") })
            let error = await apiError { _ = try await client.send(.get("get", headers: many)) }
            #expect(error?.message.contains("more than 12 header fields") == true)
            #expect(server.hits("/get") == 1)
        }
        let unbounded = FieldReader(limits: .init { $0.maximumHeaderFieldCount = 1_000_000; $0.maximumRequestHeadSize = .max }, direction: .request, code: .invalidRequest)
        let pairs = (0...65_535).lazy.map { (name: "X-\($0)", value: "v") }
        let error = #expect(throws: APIError.self) { try unbounded.fields(pairs, source: "the test", invalid: .refuse) }
        #expect(error?.message.contains("more than 65534 header fields") == true)
    }

    @Test("the head size is bounded too: one huge value, or many large ones")
    func headSize() async throws {
        try await withServer { server, client in
            let huge = Headers([.init(name: "X-Big", value: String(repeating: "a", count: 70_000))])
            let error = await apiError { _ = try await client.send(.get("get", headers: huge)) }
            #expect(error?.message.contains("maximumRequestHeadSize") == true)
            #expect(server.hits("/get") == 0)
        }
    }

    @Test("a mock answer with 65,536 fields fails the call with a clear error")
    func mockAnswer() async {
        let headers = Dictionary(uniqueKeysWithValues: (0...65_535).map { ("X-\($0)", "v") })
        let client = APIClient(configuration: .init { $0.mocks = Mocks(realRequests: false) { _ in .data(Data(), headers: headers) } })
        let error = await apiError { _ = try await client.send(.get("http://127.0.0.1/x")) }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("more than 500 header fields") == true, "\(error?.message ?? "")")
    }

    // MARK: - Helpers

    /// A HAR archive with one entry whose response carries `fieldCount` header fields.
    static func har(fieldCount: Int) -> Data {
        var text = #"{"log":{"version":"1.2","creator":{"name":"x","version":"1"},"entries":[{"startedDateTime":"2026-01-01T00:00:00Z","time":1,"request":{"method":"GET","url":"http://127.0.0.1/x","httpVersion":"HTTP/1.1","headers":[],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0},"response":{"status":200,"statusText":"","httpVersion":"HTTP/1.1","headers":["#
        text += (0..<fieldCount).map { #"{"name":"X-\#($0)","value":"v"}"# }.joined(separator: ",")
        text += #"],"cookies":[],"content":{"size":0,"mimeType":"text/plain"},"redirectURL":"","headersSize":-1,"bodySize":0},"cache":{},"timings":{"blocked":-1,"dns":-1,"connect":-1,"send":0,"wait":1,"receive":0,"ssl":-1}}]}}"#
        return Data(text.utf8)
    }

    /// Runs `body` on a thread of its own — building and refusing a million fields is seconds of
    /// CPU in a debug build, which on the cooperative pool would stall every other test — and
    /// returns the ``APIError`` it threw (`nil` if none) and how much the process's peak memory
    /// grew meanwhile. Tests run in parallel in one process, so only a generous bound (2 GiB:
    /// far above what these inputs need when refused early, far below building them whole) is fair.
    static func refusal(_ body: @escaping @Sendable () throws -> Void) async throws -> (error: APIError?, grew: Int) {
        try await onOwnThread {
            let before = peakResidentBytes()
            var refusal: APIError?
            do { try body() } catch let error as APIError { refusal = error }
            return (refusal, peakResidentBytes() - before)
        }
    }

    static func peakResidentBytes() -> Int {
        var usage = rusage()
        #if canImport(Darwin)
        getrusage(RUSAGE_SELF, &usage)
        return Int(usage.ru_maxrss)
        #else
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Int(usage.ru_maxrss) * 1024
        #endif
    }
}
