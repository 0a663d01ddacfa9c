import Foundation
package import HTTPTypes

/// `delta-seconds` (RFC 9111 §1.2.2): the number form of `Age`, `max-age`, `s-maxage`,
/// `stale-while-revalidate`, `stale-if-error` and `Retry-After`.
///
/// Only ASCII digits are accepted (no sign, no fraction, no `inf`); a value too large to hold
/// saturates at 2^31 seconds (about 68 years), as the RFC says.
enum DeltaSeconds {
    /// The value every larger one saturates to: 2^31 seconds.
    static let maximum = 2_147_483_648

    /// The seconds in `text` (optional whitespace around it); `nil` when it is not delta-seconds.
    static func parse<Text: StringProtocol>(_ text: Text) -> Int? {
        var value = 0
        var digits = 0
        var seenEnd = false
        for byte in text.utf8 {
            if byte == 0x20 || byte == 0x09 {
                if digits > 0 { seenEnd = true }
                continue
            }
            guard !seenEnd, byte >= 0x30, byte <= 0x39 else { return nil }
            digits += 1
            // Once saturated, further digits change nothing; the loop still checks each byte.
            if value < maximum { value = min(maximum, value * 10 + Int(byte - 0x30)) }
        }
        return digits > 0 ? value : nil
    }
}

/// `Age` (RFC 9111 §5.1): the first field line, and within it the first list member — a
/// second line or a list (`7200, 0`) is a sender's mistake, and the first value is the one a
/// cache reads (transports that fold repeated lines into one comma-joined value end up the
/// same). A first value that is not delta-seconds (`inf`, `-5`, `1.5`) counts as absent.
enum AgeField {
    static func parse(_ fields: HTTPFields) -> Int? {
        guard let line = fields[values: .age].first else { return nil }
        let first = line.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return DeltaSeconds.parse(first)
    }
}

extension HTTPFields {
    /// What `self[name]` reads — the values of the fields with this name, joined with `", "` —
    /// without building a new string when there is one such field, as there almost always is.
    /// The subscript joins even a single value through a generic sequence; a response's checks
    /// read its `Content-Type` this way on every call.
    ///
    /// ```swift
    /// let type = response.headers.value(of: .contentType)
    /// ```
    package func value(of name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            guard found == nil else { return self[name] }
            found = field.value
        }
        return found
    }
}

/// Fields that belong to one connection, not to the message (RFC 9110 §7.6.1), and the proxy
/// fields RFC 9111 §3.1 keeps out of storage: a cache neither stores nor merges them.
enum HopByHop {
    static let always: Set<String> = [
        "connection", "proxy-connection", "keep-alive", "te", "transfer-encoding", "upgrade", "proxy-authenticate",
        "proxy-authentication-info", "proxy-authorization",
    ]

    /// `fields` without the hop-by-hop ones, and without every field its `Connection` names.
    static func removed(from fields: HTTPFields) -> HTTPFields {
        var drop = always
        // Outside data: a bounded number of lines and options.
        for line in fields[values: .connection].prefix(16) {
            for option in line.split(separator: ",").prefix(64) {
                drop.insert(option.trimmingCharacters(in: .whitespaces).lowercased())
            }
        }
        guard fields.contains(where: { drop.contains($0.name.canonicalName) }) else { return fields }
        return HTTPFields(fields.filter { !drop.contains($0.name.canonicalName) })
    }
}

/// `Content-Length` (RFC 9110 §8.6), read from every field line that carries it.
package enum ContentLength {
    /// The declared length; `nil` when the head has none. Throws when the values conflict, are
    /// not digits, or do not fit in 63 bits — a sign of a confused or hostile peer, and a
    /// request-smuggling risk behind proxies.
    package static func parse(_ fields: HTTPFields) throws(APIError) -> Int64? {
        // Read where the values lie, without an array of lines or of list members: every
        // response's head passes here.
        var result: Int64?
        for field in fields where field.name == .contentLength {
            let value = field.value
            var start = value.utf8.startIndex
            while true {
                // A list of identical values ("42, 42") is allowed; anything else is an error.
                let end = value.utf8[start...].firstIndex(of: UInt8(ascii: ",")) ?? value.utf8.endIndex
                guard let length = digits(value[start..<end]) else {
                    throw APIError(.invalidResponse, localized: "the response's Content-Length \"\(Self.excerpt(value))\" is not a valid length")
                }
                if let result, result != length {
                    throw APIError(.invalidResponse, localized: "the response has conflicting Content-Length values (\(result) and \(length))")
                }
                result = length
                guard end < value.utf8.endIndex else { break }
                start = value.utf8.index(after: end)
            }
        }
        return result
    }

    /// Optional whitespace (spaces and tabs) around 1*DIGIT, at most `Int64.max`. Read byte by
    /// byte: every response's head passes here.
    static func digits<Text: StringProtocol>(_ text: Text) -> Int64? {
        var value: Int64 = 0
        var sawDigit = false
        var trailing = false  // whitespace after the digits: nothing else may follow
        for byte in text.utf8 {
            if byte == 0x20 || byte == 0x09 {
                trailing = sawDigit
                continue
            }
            guard byte >= 0x30, byte <= 0x39, !trailing else { return nil }
            let (shifted, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = shifted.addingReportingOverflow(Int64(byte - 0x30))
            guard !overflowA, !overflowB else { return nil }
            value = sum
            sawDigit = true
        }
        return sawDigit ? value : nil
    }

    static func excerpt(_ value: String) -> String {
        value.count > 40 ? String(value.prefix(40)) + "…" : value
    }
}

/// `Content-Range: bytes 100-199/1000` (RFC 9110 §14.4), checked: first ≤ last < complete length.
struct ContentRange: Equatable {
    let start: Int64
    let end: Int64
    let total: Int64?

    /// The number of bytes the range covers.
    var count: Int64 { end - start + 1 }

    init?(_ value: String?) {
        guard let value, value.utf8.count <= 128 else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6).split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        let bounds = spec[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let start = ContentLength.digits(bounds[0]), let end = ContentLength.digits(bounds[1]),
            start <= end, end < Int64.max
        else { return nil }
        let totalText = spec[1].trimmingCharacters(in: .whitespaces)
        if totalText == "*" {
            total = nil
        } else {
            guard let total = ContentLength.digits(totalText), end < total else { return nil }
            self.total = total
        }
        self.start = start
        self.end = end
    }
}

extension FixedWidthInteger {
    /// The integer nearest to `value` toward zero, saturating at the type's bounds; NaN is zero.
    /// Use this, never `Int(someDouble)`, for any value that may come from outside.
    init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if let exact = Self(exactly: value.rounded(.towardZero)) {
            self = exact
        } else {
            self = value < 0 ? .min : .max
        }
    }
}

extension HTTPResponse.Status {
    /// A status from outside (a cache row, a HAR file, a socket), checked: HTTPTypes traps on
    /// codes outside 0...999, so those are an error here instead.
    static func checked(_ code: Int, reasonPhrase: String = "") throws(APIError) -> HTTPResponse.Status {
        guard (100...999).contains(code) else {
            throw APIError(.invalidResponse, localized: "\(code) is not an HTTP status code (100–999)")
        }
        return HTTPResponse.Status(code: code, reasonPhrase: reasonPhrase)
    }
}
