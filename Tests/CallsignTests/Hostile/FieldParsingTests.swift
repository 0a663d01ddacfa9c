@testable import Callsign
import Foundation
import HTTPTypes
import Testing

@Suite("Field parsers: bounded, strict, and never trapping", .hangGuard)
struct FieldParsingTests {
    @Test("HTTP dates in all three forms")
    func dates() throws {
        let expected = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDate.parse("  Sun, 06 Nov 1994 08:49:37 GMT  ") == expected)
        #expect(HTTPDate.parse("Fri, 31 Dec 9999 23:59:59 GMT") == Date(timeIntervalSince1970: HTTPDate.latest))
        #expect(HTTPDate.parse("Mon, 01 Jan 0001 00:00:00 GMT") == Date(timeIntervalSince1970: HTTPDate.earliest))
        #expect(HTTPDate.parse("Thu, 29 Feb 2024 00:00:00 GMT") != nil)
    }

    @Test("RFC 850 two-digit years read as the most recent past year with those digits (RFC 9110 §5.6.7)")
    func twoDigitYears() throws {
        let now = try #require(HTTPDate.parse("Mon, 23 Nov 2026 00:00:00 GMT"))
        #expect(HTTPDate.parse("Monday, 01-Jan-70 00:00:00 GMT", now: now) == HTTPDate.parse("Thu, 01 Jan 2070 00:00:00 GMT"))
        #expect(HTTPDate.parse("Monday, 01-Jan-77 00:00:00 GMT", now: now) == HTTPDate.parse("Sat, 01 Jan 1977 00:00:00 GMT"))
    }

    @Test("anything else is not a date", arguments: [
        "Mon, 01 Jan 999999999999 00:00:00 GMT", "Mon, 01 Jan 0000 00:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 31 Feb 2023 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov -1994 08:49:37 GMT", "Sun, 006 Nov 1994 08:49:37 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT",
        "0", "-1", "inf", "", String(repeating: "Sun, ", count: 100_000), "Sun, 06 Nov 1994 08:49:37 GMT trailing",
    ])
    func notDates(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test("formatting never traps, even on dates HTTP cannot name")
    func formatting() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 1e300)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -1e300)) == "Mon, 01 Jan 0001 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: .infinity)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: .nan)) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }

    @Test("delta-seconds: digits only, saturating at 2^31 (RFC 9111 §1.2.2)")
    func deltaSeconds() {
        #expect(DeltaSeconds.parse("0") == 0)
        #expect(DeltaSeconds.parse(" 120 ") == 120)
        #expect(DeltaSeconds.parse("2147483648") == DeltaSeconds.maximum)
        #expect(DeltaSeconds.parse(String(repeating: "9", count: 10_000)) == DeltaSeconds.maximum)
        for bad in ["", " ", "-1", "+1", "1.5", "inf", "1e9", "0x10", "1 2", "١٢"] {
            #expect(DeltaSeconds.parse(bad) == nil, "\(bad)")
        }
    }

    @Test("Retry-After: seconds, dates, and nothing else")
    func retryAfter() throws {
        let now = try #require(HTTPDate.parse("Mon, 23 Nov 2026 00:00:00 GMT"))
        #expect(RetryAfter.parse("30", now: now) == .seconds(30))
        #expect(RetryAfter.parse("Mon, 23 Nov 2026 00:00:10 GMT", now: now) == .seconds(10))
        #expect(RetryAfter.parse("Sun, 22 Nov 2026 00:00:00 GMT", now: now) == .zero)
        #expect(RetryAfter.parse("Fri, 31 Dec 9999 23:59:59 GMT", now: now) == .seconds(Int64(DeltaSeconds.maximum)))
        #expect(RetryAfter.parse("Mon, 01 Jan 999999999999 00:00:00 GMT", now: now) == nil)
        #expect(RetryAfter.parse("-5", now: now) == nil)
        #expect(RetryAfter.parse("inf", now: now) == nil)
    }

    @Test("Cache-Control arguments are delta-seconds; huge fields cost nothing")
    func cacheControl() {
        let control = CacheControl("max-age=99999999999999999999, s-maxage=inf, stale-if-error=-5, max-stale")
        #expect(control.seconds("max-age") == DeltaSeconds.maximum)
        #expect(control.seconds("s-maxage") == nil)
        #expect(control.isMalformed("s-maxage"))
        #expect(control.seconds("stale-if-error") == nil)
        #expect(control.maxStale == DeltaSeconds.maximum)
        let flood = CacheControl(String(repeating: "a=1, ", count: 200_000) + "no-store")
        #expect(!flood.has("no-store"))  // past the bound: not read
    }

    @Test("Content-Length: one valid number, or an error")
    func contentLength() throws {
        func fields(_ values: [String]) -> HTTPFields {
            var fields = HTTPFields()
            for value in values { fields.append(HTTPField(name: .contentLength, value: value)) }
            return fields
        }
        #expect(try ContentLength.parse(fields([])) == nil)
        #expect(try ContentLength.parse(fields(["42"])) == 42)
        #expect(try ContentLength.parse(fields(["42", "42"])) == 42)
        #expect(try ContentLength.parse(fields(["42, 42"])) == 42)
        #expect(try ContentLength.parse(fields(["9223372036854775807"])) == Int64.max)
        for bad in [["42", "43"], ["42, 43"], ["-1"], ["+1"], ["1.0"], [""], ["9223372036854775808"], ["99999999999999999999"], ["4 2"],
                    ["42,"], [",42"], ["42,,42"], ["4x"], ["42, 4é"], ["é"]] {
            #expect(throws: APIError.self, "\(bad)") { try ContentLength.parse(fields(bad)) }
        }
    }

    @Test("a field's value read as the subscript reads it, without joining one value")
    func fieldValue() {
        var fields: HTTPFields = [.contentType: "application/json"]
        #expect(fields.value(of: .contentType) == "application/json")
        #expect(fields.value(of: .contentEncoding) == nil)
        fields.append(HTTPField(name: .contentType, value: "text/plain"))
        #expect(fields.value(of: .contentType) == fields[.contentType])
        #expect(fields.value(of: .contentType) == "application/json, text/plain")
        var cookies = HTTPFields()
        cookies.append(HTTPField(name: .cookie, value: "a=1"))
        cookies.append(HTTPField(name: .cookie, value: "b=2"))
        #expect(cookies.value(of: .cookie) == "a=1; b=2")
    }

    @Test("Content-Range: checked bounds")
    func contentRange() {
        #expect(ContentRange("bytes 100-199/1000") == ContentRange("bytes 100-199/1000"))
        #expect(ContentRange("bytes 100-199/1000")?.count == 100)
        #expect(ContentRange("bytes 0-0/*")?.total == nil)
        for bad in ["bytes 200-100/1000", "bytes 100-1000/1000", "bytes -5-10/100", "bytes 0-99999999999999999999/*",
                    "items 0-1/2", "bytes 0-1", "bytes 0-1/-5", "bytes 0-9223372036854775807/*"] {
            #expect(ContentRange(bad) == nil, "\(bad)")
        }
    }

    @Test("saturating conversions: no Int(someDouble) traps")
    func saturating() {
        #expect(Int(saturating: .infinity) == .max)
        #expect(Int(saturating: -.infinity) == .min)
        #expect(Int(saturating: .nan) == 0)
        #expect(Int64(saturating: 1e300) == .max)
        #expect(Int(saturating: -3.9) == -3)
        #expect(Duration.saturating(seconds: .infinity) == .seconds(Int64(DeltaSeconds.maximum)))
        #expect(Duration.saturating(seconds: .nan) == .zero)
        #expect(Duration.saturating(seconds: -1) == .zero)
        #expect(Duration.seconds(Int64.max).wholeMilliseconds == .max)
        #expect(RetryPolicy(baseDelay: .seconds(Int64.max), maximumDelay: .seconds(Int64.max)).exponentialDelay(afterAttempt: 40) > .zero)
    }

    @Test("JSON depth is measured without parsing, strings skipped")
    func jsonDepth() {
        #expect(!JSONDepth.exceeds(Data("[[[]]]".utf8), limit: 3))
        #expect(JSONDepth.exceeds(Data("[[[[]]]]".utf8), limit: 3))
        #expect(!JSONDepth.exceeds(Data(#"{"a":"[[[[[[\"[[[["}"#.utf8), limit: 1))
        #expect(throws: APIError.self) { try JSONDepth.check(Data("[[[[]]]]".utf8), limit: 3) }
    }

    @Test("HTTP statuses from outside are checked before HTTPTypes sees them")
    func statuses() {
        #expect(throws: APIError.self) { try HTTPResponse.Status.checked(5000) }
        #expect(throws: APIError.self) { try HTTPResponse.Status.checked(-1) }
        #expect((try? HTTPResponse.Status.checked(404))?.code == 404)
        #expect(throws: APIError.self) { try Limits.default.check(HTTPResponse(status: .init(code: 0))) }
        #expect(throws: APIError.self) { try Limits.default.check(HTTPResponse(status: .continue)) }
    }
}
