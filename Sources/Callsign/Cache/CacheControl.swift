import Foundation

/// The directives of a `Cache-Control` field (RFC 9111 §5.2), names lower-cased.
struct CacheControl: Sendable {
    private var directives: [String: String?] = [:]

    /// Longer values are read only this far: no real directive list comes close, and a hostile
    /// megabyte must not cost a megabyte of work per cache lookup.
    static let maximumLength = 4096
    /// At most this many directives are kept.
    static let maximumDirectives = 64

    init(_ field: String?) {
        guard let field else { return }
        let value = field.utf8.count > Self.maximumLength ? String(decoding: field.utf8.prefix(Self.maximumLength), as: UTF8.self) : field
        for item in Self.split(value).prefix(Self.maximumDirectives) {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard let rawName = parts.first else { continue }
            let name = rawName.trimmingCharacters(in: .whitespaces).lowercased()
            guard !name.isEmpty else { continue }
            var argument: String?
            if parts.count == 2 {
                var text = parts[1].trimmingCharacters(in: .whitespaces)
                if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") { text = String(text.dropFirst().dropLast()) }
                argument = text
            }
            // RFC 9111 §4.2.1: with duplicates, the first wins (we read the most restrictive for no-store anyway).
            if directives[name] == nil { directives[name] = .some(argument) }
        }
    }

    /// Splits on commas outside quoted strings.
    private static func split(_ value: String) -> [String] {
        var items: [String] = []
        var current = ""
        var quoted = false
        for character in value {
            if character == "\"" { quoted.toggle() }
            if character == ",", !quoted {
                items.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        items.append(current)
        return items
    }

    func has(_ name: String) -> Bool { directives[name] != nil }

    /// A delta-seconds argument; `nil` when absent or malformed (a malformed one counts as absent,
    /// except that callers treat a malformed `max-age` as stale, see ``maxAgeIsInvalid``).
    func seconds(_ name: String) -> Int? {
        guard let entry = directives[name], let text = entry else { return nil }
        return DeltaSeconds.parse(text)  // saturates at 2^31 (RFC 9111 §1.2.2)
    }

    /// `max-stale` may come without a value, meaning any staleness.
    var maxStale: Int? {
        guard let entry = directives["max-stale"] else { return nil }
        return entry == nil ? DeltaSeconds.maximum : seconds("max-stale")
    }

    /// Whether the directive is present with a value that is not delta-seconds.
    func isMalformed(_ name: String) -> Bool { has(name) && seconds(name) == nil }

    /// `no-cache` without field names applies to the whole response; with names, only to those
    /// fields — which a private cache may simply treat as the whole response.
    var noCache: Bool { has("no-cache") }
}
