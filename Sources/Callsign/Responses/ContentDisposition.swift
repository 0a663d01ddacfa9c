package import Foundation

/// Reads the file name a server suggests in `Content-Disposition` (RFC 6266, with RFC 8187's
/// `filename*`), and turns any suggested name into a plain file name safe to create in the
/// current folder. The field is outside input: it is bounded (``maximumFieldSize`` bytes,
/// ``maximumParameters`` parameters) and never traps.
///
/// ```swift
/// ContentDisposition.fileName(in: "attachment; filename*=UTF-8''%e2%82%ac%20rates.txt")  // "€ rates.txt"
/// ContentDisposition.safeFileName("../../etc/passwd")  // "passwd"
/// ```
package enum ContentDisposition {
    /// A longer field is ignored.
    package static let maximumFieldSize = 8192
    /// Parameters past this many are not read.
    package static let maximumParameters = 32
    /// The most UTF-8 bytes a file name may have (most file systems' limit).
    package static let maximumNameBytes = 255

    /// The name the field suggests, as sent (not yet made safe): a valid `filename*` (UTF-8 or
    /// ISO-8859-1) wins over `filename`; `nil` when there is none or the field is too large.
    package static func fileName(in field: String) -> String? {
        let bytes = Array(field.utf8)
        guard bytes.count <= maximumFieldSize else { return nil }
        var extended: String?
        var plain: String?
        var index = 0
        // The disposition type: a token up to the first ';'.
        while index < bytes.count, bytes[index] != UInt8(ascii: ";") { index += 1 }
        var parameters = 0
        while index < bytes.count, parameters < maximumParameters {
            index += 1  // past ';'
            parameters += 1
            skipSpace(bytes, &index)
            let nameStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "="), bytes[index] != UInt8(ascii: ";") { index += 1 }
            let name = String(decoding: bytes[nameStart..<index], as: UTF8.self)
                .trimmingCharacters(in: .whitespaces).lowercased()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { continue }
            index += 1
            skipSpace(bytes, &index)
            var value: [UInt8] = []
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count { index += 1 }
                    value.append(bytes[index])
                    index += 1
                }
                if index < bytes.count { index += 1 }  // past the closing quote
                while index < bytes.count, bytes[index] != UInt8(ascii: ";") { index += 1 }
            } else {
                let start = index
                while index < bytes.count, bytes[index] != UInt8(ascii: ";") { index += 1 }
                value = Array(bytes[start..<index])
                while let last = value.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { value.removeLast() }
            }
            if name == "filename*", extended == nil {
                extended = extendedValue(value)
            } else if name == "filename", plain == nil {
                plain = String(bytes: value, encoding: .utf8) ?? latin1(value)
            }
        }
        return extended ?? plain
    }

    /// A plain name for a file in the current folder, or `nil` when nothing usable is left: the
    /// path before the last `/` or `\` is dropped, control and invisible formatting characters
    /// become `_`, spaces at either end and leading dots (`..`, a hidden `.name`) are removed, and
    /// the name is cut to ``maximumNameBytes`` UTF-8 bytes, keeping a short extension.
    ///
    /// Nothing is expanded: `~` and `~user` stay the literal names `~` and `~user`, as `curl -OJ`
    /// and `wget --content-disposition` keep them. A caller joins the result to a folder as one
    /// path component, never through a path parser that expands a tilde (Foundation's
    /// `URL(fileURLWithPath:)` turns `~root` into `/root`).
    package static func safeFileName(_ suggested: String) -> String? {
        // Scalar by scalar, not by Character: a "/" or "." joined with a combining mark into one
        // Character is still a "/" or "." to the file system.
        var scalars: [Unicode.Scalar] = []
        for scalar in suggested.unicodeScalars {
            if scalar == "/" || scalar == "\\" {
                scalars.removeAll(keepingCapacity: true)
                continue
            }
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned, .privateUse:
                scalars.append("_")
            default:
                scalars.append(scalar)
            }
        }
        // Leading dots (". .bashrc" too) and spaces at either end go.
        var first = 0
        while first < scalars.count, scalars[first] == "." || scalars[first].properties.isWhitespace { first += 1 }
        var last = scalars.count
        while last > first, scalars[last - 1].properties.isWhitespace { last -= 1 }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[first..<last])
        let name = String(view)
        guard !name.isEmpty else { return nil }
        return truncated(name)
    }

    /// The file name for a download: the field's name, else the URL's last path segment
    /// (percent-decoded), else `download` — always made safe by ``safeFileName(_:)``.
    package static func downloadName(field: String?, url: URL?) -> String {
        if let field, let suggested = fileName(in: field), let safe = safeFileName(suggested) { return safe }
        if let url {
            let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
            let segment = path.split(separator: "/").last.map(String.init) ?? ""
            let decoded = segment.removingPercentEncoding ?? segment
            if let safe = safeFileName(decoded) { return safe }
        }
        return "download"
    }

    private static func skipSpace(_ bytes: [UInt8], _ index: inout Int) {
        while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") { index += 1 }
    }

    /// `charset'language'percent-encoded` (RFC 8187); `nil` for another charset or a bad escape.
    private static func extendedValue(_ value: [UInt8]) -> String? {
        let parts = value.split(separator: UInt8(ascii: "'"), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = String(decoding: parts[0], as: UTF8.self).lowercased()
        var decoded: [UInt8] = []
        var index = parts[2].startIndex
        let encoded = parts[2]
        while index < encoded.endIndex {
            let byte = encoded[index]
            if byte == UInt8(ascii: "%") {
                guard encoded.distance(from: index, to: encoded.endIndex) >= 3, let high = hex(encoded[index + 1]), let low = hex(encoded[index + 2])
                else { return nil }
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(byte)
                index += 1
            }
        }
        switch charset {
        case "utf-8": return String(bytes: decoded, encoding: .utf8)
        case "iso-8859-1": return latin1(decoded)
        default: return nil
        }
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func latin1(_ bytes: [UInt8]) -> String {
        String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    /// Cut to ``maximumNameBytes`` at a character boundary, keeping an extension of up to 16 bytes.
    private static func truncated(_ name: String) -> String {
        guard name.utf8.count > maximumNameBytes else { return name }
        if let dot = name.lastIndex(of: "."), name.utf8.distance(from: dot, to: name.endIndex) <= 16 {
            let ext = String(name[dot...])
            let stem = prefix(of: String(name[..<dot]), bytes: maximumNameBytes - ext.utf8.count)
            if !stem.isEmpty { return stem + ext }
        }
        return prefix(of: name, bytes: maximumNameBytes)
    }

    /// The longest run of whole Unicode scalars from the start that fits in `bytes` UTF-8 bytes.
    private static func prefix(of text: String, bytes: Int) -> String {
        var kept = String.UnicodeScalarView()
        var used = 0
        for scalar in text.unicodeScalars {
            let size = String(scalar).utf8.count
            guard used + size <= bytes else { break }
            kept.append(scalar)
            used += size
        }
        return String(kept)
    }
}
