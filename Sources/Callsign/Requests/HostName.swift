import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one door for the host of a URL Callsign sends to, whoever wrote the URL (code, a
/// definitions file, an OpenAPI document, the command line, a redirect's `Location`).
///
/// A host reaches the wire as ASCII, as curl sends it:
/// - a name in any script as IDNA A-labels (RFC 5891, with UTS 46's mapping as Foundation's
///   `URLComponents.encodedHost` applies it): `bücher.test` → `xn--bcher-kva.test`;
/// - a name escaped in the URL (`b%C3%BCcher.test`, RFC 3986 §3.2.2) decoded first, then the same;
/// - an IPv6 literal in brackets (`[::1]`), checked to be an address: IPvFuture and zone
///   identifiers (RFC 6874) are refused, since neither transport can send to them.
///
/// The cookie jar, the origin checks and the proxy bypass read `URL.host`, which Foundation
/// gives in the same A-label form, so a cookie's domain and a session's origin always agree.
enum HostName {
    /// Bytes of a name as it may go on the wire: letters, digits, `-`, `.` and `_`
    /// (service names such as `_dmarc`).
    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }

    /// The host of `components` as it goes into the request's authority and `Host` field.
    ///
    /// - Parameter described: the URL as the user wrote it, for the error.
    /// - Throws: ``APIError/Code/invalidRequest`` for a URL without a host, a name that has no
    ///   IDNA form, or a bracketed literal that is not an IPv6 address.
    static func wireForm(of components: URLComponents, described: String) throws(APIError) -> String {
        // The "host" of http+unix:// is the socket's path, percent-encoded: not a name.
        if URLScheme.isUnixSocket(components.scheme), let socket = components.percentEncodedHost, !socket.isEmpty {
            return socket
        }
        // Most hosts are plain ASCII names, which Foundation gives as they are.
        if let plain = components.percentEncodedHost, !plain.isEmpty, !plain.utf8.contains(UInt8(ascii: "%")) {
            if plain.utf8.first == UInt8(ascii: "[") { return try addressLiteral(plain, described: described) }
            if plain.utf8.allSatisfy(isNameByte) { return plain }
        }
        // A name in another script (which Foundation percent-encodes here), an escape, or an
        // A-label (which Foundation shows decoded here): encodedHost is the IDNA form.
        guard let encoded = components.encodedHost, !encoded.isEmpty else {
            throw APIError(.invalidRequest, localized: "the URL \"\(described)\" has no host")
        }
        if encoded.utf8.first == UInt8(ascii: "[") { return try addressLiteral(encoded, described: described) }
        if encoded.utf8.allSatisfy(isNameByte) { return encoded }
        guard let name = idnaForm(ofEscaped: encoded) else {
            throw APIError(.invalidRequest, localized: "the host of the URL \"\(described)\" is not a valid host name")
        }
        return name
    }

    /// `text` (a name, possibly escaped or in another script) in its ASCII form, or `nil` when it
    /// is not a valid host name. For names that arrive outside a URL: a cookie's `Domain`, a
    /// `NO_PROXY` entry.
    ///
    /// ```swift
    /// HostName.asciiForm("Bücher.test")   // "xn--bcher-kva.test"
    /// ```
    static func asciiForm(_ text: String) -> String? {
        if !text.isEmpty, text.utf8.allSatisfy(isNameByte) { return text }
        return idnaForm(ofEscaped: text)
    }

    /// Decodes `%XX` escapes and converts what is left to A-labels; `nil` unless the result is a
    /// plain name.
    private static func idnaForm(ofEscaped text: String) -> String? {
        guard text.utf8.count <= 1_024, let decoded = text.removingPercentEncoding, !decoded.isEmpty,
            // What would end or change the authority cannot be part of a name.
            !decoded.unicodeScalars.contains(where: { $0.isASCII && !isNameByte(UInt8($0.value)) })
        else { return nil }
        if decoded.utf8.allSatisfy(isNameByte) { return decoded }
        guard let converted = URLComponents(string: "http://\(decoded)/")?.encodedHost, !converted.isEmpty,
            converted.utf8.allSatisfy(isNameByte)
        else { return nil }
        return converted
    }

    /// A bracketed IPv6 literal, checked, lower-cased and still in brackets.
    private static func addressLiteral(_ text: String, described: String) throws(APIError) -> String {
        let inner = text.dropFirst().dropLast()
        guard text.utf8.last == UInt8(ascii: "]"), IPAddress(String(inner))?.isVersion6 == true else {
            throw APIError(
                .invalidRequest,
                localized: "the host \(text) of the URL \"\(described)\" is not an IPv6 address (zone identifiers and IPvFuture literals are not supported)")
        }
        return text.lowercased()
    }
}

/// An IPv4 or IPv6 address, read strictly (`inet_pton`): `127.0.0.1`, `::1`, `::ffff:10.0.0.1`.
/// Not `127.1`, `0x7f.0.0.1` or octal forms, which some resolvers read differently.
struct IPAddress: Hashable, Sendable {
    /// 4 bytes for IPv4, 16 for IPv6, network order.
    let bytes: [UInt8]

    var isVersion6: Bool { bytes.count == 16 }

    /// Reads `text` (without brackets); `nil` if it is not an address.
    init?(_ text: String) {
        guard !text.isEmpty, text.utf8.count <= 64, !text.utf8.contains(0) else { return nil }
        if let bytes = Self.parse(text, family: AF_INET, size: 4) {
            self.bytes = bytes
        } else if let bytes = Self.parse(text, family: AF_INET6, size: 16) {
            self.bytes = bytes
        } else {
            return nil
        }
    }

    private static func parse(_ text: String, family: Int32, size: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let parsed = buffer.withUnsafeMutableBytes { raw in
            text.withCString { inet_pton(family, $0, raw.baseAddress) }
        }
        return parsed == 1 ? Array(buffer.prefix(size)) : nil
    }

    /// Whether the first `prefixLength` bits of this address equal those of `network` (a CIDR
    /// block such as `10.0.0.0/8`); addresses of different versions never match.
    func isIn(_ network: IPAddress, prefixLength: Int) -> Bool {
        guard bytes.count == network.bytes.count, prefixLength >= 0, prefixLength <= bytes.count * 8 else { return false }
        let whole = prefixLength / 8
        guard bytes.prefix(whole) == network.bytes.prefix(whole) else { return false }
        let rest = prefixLength % 8
        guard rest > 0 else { return true }
        let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - rest))
        return bytes[whole] & mask == network.bytes[whole] & mask
    }
}
