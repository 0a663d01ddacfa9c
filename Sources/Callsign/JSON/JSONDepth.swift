import Foundation

/// How deeply a JSON text nests, measured without parsing it: a single pass over the bytes
/// that skips strings. Foundation's parser refuses documents nested deeper than 512 levels by
/// itself; this check serves lower limits (``Limits/maximumJSONDepth``) at a cost of one
/// read of the bytes, and stops at the first level past the limit.
enum JSONDepth {
    /// The depth Foundation's JSON parser enforces on its own.
    static let foundationLimit = 512

    /// Throws ``APIError/Code/decoding`` when `data` nests arrays and objects deeper than
    /// `limit`. Does nothing when Foundation's own limit is as strict.
    static func check(_ data: Data, limit: Int) throws(APIError) {
        guard limit < foundationLimit, exceeds(data, limit: limit) else { return }
        throw APIError(.decoding, localized: "the body nests arrays and objects deeper than \(limit) levels (Limits.maximumJSONDepth)")
    }

    /// Whether `data` nests deeper than `limit`.
    static func exceeds(_ data: Data, limit: Int) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in data {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return false
    }
}
