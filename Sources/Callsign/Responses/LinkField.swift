import Foundation

/// The `Link` header field (RFC 8288 §3): `<https://api.example.com/items?page=2>; rel="next"`.
///
/// A bounded reader: at most ``maximumLength`` bytes of field text, ``maximumLinks`` links and
/// ``maximumParameters`` parameters per link are read; the rest is ignored. A link that does not
/// parse is skipped, never trapped on. Commas and semicolons inside `<…>` and quoted strings are
/// part of them, as the grammar says.
enum LinkField {
    /// One link: its target as written and its relation types, lower-cased.
    struct Link: Sendable, Hashable {
        var target: String
        var relations: [String]
    }

    static let maximumLength = 16 * 1024
    static let maximumLinks = 64
    static let maximumParameters = 32

    /// The links in `text` (all `Link` field lines joined with `, `), in order.
    static func parse(_ text: String) -> [Link] {
        var bytes = ArraySlice(text.utf8.prefix(maximumLength))
        var links: [Link] = []
        while links.count < maximumLinks {
            skip(&bytes) { $0 == 0x20 || $0 == 0x09 || $0 == UInt8(ascii: ",") }
            guard let first = bytes.first else { break }
            guard first == UInt8(ascii: "<") else {
                skipValue(&bytes)
                continue
            }
            bytes.removeFirst()
            guard let close = bytes.firstIndex(of: UInt8(ascii: ">")) else { break }
            let target = String(decoding: bytes[..<close], as: UTF8.self)
            bytes = bytes[bytes.index(after: close)...]
            var relations: [String] = []
            var parameters = 0
            var seenRel = false
            while parameters < maximumParameters {
                skip(&bytes) { $0 == 0x20 || $0 == 0x09 }
                guard bytes.first == UInt8(ascii: ";") else { break }
                bytes.removeFirst()
                parameters += 1
                skip(&bytes) { $0 == 0x20 || $0 == 0x09 }
                let name = token(&bytes).lowercased()
                skip(&bytes) { $0 == 0x20 || $0 == 0x09 }
                var value = ""
                if bytes.first == UInt8(ascii: "=") {
                    bytes.removeFirst()
                    skip(&bytes) { $0 == 0x20 || $0 == 0x09 }
                    value = bytes.first == UInt8(ascii: "\"") ? quoted(&bytes) : token(&bytes)
                }
                // RFC 8288 §3.3: only the first rel parameter counts.
                if name == "rel", !seenRel {
                    seenRel = true
                    relations = value.lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" }).prefix(maximumParameters).map(String.init)
                }
            }
            // Whatever is left of this link-value up to the next comma is not ours to read.
            skipValue(&bytes)
            links.append(Link(target: target, relations: relations))
        }
        return links
    }

    /// The target of the first link whose relations include `relation`, resolved against `base`.
    static func target(_ relation: String, in text: String, relativeTo base: URL?) -> URL? {
        guard let link = parse(text).first(where: { $0.relations.contains(relation) }) else { return nil }
        return URL(string: link.target, relativeTo: base)?.absoluteURL
    }

    private static func skip(_ bytes: inout ArraySlice<UInt8>, while matches: (UInt8) -> Bool) {
        while let byte = bytes.first, matches(byte) { bytes.removeFirst() }
    }

    /// RFC 9110 token characters.
    private static func token(_ bytes: inout ArraySlice<UInt8>) -> String {
        let end = bytes.firstIndex { byte in
            !(byte > 0x20 && byte < 0x7F && !"\"(),/:;<=>?@[\\]{}".utf8.contains(byte))
        } ?? bytes.endIndex
        defer { bytes = bytes[end...] }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    /// A quoted string, its escapes undone; an unterminated one runs to the end.
    private static func quoted(_ bytes: inout ArraySlice<UInt8>) -> String {
        bytes.removeFirst()
        var value: [UInt8] = []
        while let byte = bytes.popFirst() {
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\"), let escaped = bytes.popFirst() {
                value.append(escaped)
            } else {
                value.append(byte)
            }
        }
        return String(decoding: value, as: UTF8.self)
    }

    /// Skips to the comma that ends this link-value, stepping over quoted strings and `<…>`.
    private static func skipValue(_ bytes: inout ArraySlice<UInt8>) {
        while let byte = bytes.first {
            switch byte {
            case UInt8(ascii: ","): return
            case UInt8(ascii: "\""): _ = quoted(&bytes)
            case UInt8(ascii: "<"):
                bytes.removeFirst()
                if let close = bytes.firstIndex(of: UInt8(ascii: ">")) { bytes = bytes[bytes.index(after: close)...] } else { bytes = [] }
            default: bytes.removeFirst()
            }
        }
    }
}
