import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Testing

/// Far-future, negative, infinite and garbage values in every date and delta-seconds header,
/// from a raw server: retries and the cache read them as "absent" or "stale", never trap.
@Suite("Hostile field values: dates and delta-seconds from a raw server", .hangGuard)
struct HostileFieldValueTests {
    /// Values no parser may trust. Each is either not a date or not delta-seconds.
    static let hostileValues = [
        "Mon, 01 Jan 999999999999 00:00:00 GMT", "Sun, 06 Nov -1994 08:49:37 GMT", "Fri, 31 Dec 10000 23:59:59 GMT",
        "-5", "inf", "-inf", "nan", "1e309", "99999999999999999999999999", "0x10", "", " ", "garbage", "3.5",
        "Sun, 31 Feb 2026 08:49:37 GMT", "Sun, 06 Nov 1994 25:61:61 GMT", "Sunday, 06-Nov-99999 08:49:37 GMT",
    ]

    @Test(
        "a Retry-After that is not delay-seconds or a date leaves the back-off in charge",
        arguments: hostileValues.filter { $0 != "99999999999999999999999999" })
    func invalidRetryAfter(value: String) async throws {
        let clock = TestClock()
        let outcome = try await exchange(
            [rawResponse(status: "503 Service Unavailable", headers: ["Retry-After: \(value)", "Content-Length: 0"])],
            kind: .asyncHTTPClient
        ) { configuration in
            configuration.clock = clock
            configuration.retry = RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(10), jitter: .none)
        }
        #expect(outcome.response?.status.code == 503)
        #expect(clock.sleeps == [.milliseconds(10), .milliseconds(20)])
    }

    @Test("a Retry-After past the longest wait honoured ends the retries", arguments: [
        "Fri, 31 Dec 9999 23:59:59 GMT", "99999999999999999999999999", "2147483648", "86400",
    ])
    func tooLongRetryAfter(value: String) async throws {
        let clock = TestClock()
        try await RawServer.withRunning([rawResponse(status: "503 Service Unavailable", headers: ["Retry-After: \(value)", "Content-Length: 0"])]) {
            server in
            let outcome = try await exchange(server, kind: .asyncHTTPClient, configure: { configuration in
                configuration.clock = clock
                configuration.retry = RetryPolicy(maximumAttempts: 3, maximumRetryAfter: .seconds(60), jitter: .none)
            }, call: { client throws(APIError) in try await client.get("/x").send() })
            #expect(outcome.response?.status.code == 503)
            #expect(clock.sleeps.isEmpty)
            #expect(server.connectionCount == 1)
        }
    }

    @Test("a Retry-After date in the past means no wait")
    func pastRetryAfter() async throws {
        let clock = TestClock()
        let outcome = try await exchange(
            [rawResponse(status: "503 Service Unavailable", headers: ["Retry-After: Thu, 01 Jan 1970 00:00:00 GMT", "Content-Length: 0"])],
            kind: .asyncHTTPClient
        ) { configuration in
            configuration.clock = clock
            configuration.retry = RetryPolicy(maximumAttempts: 2, jitter: .none)
        }
        #expect(outcome.response?.status.code == 503)
        #expect(clock.sleeps == [.zero])
    }

    @Test("hostile Date, Expires, Last-Modified, Age and Cache-Control values: stored, read, revalidated by a 304", arguments: hostileValues)
    func hostileCacheValues(value: String) async throws {
        let stored = rawResponse(
            headers: [
                "Date: \(value)", "Expires: \(value)", "Last-Modified: \(value)", "Age: \(value)",
                "Cache-Control: max-age=\(value), stale-if-error=\(value)", "ETag: \"v1\"", "Content-Type: text/plain",
                "Content-Length: 2",
            ],
            body: "ok")
        let notModified = rawResponse(
            status: "304 Not Modified", headers: ["Date: \(value)", "Age: \(value)", "Expires: \(value)", "ETag: \"v1\""])
        try await RawServer.withRunning(script: { $0 == 0 ? [stored] : [notModified] }) { server in
            let cache = HTTPCache.memory()
            let call: @Sendable (APIClient) async throws(APIError) -> Response = { client throws(APIError) in
                _ = try await client.get("/x").send()
                return try await client.get("/x").send()
            }
            let outcome = try await exchange(server, kind: .asyncHTTPClient, configure: { $0.cache = cache }, call: call)
            let response = try #require(outcome.response, "\(outcome.error.map(String.init(describing:)) ?? "")")
            #expect(response.status.code == 200)
            #expect(response.body == Data("ok".utf8))
            // The Age served is delta-seconds, whatever arrived.
            if let age = response.headers[.age] { #expect(Int(age).map { $0 >= 0 } == true, "Age: \(age)") }
        }
    }

    @Test("304 with Age: inf after a stale entry, as the issue found it, on both transports", arguments: TransportKind.allCases)
    func revalidatedWithInfiniteAge(kind: TransportKind) async throws {
        let stored = rawResponse(headers: ["Cache-Control: max-age=0", "ETag: \"v1\"", "Content-Length: 2"], body: "ok")
        let notModified = rawResponse(status: "304 Not Modified", headers: ["Age: inf", "ETag: \"v1\""])
        try await RawServer.withRunning(script: { $0 == 0 ? [stored] : [notModified] }) { server in
            let cache = HTTPCache.memory()
            let outcome = try await exchange(server, kind: kind, configure: { $0.cache = cache }, call: { client throws(APIError) in
                _ = try await client.get("/x").send()
                return try await client.get("/x").send()
            })
            let response = try #require(outcome.response, "\(outcome.error.map(String.init(describing:)) ?? "")")
            #expect(response.body == Data("ok".utf8))
            #expect(server.connectionCount == 2)
        }
    }
}
