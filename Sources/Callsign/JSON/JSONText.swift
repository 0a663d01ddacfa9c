public import Foundation

/// JSON text shown to a person without changing it: the same keys in the same order, the same
/// number text (`12345678901234567890` and `1.10` stay as written) and the same string escapes —
/// only the whitespace between tokens changes. It works on tokens, never by parsing into values
/// and serializing again, so nothing is lost or reordered.
///
/// ```swift
/// if let pretty = JSONText.prettyPrinted(response.body) {
///     FileHandle.standardOutput.write(pretty)
/// }
/// ```
public enum JSONText {
    /// ANSI colours for the token kinds, as `callsign` uses them on a terminal.
    public struct Colors: Sendable, Hashable {
        /// Object keys.
        public var key: String
        /// String values.
        public var string: String
        /// Numbers.
        public var number: String
        /// `true`, `false` and `null`.
        public var literal: String
        /// Braces, brackets, commas and colons.
        public var punctuation: String
        /// What ends a colour.
        public var reset: String

        /// Blue keys, green strings, cyan numbers, yellow literals, plain punctuation.
        public static let standard = Colors(
            key: "\u{1B}[34;1m", string: "\u{1B}[32m", number: "\u{1B}[36m", literal: "\u{1B}[33m", punctuation: "",
            reset: "\u{1B}[0m")

        /// Creates a palette from ANSI escape sequences.
        public init(key: String, string: String, number: String, literal: String, punctuation: String, reset: String) {
            (self.key, self.string, self.number, self.literal, self.punctuation, self.reset) =
                (key, string, number, literal, punctuation, reset)
        }
    }

    /// The deepest nesting the printer follows; deeper documents are returned as `nil`.
    public static let maximumDepth = 512

    /// `data` re-indented, one member or element per line, ending in a newline; `nil` when
    /// `data` is not exactly one JSON value in UTF-8 (or nests deeper than ``maximumDepth``),
    /// so that the caller shows it as it is.
    ///
    /// - Parameters:
    ///   - data: the JSON text, as received.
    ///   - indent: spaces per level. Default 2.
    ///   - colors: ANSI colours per token kind; `nil` (the default) for none.
    public static func prettyPrinted(_ data: Data, indent: Int = 2, colors: Colors? = nil) -> Data? {
        var printer = Printer<Writing>(indent: max(0, min(indent, 16)), colors: colors)
        guard data.withUnsafeBytes({ printer.run($0.assumingMemoryBound(to: UInt8.self)) }) else { return nil }
        return Data(printer.output)
    }

    /// Whether `data` is exactly one JSON value in UTF-8 (RFC 8259), at most ``maximumDepth`` deep.
    public static func isValid(_ data: Data) -> Bool {
        // Read where the bytes are (no copy), writing nothing: a validating tokenizer, compiled
        // without any of the printing, that allocates nothing for the first 64 levels.
        var printer = Printer<Validating>(indent: 0, colors: nil)
        return data.withUnsafeBytes { printer.run($0.assumingMemoryBound(to: UInt8.self)) }
    }

    /// Whether a printer writes what it reads or only checks it: a type rather than a flag, so
    /// that the checking printer is compiled with no output code at all.
    private protocol Output {
        static var writes: Bool { get }
    }

    private enum Writing: Output {
        static var writes: Bool { true }
    }

    private enum Validating: Output {
        static var writes: Bool { false }
    }

    private enum Container { case object, array }

    /// The open containers, innermost last, one bit each (set for an object): a word holds the
    /// first 64 levels, so checking the usual document allocates nothing.
    private struct ContainerStack {
        private var inline: UInt64 = 0
        /// Levels 64 and deeper, 64 to a word.
        private var deeper: [UInt64] = []
        private(set) var count = 0

        var isEmpty: Bool { count == 0 }

        var last: Container? {
            guard count > 0 else { return nil }
            let level = count - 1
            let word = level < 64 ? inline : deeper[level / 64 - 1]
            return word & (1 << UInt64(level % 64)) != 0 ? .object : .array
        }

        mutating func append(_ container: Container) {
            let level = count
            let bit: UInt64 = 1 << UInt64(level % 64)
            if level < 64 {
                inline = container == .object ? inline | bit : inline & ~bit
            } else {
                if level % 64 == 0 { deeper.append(0) }
                let word = level / 64 - 1
                deeper[word] = container == .object ? deeper[word] | bit : deeper[word] & ~bit
            }
            count += 1
        }

        mutating func removeLast() {
            precondition(count > 0, "no open container")
            count -= 1
            if count >= 64, count % 64 == 0 { deeper.removeLast() }
        }
    }

    private static let trueBytes = Array("true".utf8)
    private static let falseBytes = Array("false".utf8)
    private static let nullBytes = Array("null".utf8)

    /// The printer: a validating tokenizer with a stack of open containers. It reads the text in
    /// place, where it lies, with no copy.
    private struct Printer<Mode: Output> {
        typealias Bytes = UnsafeBufferPointer<UInt8>

        /// What the grammar allows next.
        enum Expect { case value, key, colon, commaOrClose, end }

        let indent: Int
        let colors: Colors?
        var writes: Bool { Mode.writes }
        var output: [UInt8] = []
        var stack = ContainerStack()
        var expect = Expect.value

        init(indent: Int, colors: Colors?) {
            self.indent = indent
            self.colors = colors
        }

        mutating func run(_ bytes: Bytes) -> Bool {
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                    index += 1
                    continue
                }
                guard let next = token(bytes, at: index) else { return false }
                index = next
            }
            guard expect == .end else { return false }
            emit(0x0A)
            return true
        }

        /// Reads the token at `index`; returns where the next one may start, or `nil` on bad input.
        mutating func token(_ bytes: Bytes, at index: Int) -> Int? {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard expect == .value else { return nil }
                return open(bytes, at: index)
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard expect == .commaOrClose, stack.last == (byte == UInt8(ascii: "}") ? .object : .array) else { return nil }
                stack.removeLast()
                newline()
                colored(colors?.punctuation, CollectionOfOne(byte))
                valueDone()
                return index + 1
            case UInt8(ascii: ","):
                guard expect == .commaOrClose else { return nil }
                colored(colors?.punctuation, CollectionOfOne(byte))
                newline()
                expect = stack.last == .object ? .key : .value
                return index + 1
            case UInt8(ascii: ":"):
                guard expect == .colon else { return nil }
                colored(colors?.punctuation, CollectionOfOne(byte))
                emit(0x20)
                expect = .value
                return index + 1
            case UInt8(ascii: "\""):
                guard expect == .key || expect == .value, let end = stringEnd(bytes, from: index) else { return nil }
                if expect == .key {
                    colored(colors?.key, bytes[index..<end])
                    expect = .colon
                } else {
                    colored(colors?.string, bytes[index..<end])
                    valueDone()
                }
                return end
            default:
                guard expect == .value else { return nil }
                return scalar(bytes, at: index)
            }
        }

        /// Opens an object or array; an empty one stays on one line: `{}`, `[]`.
        mutating func open(_ bytes: Bytes, at index: Int) -> Int? {
            guard stack.count < JSONText.maximumDepth else { return nil }
            let byte = bytes[index]
            let isObject = byte == UInt8(ascii: "{")
            stack.append(isObject ? .object : .array)
            if let close = nextNonSpace(bytes, after: index), bytes[close] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                stack.removeLast()
                // Guarded here too: the checking printer makes no array for text it never writes.
                if writes { colored(colors?.punctuation, [byte, bytes[close]]) }
                valueDone()
                return close + 1
            }
            colored(colors?.punctuation, CollectionOfOne(byte))
            newline()
            expect = isObject ? .key : .value
            return index + 1
        }

        /// A number or a literal, copied as written.
        mutating func scalar(_ bytes: Bytes, at index: Int) -> Int? {
            let literal: [UInt8]? =
                switch bytes[index] {
                case UInt8(ascii: "t"): JSONText.trueBytes
                case UInt8(ascii: "f"): JSONText.falseBytes
                case UInt8(ascii: "n"): JSONText.nullBytes
                default: nil
                }
            if let literal {
                guard bytes.count - index >= literal.count, bytes[index..<(index + literal.count)].elementsEqual(literal) else {
                    return nil
                }
                colored(colors?.literal, literal)
                valueDone()
                return index + literal.count
            }
            guard let end = numberEnd(bytes, from: index) else { return nil }
            colored(colors?.number, bytes[index..<end])
            valueDone()
            return end
        }

        mutating func valueDone() {
            expect = stack.isEmpty ? .end : .commaOrClose
        }

        /// The index after a string's closing quote; escapes and UTF-8 checked, control characters refused.
        func stringEnd(_ bytes: Bytes, from start: Int) -> Int? {
            guard let base = bytes.baseAddress else { return nil }
            var index = start + 1
            while index < bytes.count {
                // A string's text is mostly plain ASCII: eight bytes at a time while there is
                // no quote, backslash, control character or byte past ASCII among them.
                while bytes.count - index >= 8, Self.isPlainASCII(UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)) {
                    index += 8
                }
                guard index < bytes.count else { break }
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    return index + 1
                case UInt8(ascii: "\\"):
                    guard index + 1 < bytes.count else { return nil }
                    switch bytes[index + 1] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        index += 2
                    case UInt8(ascii: "u"):
                        // A surrogate must come in a pair: a high one, then a low one.
                        guard let unit = Self.escapedUnit(bytes, at: index) else { return nil }
                        if (0xD800...0xDBFF).contains(unit) {
                            guard let low = Self.escapedUnit(bytes, at: index + 6), (0xDC00...0xDFFF).contains(low) else { return nil }
                            index += 12
                        } else {
                            guard !(0xDC00...0xDFFF).contains(unit) else { return nil }
                            index += 6
                        }
                    default:
                        return nil
                    }
                case 0x00..<0x20:
                    return nil
                case 0x20..<0x80:
                    index += 1
                default:
                    guard let next = Self.utf8SequenceEnd(bytes, at: index) else { return nil }
                    index = next
                }
            }
            return nil
        }

        /// Whether none of the eight bytes in `word` is a quote, a backslash, a control character
        /// (below 0x20) or past ASCII: each test finds a byte of that kind anywhere in the word
        /// with whole-word arithmetic (a zero byte of `word ^ repeated(c)` is a byte equal to `c`).
        static func isPlainASCII(_ word: UInt64) -> Bool {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            func anyZeroByte(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
            let control = (word &- ones &* 0x20) & ~word & highs
            let quote = anyZeroByte(word ^ (ones &* UInt64(UInt8(ascii: "\""))))
            let backslash = anyZeroByte(word ^ (ones &* UInt64(UInt8(ascii: "\\"))))
            return (word & highs) | control | quote | backslash == 0
        }

        /// The index after a number (RFC 8259 §6: `-? int frac? exp?`).
        func numberEnd(_ bytes: Bytes, from start: Int) -> Int? {
            var index = start
            func digits() -> Int {
                let first = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                return index - first
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                guard digits() > 0 else { return nil }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { return nil }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { return nil }
            }
            return index
        }

        func nextNonSpace(_ bytes: Bytes, after index: Int) -> Int? {
            var next = index + 1
            while next < bytes.count, bytes[next] == 0x20 || bytes[next] == 0x09 || bytes[next] == 0x0A || bytes[next] == 0x0D { next += 1 }
            return next < bytes.count ? next : nil
        }

        /// The index after the well-formed UTF-8 sequence that starts at `index` (RFC 3629: no
        /// overlong forms, no surrogates, nothing past U+10FFFF), or `nil`.
        static func utf8SequenceEnd(_ bytes: Bytes, at index: Int) -> Int? {
            let lead = bytes[index]
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: (length, low) = (3, 0xA0)
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: (length, high) = (3, 0x9F)
            case 0xF0: (length, low) = (4, 0x90)
            case 0xF1...0xF3: length = 4
            case 0xF4: (length, high) = (4, 0x8F)
            default: return nil
            }
            guard bytes.count - index >= length else { return nil }
            // The second byte has the lead's own range; the others are plain continuation bytes.
            guard (low...high).contains(bytes[index + 1]) else { return nil }
            for offset in 2..<max(2, length) where !(0x80...0xBF).contains(bytes[index + offset]) { return nil }
            return index + length
        }

        /// The code unit of a `\uXXXX` escape starting at `index`, if there is one.
        static func escapedUnit(_ bytes: Bytes, at index: Int) -> UInt16? {
            guard index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                return nil
            }
            var unit: UInt16 = 0
            for byte in bytes[(index + 2)..<(index + 6)] {
                guard isHexDigit(byte) else { return nil }
                let digit = byte <= 0x39 ? byte - 0x30 : (byte | 0x20) - 0x61 + 10
                unit = unit << 4 | UInt16(digit)
            }
            return unit
        }

        static func isHexDigit(_ byte: UInt8) -> Bool {
            (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
        }

        mutating func newline() {
            emit(0x0A)
            guard writes else { return }
            output.append(contentsOf: repeatElement(0x20, count: stack.count * indent))
        }

        mutating func emit(_ byte: UInt8) {
            if writes { output.append(byte) }
        }

        mutating func colored<Bytes: Sequence>(_ color: String?, _ text: Bytes) where Bytes.Element == UInt8 {
            guard writes else { return }
            if let color, !color.isEmpty {
                output.append(contentsOf: color.utf8)
                output.append(contentsOf: text)
                output.append(contentsOf: (colors?.reset ?? "").utf8)
            } else {
                output.append(contentsOf: text)
            }
        }
    }
}
