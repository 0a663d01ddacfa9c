import Foundation

/// How deeply a property list nests, found without Foundation's readers, which recurse once per
/// level and so can be driven off the stack by a small hostile file. XML lists are scanned by
/// tag; binary lists (`bplist00`) are walked through their object table, iteratively.
enum PropertyListDepth {
    /// Whether `data` nests arrays and dictionaries deeper than `limit`. A list this check
    /// cannot read is left to Foundation, which reports it as malformed.
    static func exceeds(_ data: Data, limit: Int) -> Bool {
        let bytes = [UInt8](data)
        if bytes.starts(with: Array("bplist00".utf8)) { return binaryExceeds(bytes, limit: limit) }
        return xmlExceeds(bytes, limit: limit)
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

    /// The binary format: a 32-byte trailer names the object table; arrays (0xA_), sets (0xC_)
    /// and dictionaries (0xD_) hold references to other objects.
    private static func binaryExceeds(_ bytes: [UInt8], limit: Int) -> Bool {
        guard bytes.count >= 8 + 32 else { return false }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        let referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
            let objectCount = integer(bytes, at: trailer + 8, size: 8),
            let top = integer(bytes, at: trailer + 16, size: 8),
            let tableOffset = integer(bytes, at: trailer + 24, size: 8),
            objectCount > 0, top < objectCount, tableOffset < trailer,
            objectCount <= (trailer - tableOffset) / offsetSize
        else { return false }

        func references(of object: Int) -> (start: Int, count: Int)? {
            guard let offset = integer(bytes, at: tableOffset + object * offsetSize, size: offsetSize), offset < trailer else {
                return nil
            }
            let marker = bytes[offset]
            let kind = marker >> 4
            guard kind == 0xA || kind == 0xC || kind == 0xD else { return (offset, 0) }
            var count = Int(marker & 0x0F)
            var start = offset + 1
            if count == 0x0F {
                // The count follows as an integer object: 0x1n, then 2^n bytes.
                guard start < trailer, bytes[start] >> 4 == 0x1 else { return nil }
                let size = 1 << Int(bytes[start] & 0x0F)
                guard size <= 8, let value = integer(bytes, at: start + 1, size: size) else { return nil }
                count = value
                start += 1 + size
            }
            if kind == 0xD {
                start += count * referenceSize  // keys are strings: only the values can nest
            }
            guard count <= (trailer - start) / referenceSize else { return nil }
            return (start, count)
        }

        // Iterative depth-first walk with memoized depths; a cycle is malformed (left to Foundation).
        var depth = [Int](repeating: -1, count: objectCount)  // -1 unvisited, -2 on the stack
        var stack: [(object: Int, next: Int, deepest: Int)] = [(top, 0, 0)]
        depth[top] = -2
        while let frame = stack.last {
            guard let refs = references(of: frame.object) else { return false }
            if frame.next < refs.count {
                stack[stack.count - 1].next += 1
                guard let child = integer(bytes, at: refs.start + frame.next * referenceSize, size: referenceSize),
                    child < objectCount
                else { return false }
                switch depth[child] {
                case -2: return false
                case -1:
                    depth[child] = -2
                    stack.append((child, 0, 0))
                    if stack.count > limit + 1 { return true }
                default:
                    stack[stack.count - 1].deepest = max(frame.deepest, depth[child])
                }
            } else {
                stack.removeLast()
                let own = frame.deepest + 1
                depth[frame.object] = own
                if own > limit { return true }
                if !stack.isEmpty { stack[stack.count - 1].deepest = max(stack[stack.count - 1].deepest, own) }
            }
        }
        return false
    }

    /// A big-endian unsigned integer of `size` bytes at `index`, if it is in bounds and fits.
    private static func integer(_ bytes: [UInt8], at index: Int, size: Int) -> Int? {
        guard index >= 0, size <= 8, index <= bytes.count - size else { return nil }
        var value: UInt64 = 0
        for byte in bytes[index..<(index + size)] { value = value << 8 | UInt64(byte) }
        return value <= UInt64(Int.max / 16) ? Int(value) : nil
    }
}
