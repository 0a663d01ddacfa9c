import Foundation

/// Appends bytes, numbers and texts: the kept form of what a load makes (``SchemaRules/bytes``,
/// the operations of a ``CompiledDescription``). Numbers are 32-bit little-endian; a text is its
/// UTF-8 length and bytes.
struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func byte(_ value: UInt8) {
        bytes.append(value)
    }

    /// A count or a place: at most `UInt32.max` (a table's are far smaller).
    mutating func number(_ value: Int) {
        let value = UInt32(clamping: value)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    mutating func text(_ value: String) {
        number(value.utf8.count)
        bytes.append(contentsOf: value.utf8)
    }

    mutating func flag(_ value: Bool) {
        byte(value ? 1 : 0)
    }

    /// A text that may be missing: a flag, then the text.
    mutating func optionalText(_ value: String?) {
        flag(value != nil)
        if let value { text(value) }
    }
}

/// Reads what ``ByteWriter`` wrote; `nil` for anything that runs past the end or is not UTF-8,
/// so a damaged or foreign entry is refused, never read past its end.
struct ByteReader {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var remaining: Int { bytes.count - position }

    mutating func byte() -> UInt8? {
        guard position < bytes.count else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func number() -> Int? {
        guard remaining >= 4 else { return nil }
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[position + index]) << UInt32(8 * index) }
        position += 4
        // Exactly: on a 32-bit platform (watchOS) a count past Int.max is damage, not a trap.
        return Int(exactly: value)
    }

    mutating func text() -> String? {
        guard let count = number(), count <= remaining else { return nil }
        defer { position += count }
        return String(validating: bytes[position..<(position + count)], as: UTF8.self)
    }

    /// A count, then that many elements read by `element`; `nil` when the count claims more
    /// than the bytes left or an element is damaged.
    mutating func list<Element>(_ element: (inout ByteReader) -> Element?) -> [Element]? {
        guard let count = number(), count <= remaining else { return nil }
        var elements: [Element] = []
        elements.reserveCapacity(count)
        for _ in 0..<count {
            guard let next = element(&self) else { return nil }
            elements.append(next)
        }
        return elements
    }

    mutating func flag() -> Bool? {
        switch byte() {
        case 0?: false
        case 1?: true
        default: nil
        }
    }

    /// A text that may be missing: `.some(nil)` when the flag says there is none, `nil` when the
    /// bytes are damaged.
    mutating func optionalText() -> String?? {
        guard let present = flag() else { return nil }
        guard present else { return .some(nil) }
        return text().map { .some($0) }
    }
}
