import Foundation
import HTTPTypes

/// Reads what a server says about its rate limits, from any of the spellings in use:
///
/// - `RateLimit` and `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers, as structured
///   lists: `RateLimit: "default";r=0;t=30`, `RateLimit-Policy: "default";q=100;w=60`), and the
///   earlier drafts' forms (`RateLimit: limit=100, remaining=0, reset=30`, `RateLimit-Policy: 100;w=60`);
/// - `RateLimit-Remaining` / `RateLimit-Reset` (draft 03) and the common `X-RateLimit-Remaining` /
///   `X-RateLimit-Reset`, whose reset is delta-seconds, or Unix time in seconds or milliseconds.
///
/// Outside input: a field longer than ``maximumFieldLength`` or a list member past
/// ``maximumMembers`` is not read; numbers are digits only and saturate; a quota or window
/// outside ``quotaRange`` / ``windowSecondsRange`` is ignored.
enum RateLimitFields {
    /// What the fields say.
    struct Reading: Equatable {
        /// Requests left in the current window (the smallest any policy states).
        var remaining: Int?
        /// When the quota refills: seconds from now, or `nil` when not said.
        var reset: Duration?
        /// The most restrictive quota the server publishes (`RateLimit-Policy`).
        var policy: RateLimit?
    }

    static let maximumFieldLength = 4096
    static let maximumMembers = 32
    static let quotaRange = 1...1_000_000
    static let windowSecondsRange = 1...86_400

    private static let rateLimit = HTTPField.Name("RateLimit")
    private static let rateLimitPolicy = HTTPField.Name("RateLimit-Policy")
    private static let remainingNames = ["RateLimit-Remaining", "X-RateLimit-Remaining"].compactMap { HTTPField.Name($0) }
    private static let resetNames = ["RateLimit-Reset", "X-RateLimit-Reset"].compactMap { HTTPField.Name($0) }

    /// Reads the fields of a response received at `now` (for resets given as Unix time).
    static func read(_ fields: HTTPFields, now: Date = Date()) -> Reading {
        var reading = Reading()
        if let name = rateLimit {
            for line in fields[values: name] { merge(structured(line, now: now), into: &reading) }
        }
        if let name = rateLimitPolicy {
            for line in fields[values: name] {
                if let policy = policy(line) { reading.policy = stricter(reading.policy, policy) }
            }
        }
        for name in remainingNames {
            if let value = fields[name], let remaining = digits(value) { merge(Reading(remaining: remaining), into: &reading) }
        }
        for name in resetNames {
            if let value = fields[name], let reset = reset(value, now: now) { merge(Reading(reset: reset), into: &reading) }
        }
        return reading
    }

    /// One `RateLimit` line: a list of `"name";r=…;t=…` items, or a dictionary
    /// `limit=…, remaining=…, reset=…`; the most restrictive member wins.
    static func structured(_ line: String, now: Date) -> Reading {
        var reading = Reading()
        for member in members(of: line) {
            let parts = split(member, on: UInt8(ascii: ";"))
            guard let first = parts.first else { continue }
            var parameters = parts.dropFirst().compactMap(parameter)
            if let entry = parameter(first) { parameters.append(entry) }  // the dictionary form
            var remaining: Int?
            var reset: Duration?
            for (key, value) in parameters {
                switch key {
                case "r", "remaining": remaining = digits(value)
                case "t", "reset": reset = digits(value).map { .seconds($0) }
                default: continue
                }
            }
            merge(Reading(remaining: remaining, reset: reset), into: &reading)
        }
        return reading
    }

    /// One `RateLimit-Policy` line: `"name";q=100;w=60` items (or `100;w=60`); the most restrictive.
    static func policy(_ line: String) -> RateLimit? {
        var strictest: RateLimit?
        for member in members(of: line) {
            let parts = split(member, on: UInt8(ascii: ";"))
            guard let first = parts.first else { continue }
            var quota = digits(first)
            var window: Int?
            for (key, value) in parts.dropFirst().compactMap(parameter) {
                switch key {
                case "q": quota = digits(value)
                case "w": window = digits(value)
                default: continue
                }
            }
            guard let quota, let window, quotaRange.contains(quota), windowSecondsRange.contains(window) else { continue }
            strictest = stricter(strictest, RateLimit(quota, per: .seconds(window)))
        }
        return strictest
    }

    /// A reset value: delta-seconds, or Unix time in seconds (from 10^9) or milliseconds (from 10^12).
    static func reset(_ text: String, now: Date) -> Duration? {
        guard let value = digits(text, maximumDigits: 15) else { return nil }
        if value >= 1_000_000_000_000 { return .saturating(seconds: Double(value) / 1000 - now.timeIntervalSince1970) }
        if value >= 1_000_000_000 { return .saturating(seconds: Double(value) - now.timeIntervalSince1970) }
        return .seconds(value)
    }

    /// The smaller remaining and, when it is the limiting one, its reset.
    private static func merge(_ other: Reading, into reading: inout Reading) {
        if let remaining = other.remaining {
            if reading.remaining.map({ remaining < $0 }) ?? true {
                reading.remaining = remaining
                if let reset = other.reset { reading.reset = reset }
            } else if remaining == reading.remaining, let reset = other.reset {
                reading.reset = max(reading.reset ?? .zero, reset)
            }
        } else if let reset = other.reset {
            reading.reset = max(reading.reset ?? .zero, reset)
        }
        if let policy = other.policy { reading.policy = stricter(reading.policy, policy) }
    }

    /// The limit that allows fewer requests per second (compared exactly, in whole seconds).
    private static func stricter(_ one: RateLimit?, _ other: RateLimit) -> RateLimit {
        guard let one else { return other }
        let oneWindow = one.window.components.seconds, otherWindow = other.window.components.seconds
        // count / window: both at most 10^6 and 86,400, so the products cannot overflow.
        return Int64(one.count) * otherWindow <= Int64(other.count) * oneWindow ? one : other
    }

    /// The members of a list, split at commas outside quoted strings; none when the line is too long.
    private static func members(of line: String) -> [Substring] {
        guard line.utf8.count <= maximumFieldLength else { return [] }
        return Array(split(line[...], on: UInt8(ascii: ",")).prefix(maximumMembers))
    }

    /// `text` split at `separator` outside double-quoted strings, each part trimmed.
    private static func split(_ text: Substring, on separator: UInt8) -> [Substring] {
        var parts: [Substring] = []
        var start = text.startIndex
        var quoted = false
        var escaped = false
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text.utf8[index]
            if escaped {
                escaped = false
            } else if quoted, byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                quoted.toggle()
            } else if !quoted, byte == separator {
                parts.append(trimmed(text[start..<index]))
                start = text.utf8.index(after: index)
            }
            index = text.utf8.index(after: index)
        }
        parts.append(trimmed(text[start...]))
        return parts.filter { !$0.isEmpty }
    }

    /// `key=value`, the key lowercased; `nil` for anything else.
    private static func parameter(_ text: Substring) -> (String, Substring)? {
        guard !text.hasPrefix("\""), let equals = text.firstIndex(of: "=") else { return nil }
        return (trimmed(text[..<equals]).lowercased(), trimmed(text[text.index(after: equals)...]))
    }

    private static func trimmed(_ text: Substring) -> Substring {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) }) else { return "" }
        return text[first...last]
    }

    /// Digits only (whitespace around them allowed), at most `maximumDigits` of them; with the
    /// default ten, saturating at 2^31 like delta-seconds.
    static func digits<Text: StringProtocol>(_ text: Text, maximumDigits: Int = 10) -> Int? {
        let digits = trimmed(Substring(text))
        guard !digits.isEmpty, digits.utf8.count <= maximumDigits, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let value = digits.utf8.reduce(0) { $0 * 10 + Int($1 - 0x30) }  // at most 15 digits: far from overflow
        return maximumDigits <= 10 ? min(value, DeltaSeconds.maximum) : value
    }
}
