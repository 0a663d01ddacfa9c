import Foundation

// JSON text to `JSONValue` and back, without `JSONDecoder`/`JSONEncoder`: they would turn every
// number into an `Int` or a `Double` and so rewrite `12345678901234567890` and `1.50`. The output
// is byte for byte what `JSONEncoder` writes with `.sortedKeys` and `.withoutEscapingSlashes`
// (and `.prettyPrinted`), for every value those types can hold.

extension JSONValue {
    /// Parses RFC 8259 JSON text: any value at the top, UTF-8 with an optional byte-order mark,
    /// nesting up to `maximumDepth` levels, the first of repeated object keys kept (as
    /// `JSONDecoder` does).
    init(parsingText bytes: some Collection<UInt8>, maximumDepth: Int) throws(JSONTextError) {
        var parser = JSONTextParser(Array(bytes), maximumDepth: maximumDepth)
        self = try parser.document()
    }

    /// Appends the JSON text of this value.
    func write(to output: inout [UInt8], pretty: Bool, indent: Int = 0) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value): output.append(contentsOf: String(value).utf8)
        case .double(let value): output.append(contentsOf: Self.text(of: value).utf8)
        case .number(let value): output.append(contentsOf: value.text.utf8)
        case .string(let value): Self.write(string: value, to: &output)
        case .array(let elements):
            Self.writeContainer("[", "]", elements, to: &output, pretty: pretty, indent: indent) { element, output in
                element.write(to: &output, pretty: pretty, indent: indent + 2)
            }
        case .object(let members):
            Self.writeContainer("{", "}", members.keys.sorted(), to: &output, pretty: pretty, indent: indent) { key, output in
                Self.write(string: key, to: &output)
                output += pretty ? Array(" : ".utf8) : [UInt8(ascii: ":")]
                members[key]?.write(to: &output, pretty: pretty, indent: indent + 2)
            }
        }
    }

    /// An array or an object: its items between `open` and `close`, separated by commas, each on
    /// its own line two spaces in when `pretty` (an empty one as `JSONEncoder` writes it).
    private static func writeContainer<Item>(
        _ open: Unicode.Scalar, _ close: Unicode.Scalar, _ items: [Item],
        to output: inout [UInt8], pretty: Bool, indent: Int,
        item writeItem: (Item, inout [UInt8]) -> Void
    ) {
        output.append(UInt8(ascii: open))
        if items.isEmpty {
            if pretty { emptyLines(&output, indent: indent) }
        } else {
            for (index, item) in items.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                if pretty { newline(&output, indent: indent + 2) }
                writeItem(item, &output)
            }
            if pretty { newline(&output, indent: indent) }
        }
        output.append(UInt8(ascii: close))
    }

    /// A double as `JSONEncoder` writes it: the shortest text that reads back the same, without
    /// a trailing `.0`; `null` for infinities and NaN, which JSON cannot carry.
    static func text(of value: Double) -> String {
        guard value.isFinite else { return "null" }
        let text = value.description
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    private static func newline(_ output: inout [UInt8], indent: Int) {
        output.append(UInt8(ascii: "\n"))
        output += repeatElement(UInt8(ascii: " "), count: indent)
    }

    /// JSONEncoder writes an empty container as an opening line, an empty line and the close.
    private static func emptyLines(_ output: inout [UInt8], indent: Int) {
        output += [UInt8(ascii: "\n"), UInt8(ascii: "\n")]
        output += repeatElement(UInt8(ascii: " "), count: indent)
    }

    private static func write(string: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): output += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: output += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: output += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: output += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x08: output += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: output += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                output += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}

/// Why text is not JSON, with the byte offset where reading stopped.
struct JSONTextError: Error, CustomStringConvertible {
    let problem: String
    let offset: Int

    var description: String { "\(problem) at byte \(offset)" }

    /// The 1-based line and column of the offset in `bytes`.
    func position(in bytes: some Collection<UInt8>) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for byte in bytes.prefix(offset) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return (line, column)
    }
}

/// A recursive-descent reader over UTF-8 bytes; the depth bound keeps the recursion small.
private struct JSONTextParser {
    let bytes: [UInt8]
    let maximumDepth: Int
    var index = 0
    var depth = 0

    init(_ bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
    }

    mutating func document() throws(JSONTextError) -> JSONValue {
        let value = try self.value()
        skipSpace()
        guard index == bytes.count else { throw failure("unexpected text after the value") }
        return value
    }

    private func failure(_ problem: String) -> JSONTextError { JSONTextError(problem: problem, offset: index) }

    private mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private mutating func expect(_ word: String, _ value: JSONValue) throws(JSONTextError) -> JSONValue {
        let expected = Array(word.utf8)
        guard bytes[index...].starts(with: expected) else { throw failure("unexpected character") }
        index += expected.count
        return value
    }

    private mutating func value() throws(JSONTextError) -> JSONValue {
        skipSpace()
        guard index < bytes.count else { throw failure("unexpected end of text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try nested { (parser: inout JSONTextParser) throws(JSONTextError) in try parser.object() }
        case UInt8(ascii: "["): return try nested { (parser: inout JSONTextParser) throws(JSONTextError) in try parser.array() }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("unexpected character")
        }
    }

    private mutating func nested(
        _ read: (inout JSONTextParser) throws(JSONTextError) -> JSONValue
    ) throws(JSONTextError) -> JSONValue {
        depth += 1
        guard depth <= maximumDepth else { throw failure("it nests deeper than \(maximumDepth) levels (Limits.maximumJSONDepth)") }
        defer { depth -= 1 }
        index += 1
        return try read(&self)
    }

    private mutating func array() throws(JSONTextError) -> JSONValue {
        var elements: [JSONValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try value())
            if try ends(at: "]", in: "an array") { return .array(elements) }
        }
    }

    private mutating func object() throws(JSONTextError) -> JSONValue {
        var members: [String: JSONValue] = [:]
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a key in an object") }
            let key = try string()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected : after a key") }
            index += 1
            let element = try value()
            if members[key] == nil { members[key] = element }
            if try ends(at: "}", in: "an object") { return .object(members) }
        }
    }

    /// After an element of `container`: `true` at its closing byte, `false` at a comma (another
    /// element follows), an error for anything else.
    private mutating func ends(at close: Unicode.Scalar, in container: String) throws(JSONTextError) -> Bool {
        skipSpace()
        guard index < bytes.count else { throw failure("unexpected end of text in \(container)") }
        switch bytes[index] {
        case UInt8(ascii: ","):
            index += 1
            return false
        case UInt8(ascii: close):
            index += 1
            return true
        default:
            throw failure("expected , or \(close) in \(container)")
        }
    }

    private mutating func number() throws(JSONTextError) -> JSONValue {
        let start = index
        var scanner = JSONNumber.Scanner(bytes[index...])
        guard scanner.scanNumber() else {
            index = scanner.index
            throw failure("malformed number")
        }
        index = scanner.index
        return JSONNumber(checked: String(decoding: bytes[start..<index], as: UTF8.self)).value
    }

    private mutating func string() throws(JSONTextError) -> String {
        index += 1
        let start = index
        // Most strings have no escape: their bytes are the string.
        while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\"), bytes[index] >= 0x20 {
            index += 1
        }
        guard index < bytes.count else { throw failure("unterminated string") }
        var buffer = Array(bytes[start..<index])
        while bytes[index] != UInt8(ascii: "\"") {
            let byte = bytes[index]
            guard byte >= 0x20 else { throw failure("a control character in a string must be escaped") }
            index += 1
            if byte == UInt8(ascii: "\\") {
                try escape(into: &buffer)
            } else {
                buffer.append(byte)
            }
            guard index < bytes.count else { throw failure("unterminated string") }
        }
        index += 1
        guard let text = String(validating: buffer, as: UTF8.self) else { throw failure("a string is not valid UTF-8") }
        return text
    }

    private mutating func escape(into buffer: inout [UInt8]) throws(JSONTextError) {
        guard index < bytes.count else { throw failure("unterminated string") }
        let letter = bytes[index]
        index += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(letter)
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard bytes[index...].starts(with: [UInt8(ascii: "\\"), UInt8(ascii: "u")]) else {
                    throw failure("a high surrogate without its low surrogate")
                }
                index += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw failure("a high surrogate without its low surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw failure("a low surrogate without its high surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("an invalid \\u escape") }
            buffer += Array(String(Character(unicode)).utf8)
        default:
            index -= 1
            throw failure("an invalid escape")
        }
    }

    private mutating func hex4() throws(JSONTextError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("an incomplete \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("an invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
