import Foundation

/// How deeply a property list nests, found without Foundation's readers, which recurse once per
/// level and so can be driven off the stack by a small hostile file. XML lists are scanned by
/// tag; binary lists (`bplist00`) are walked through their object table, iteratively.
enum PropertyListDepth {
    /// Whether `data` nests arrays and dictionaries deeper than `limit`. A list this check
    /// cannot read is left to Foundation, which reports it as malformed.
    static func exceeds(_ data: Data, limit: Int) -> Bool {
        measure(data, depthLimit: limit, valueLimit: .max) == .tooDeep
    }

    /// What a property list's measure found.
    enum Verdict: Equatable {
        case fine, tooDeep, tooManyValues
    }

    /// Checks `data` against a depth and a count of values. A binary list's objects may be
    /// named by many references: Foundation then builds one object, but every reader that walks
    /// the result (converting it to ``JSONValue``) meets it once per reference, so values are
    /// counted as walked — 60 levels of "the next one, twice" are 2^60 values.
    static func measure(_ data: Data, depthLimit: Int, valueLimit: Int) -> Verdict {
        let bytes = [UInt8](data)
        if bytes.starts(with: Array("bplist00".utf8)) { return binaryMeasure(bytes, depthLimit: depthLimit, valueLimit: valueLimit) }
        if xmlExceeds(bytes, limit: depthLimit) { return .tooDeep }
        // An XML list shares nothing: its values are at most its opening tags.
        var tags = 0
        for index in bytes.indices.dropLast() where bytes[index] == UInt8(ascii: "<") && bytes[index + 1] != UInt8(ascii: "/") {
            tags += 1
            if tags > valueLimit { return .tooManyValues }
        }
        return .fine
    }

    /// Counts `<array>` and `<dict>` openings against their closings (`<array/>` opens nothing).
    private static func xmlExceeds(_ bytes: [UInt8], limit: Int) -> Bool {
        var depth = 0
        var index = 0
        let opening = [Array("<array".utf8), Array("<dict".utf8)]
        let closing = [Array("</array".utf8), Array("</dict".utf8)]
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "<") else {
                index += 1
                continue
            }
            if let tag = opening.first(where: { matches($0, in: bytes, at: index) }) {
                var end = index + tag.count
                while end < bytes.count, bytes[end] != UInt8(ascii: ">") { end += 1 }
                let selfClosing = end > 0 && end < bytes.count && bytes[end - 1] == UInt8(ascii: "/")
                if !selfClosing {
                    depth += 1
                    if depth > limit { return true }
                }
                index = end
            } else if closing.contains(where: { matches($0, in: bytes, at: index) }) {
                depth -= 1
                index += 2
            } else {
                index += 1
            }
        }
        return false
    }

    private static func matches(_ tag: [UInt8], in bytes: [UInt8], at index: Int) -> Bool {
        guard bytes.count - index > tag.count else { return false }
        let next = bytes[index + tag.count]
        // "<array>", "<array/>", "<array attr>": not "<arrays>".
        guard next == UInt8(ascii: ">") || next == UInt8(ascii: "/") || next == 0x20 else { return false }
        return bytes[index..<(index + tag.count)].elementsEqual(tag)
    }

    /// The binary format's object table, as its 32-byte trailer describes it.
    private struct ObjectTable {
        let bytes: [UInt8]
        let trailer: Int
        let offsetSize: Int
        let referenceSize: Int
        let objectCount: Int
        let top: Int
        let tableOffset: Int

        init?(_ bytes: [UInt8]) {
            guard bytes.count >= 8 + 32 else { return nil }
            let trailer = bytes.count - 32
            let offsetSize = Int(bytes[trailer + 6])
            let referenceSize = Int(bytes[trailer + 7])
            guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
                let objectCount = PropertyListDepth.integer(bytes, at: trailer + 8, size: 8),
                let top = PropertyListDepth.integer(bytes, at: trailer + 16, size: 8),
                let tableOffset = PropertyListDepth.integer(bytes, at: trailer + 24, size: 8),
                objectCount > 0, top < objectCount, tableOffset < trailer,
                objectCount <= (trailer - tableOffset) / offsetSize
            else { return nil }
            (self.bytes, self.trailer, self.offsetSize, self.referenceSize) = (bytes, trailer, offsetSize, referenceSize)
            (self.objectCount, self.top, self.tableOffset) = (objectCount, top, tableOffset)
        }

        /// Where an object's references to other objects start and how many there are: arrays
        /// (0xA_), sets (0xC_) and dictionaries (0xD_, whose keys are strings and cannot nest)
        /// have some. `nil` when the object runs out of bounds.
        func references(of object: Int) -> (start: Int, count: Int)? {
            guard let offset = PropertyListDepth.integer(bytes, at: tableOffset + object * offsetSize, size: offsetSize),
                offset < trailer
            else { return nil }
            let marker = bytes[offset]
            let kind = marker >> 4
            guard kind == 0xA || kind == 0xC || kind == 0xD else { return (offset, 0) }
            var count = Int(marker & 0x0F)
            var start = offset + 1
            if count == 0x0F {
                // The count follows as an integer object: 0x1n, then 2^n bytes.
                guard start < trailer, bytes[start] >> 4 == 0x1 else { return nil }
                let size = 1 << Int(bytes[start] & 0x0F)
                guard size <= 8, let value = PropertyListDepth.integer(bytes, at: start + 1, size: size) else { return nil }
                count = value
                start += 1 + size
            }
            // Bounded before any multiplication: a hostile count cannot overflow.
            let room = (trailer - start) / referenceSize
            if kind == 0xD {
                guard count <= room / 2 else { return nil }
                start += count * referenceSize  // skip the keys
            } else {
                guard count <= room else { return nil }
            }
            return (start, count)
        }

        /// The object a reference names, if it names one.
        func child(at start: Int, index: Int) -> Int? {
            PropertyListDepth.integer(bytes, at: start + index * referenceSize, size: referenceSize).flatMap { $0 < objectCount ? $0 : nil }
        }
    }

    /// Measures a binary property list: an iterative depth-first walk with memoized depths and
    /// value counts (each saturating past its limit). A cycle or a reference out of bounds is
    /// malformed, left to Foundation.
    private static func binaryMeasure(_ bytes: [UInt8], depthLimit limit: Int, valueLimit: Int) -> Verdict {
        guard let table = ObjectTable(bytes) else { return .fine }
        /// `a + b`, saturating just past the limit (or at `Int.max`).
        func sum(_ a: Int, _ b: Int) -> Int {
            let (total, overflow) = a.addingReportingOverflow(b)
            return overflow || total > valueLimit ? max(valueLimit, valueLimit &+ 1) : total
        }
        var depth = [Int](repeating: -1, count: table.objectCount)  // -1 unvisited, -2 on the stack
        var values = [Int](repeating: 0, count: table.objectCount)
        var stack: [(object: Int, next: Int, deepest: Int, values: Int)] = [(table.top, 0, 0, 1)]
        depth[table.top] = -2
        while let frame = stack.last {
            guard let refs = table.references(of: frame.object) else { return .fine }
            if frame.next < refs.count {
                stack[stack.count - 1].next += 1
                guard let child = table.child(at: refs.start, index: frame.next) else { return .fine }
                switch depth[child] {
                case -2: return .fine
                case -1:
                    depth[child] = -2
                    stack.append((child, 0, 0, 1))
                    if stack.count > limit + 1 { return .tooDeep }
                default:
                    stack[stack.count - 1].deepest = max(frame.deepest, depth[child])
                    stack[stack.count - 1].values = sum(frame.values, values[child])
                    if stack[stack.count - 1].values > valueLimit { return .tooManyValues }
                }
            } else {
                stack.removeLast()
                let own = frame.deepest + 1
                depth[frame.object] = own
                values[frame.object] = frame.values
                if own > limit { return .tooDeep }
                if !stack.isEmpty {
                    stack[stack.count - 1].deepest = max(stack[stack.count - 1].deepest, own)
                    stack[stack.count - 1].values = sum(stack[stack.count - 1].values, frame.values)
                    if stack[stack.count - 1].values > valueLimit { return .tooManyValues }
                }
            }
        }
        return .fine
    }

    /// A big-endian unsigned integer of `size` bytes at `index`, if it is in bounds and fits.
    fileprivate static func integer(_ bytes: [UInt8], at index: Int, size: Int) -> Int? {
        guard index >= 0, size <= 8, index <= bytes.count - size else { return nil }
        var value: UInt64 = 0
        for byte in bytes[index..<(index + size)] { value = value << 8 | UInt64(byte) }
        return value <= UInt64(Int.max / 16) ? Int(value) : nil
    }
}
