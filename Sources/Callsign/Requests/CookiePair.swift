/// One `name=value` pair for a `Cookie` header that cannot end its cookie or start another,
/// for cookies a client sends by itself (an API key in a cookie, an OpenAPI cookie parameter).
///
/// A value made of RFC 6265 `cookie-octet`s (no control character, space, `"`, `,`, `;` or
/// `\`) is sent byte for byte; any other byte is percent-encoded, as OpenAPI's `form` style
/// (RFC 6570) and cookie parsers expect. A name that is not a token is refused.
package enum CookiePair {
    /// The pair `name=value`, the value encoded.
    ///
    /// - Throws: ``APIError/Code/invalidRequest`` when `name` is not a token.
    package static func encode(name: String, value: String) throws(APIError) -> String {
        try checkName(name)
        return "\(name)=\(encoded(value))"
    }

    /// Refuses a name that is not an RFC 9110 token.
    package static func checkName(_ name: String) throws(APIError) {
        let separators = Set("()<>@,;:\\\"/[]?={}".utf8)
        guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !separators.contains($0) }) else {
            throw APIError(.invalidRequest, localized: "the cookie name \(String(reflecting: name)) is not a token (RFC 6265), so it cannot be sent")
        }
    }

    /// Percent-encodes each UTF-8 byte that is not an RFC 6265 `cookie-octet` (and `=` too, for
    /// an item of a list, so that not even a parser that splits at commas sees a second cookie).
    package static func encoded(_ text: String, encodingEquals: Bool = false) -> String {
        let hex = Array("0123456789ABCDEF".unicodeScalars)
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            let octet = byte == 0x21 || (0x23...0x2B).contains(byte) || (0x2D...0x3A).contains(byte) || (0x3C...0x5B).contains(byte)
                || (0x5D...0x7E).contains(byte)
            if octet && !(encodingEquals && byte == UInt8(ascii: "=")) {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                result.unicodeScalars.append("%")
                result.unicodeScalars.append(hex[Int(byte >> 4)])
                result.unicodeScalars.append(hex[Int(byte & 0x0F)])
            }
        }
        return result
    }
}
