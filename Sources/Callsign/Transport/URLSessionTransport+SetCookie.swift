import Foundation

// URLSession's response head as Callsign reads it: the `Set-Cookie` fields it joined, apart again.
extension URLSessionTransport {
    /// The `Set-Cookie` fields URLSession joined with commas, apart again. A comma separates two
    /// cookies only where a cookie's `name=` follows it; the comma inside an `Expires` date
    /// (`Wed, 21 Oct 2026 07:28:00 GMT`) is followed by a day number and a space, never by `=`.
    /// A cookie whose value holds `, x=` may be cut in two there: both halves are then read (or
    /// refused) by the jar's own rules, as any other `Set-Cookie`.
    ///
    /// Linear in the field's length: each byte is looked at a bounded number of times.
    static func splitJoinedSetCookie(_ text: String) -> [String] {
        let bytes = Array(text.utf8)
        var cookies: [String] = []
        var start = 0
        var index = 0
        while index < bytes.count {
            defer { index += 1 }
            guard bytes[index] == UInt8(ascii: ",") else { continue }
            var next = index + 1
            while next < bytes.count, bytes[next] == UInt8(ascii: " ") || bytes[next] == UInt8(ascii: "\t") { next += 1 }
            var end = next
            while end < bytes.count, isTokenByte(bytes[end]) { end += 1 }
            guard end > next, end < bytes.count, bytes[end] == UInt8(ascii: "=") else { continue }
            cookies.append(String(decoding: bytes[start..<index], as: UTF8.self))
            start = next
            index = next - 1
        }
        cookies.append(String(decoding: bytes[start...], as: UTF8.self))
        return cookies.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// RFC 9110 `tchar`: the bytes a cookie's name may hold.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
