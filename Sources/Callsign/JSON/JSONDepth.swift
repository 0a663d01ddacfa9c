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

    /// Decodes `data` as `T` once its depth is within `limit`: the one way the library decodes
    /// JSON it did not write (bodies, error bodies, events, WebSocket messages). `failure` words
    /// the error for the caller, from the type's name and the decoder's reason.
    ///
    /// ```swift
    /// let value = try JSONDepth.decode(Tick.self, from: data, decoder: decoder, limit: 64) { type, reason, error in
    ///     APIError(.decoding, localized: "the message could not be decoded as \(type): \(reason)", underlyingError: error)
    /// }
    /// ```
    static func decode<T: Decodable>(
        _ type: T.Type, from data: Data, decoder: JSONDecoder, limit: Int,
        failure: (_ typeName: String, _ reason: String, _ error: any Error) -> APIError
    ) throws(APIError) -> T {
        try check(data, limit: limit)
        do {
            return try decoder.decode(T.self, from: data)
        } catch {
            throw failure(Response.typeName(T.self), Response.describe(error), error)
        }
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
