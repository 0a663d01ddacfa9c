import Foundation

// The in-place masking of secret JSON members (a recording keeps the server's bytes, secrets
// aside), and the scan over JSON text that finds them, which `secretValues(inBody:contentType:)`
// uses too.
extension Redaction {
    /// JSON text with the value of every member whose name `isSecret` replaced, in place, by the
    /// string `"REDACTED"` (a `null` stays `null`), and every other byte as it was: the server's
    /// spacing, key order, escapes and number text, so that a recording is the answer that was
    /// received, secrets aside. `nil` when nothing is replaced or `data` is not JSON.
    ///
    /// The text is first checked by ``JSONText/isValid(_:)`` (RFC 8259, at most
    /// ``JSONText/maximumDepth`` deep; a leading byte-order mark is allowed, as RFC 8259 §8.1 lets
    /// a parser do). What follows only walks text already known to be JSON: it finds strings,
    /// brackets, colons and commas, and never reads a value it does not replace. A member name
    /// with an escape is read by ``JSONValue``, the one JSON reader. Every occurrence of a
    /// repeated name is masked, not only the one a reader keeps.
    static func maskingJSONMembers(of data: Data, where isSecret: (String) -> Bool) -> Data? {
        let bytes = [UInt8](data)
        guard let replaced = JSONScan.secretValues(in: bytes, where: isSecret) else { return nil }
        guard !replaced.isEmpty else { return nil }
        let placeholder = Array("\"\(Self.placeholder)\"".utf8)
        var result = Data()
        result.reserveCapacity(bytes.count)
        var copied = 0
        for range in replaced {
            result.append(contentsOf: bytes[copied..<range.lowerBound])
            result.append(contentsOf: placeholder)
            copied = range.upperBound
        }
        result.append(contentsOf: bytes[copied...])
        return result
    }
}

/// Steps over JSON text already checked by ``JSONText/isValid(_:)``, for
/// ``Redaction/maskingJSONMembers(of:where:)``: each step stops at the end of the bytes, so even
/// text that is not JSON could only end a walk early, never read past it.
enum JSONScan {
    /// The byte ranges of the values of members whose name `isSecret` (a `null` is left out), in
    /// order; `nil` when `bytes` is not JSON (RFC 8259, at most ``JSONText/maximumDepth`` deep,
    /// after an optional byte-order mark).
    static func secretValues(in bytes: [UInt8], where isSecret: (String) -> Bool) -> [Range<Int>]? {
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        guard JSONText.isValid(Data(bytes[start...])) else { return nil }
        var replaced: [Range<Int>] = []
        var objects: [Bool] = []  // one per open container: true for an object
        var expectsName = false
        var nameIsSecret = false
        var valueIsSecret = false
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                let end = stringEnd(bytes, from: index)
                if expectsName {
                    nameIsSecret = isSecret(name(bytes[index..<end]))
                    expectsName = false
                } else if valueIsSecret {
                    replaced.append(index..<end)
                    valueIsSecret = false
                }
                index = end
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                if valueIsSecret {
                    let end = containerEnd(bytes, from: index)
                    replaced.append(index..<end)
                    valueIsSecret = false
                    index = end
                } else {
                    objects.append(bytes[index] == UInt8(ascii: "{"))
                    expectsName = bytes[index] == UInt8(ascii: "{")
                    index += 1
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                _ = objects.popLast()
                expectsName = false
                index += 1
            case UInt8(ascii: ","):
                expectsName = objects.last == true
                index += 1
            case UInt8(ascii: ":"):
                valueIsSecret = nameIsSecret
                index += 1
            case 0x20, 0x09, 0x0A, 0x0D:
                index += 1
            default:
                // A number, `true`, `false` or `null`: it ends at the next space or punctuation.
                var end = index + 1
                while end < bytes.count, !endsScalar(bytes[end]) { end += 1 }
                if valueIsSecret, !bytes[index..<end].elementsEqual("null".utf8) { replaced.append(index..<end) }
                valueIsSecret = false
                index = end
            }
        }
        return replaced
    }

    /// The index after the string whose opening quote is at `start`.
    static func stringEnd(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return bytes.count
    }

    /// The index after the object or array that opens at `start`.
    static func containerEnd(_ bytes: [UInt8], from start: Int) -> Int {
        var depth = 0
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index = stringEnd(bytes, from: index)
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 { return index + 1 }
            default:
                break
            }
            index += 1
        }
        return bytes.count
    }

    /// Whether `byte` ends a number or a literal.
    static func endsScalar(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"): true
        default: false
        }
    }

    /// A string from its token, quotes included (a member name, a secret value): its bytes when
    /// it has no escape, else as the JSON reader decodes it.
    static func name(_ token: ArraySlice<UInt8>) -> String {
        guard token.count >= 2 else { return "" }
        let inner = token.dropFirst().dropLast()
        guard inner.contains(UInt8(ascii: "\\")) else { return String(decoding: inner, as: UTF8.self) }
        return (try? JSONValue(parsing: Data(token)))?.stringValue ?? ""
    }
}
