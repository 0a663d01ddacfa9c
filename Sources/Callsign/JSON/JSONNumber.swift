/// A JSON number kept as the text it was written with.
///
/// `Int` and `Double` rewrite some numbers: `12345678901234567890` does not fit an `Int` and
/// becomes `1.2345678901234567e+19` as a `Double`; `1.50` becomes `1.5`. When Callsign parses
/// JSON — a body, a definitions file, a `name:=value` item on the command line — a number that
/// either type would rewrite becomes ``JSONValue/number(_:)`` with its text, and reaches the wire
/// exactly as written: in a JSON body, a query, a form and a path.
///
/// The text is always a valid JSON number (RFC 8259 §6), so it can never inject anything into
/// the JSON it is written into.
///
/// ```swift
/// let id = JSONNumber("12345678901234567890")!      // nil for text that is not a JSON number
/// let parameters: Parameters = ["id": .number(id)]  // sent as 12345678901234567890
/// ```
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number as written.
    public let text: String

    /// A number from its JSON text, or `nil` when `text` is not a JSON number (`-? int frac? exp?`;
    /// no leading `+`, no leading zeros, no `NaN` or `Infinity`).
    public init?(_ text: String) {
        guard Self.isValid(text.utf8) else { return nil }
        self.text = text
    }

    /// Text already checked by the JSON parser.
    init(checked text: String) { self.text = text }

    /// The value as an `Int`, when it is a whole number that fits (`1.0` and `1e3` count).
    public var intValue: Int? {
        if let value = Int(text) { return value }
        guard let value = doubleValue, value.rounded() == value, abs(value) < 9.0e15 else { return nil }
        return Int(value)
    }

    /// The nearest `Double`, or `nil` when the number is beyond `Double`'s range.
    public var doubleValue: Double? { Double(text).flatMap { $0.isFinite ? $0 : nil } }

    /// Whether the text is a whole number: no fraction, no exponent.
    public var isInteger: Bool { !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") } }

    /// The number as a ``JSONValue``: `.int` or `.double` when that type writes it back exactly as
    /// written, else ``JSONValue/number(_:)``.
    public var value: JSONValue {
        if let value = Int(text), String(value) == text { return .int(value) }
        if let value = Double(text), value.isFinite, JSONValue.text(of: value) == text { return .double(value) }
        return .number(self)
    }

    public var description: String { text }

    /// Whether `bytes` are one JSON number and nothing else.
    static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
        var scanner = Scanner(bytes)
        return scanner.scanNumber() && scanner.isAtEnd
    }

    /// Reads `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` from the front of bytes.
    struct Scanner<Bytes: Collection<UInt8>> {
        let bytes: Bytes
        var index: Bytes.Index

        init(_ bytes: Bytes) {
            self.bytes = bytes
            index = bytes.startIndex
        }

        var isAtEnd: Bool { index == bytes.endIndex }

        /// Whether a number was read; on `false` the position is somewhere inside it.
        mutating func scanNumber() -> Bool {
            take(UInt8(ascii: "-"))
            if take(UInt8(ascii: "0")) {
                // A leading zero stands alone.
            } else if digits() == 0 {
                return false
            }
            if take(UInt8(ascii: ".")), digits() == 0 { return false }
            if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
                if !take(UInt8(ascii: "+")) { take(UInt8(ascii: "-")) }
                if digits() == 0 { return false }
            }
            return true
        }

        @discardableResult
        private mutating func take(_ byte: UInt8) -> Bool {
            guard index != bytes.endIndex, bytes[index] == byte else { return false }
            bytes.formIndex(after: &index)
            return true
        }

        private mutating func digits() -> Int {
            var count = 0
            while index != bytes.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                bytes.formIndex(after: &index)
                count += 1
            }
            return count
        }
    }
}
