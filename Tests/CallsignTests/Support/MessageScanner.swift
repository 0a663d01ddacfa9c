import Foundation

/// Finds the sentences our sources hand to `LocalizedMessage`, and computes each one's key as
/// the compiler builds it (the English text, `%@` for each interpolation, `%%` for `%`).
///
/// A string literal is a message when it is an argument of one of the marked calls
/// (`localized(…)`, `error(…)`, `cliError(…)`, `notSent(…)`, the demo's `step(…)` and
/// `say(…)`, `APIError.webSocket(…)` and the WebSocket connections' `failing(…)`), when its argument label is `localized:`, `what:` or `purpose:`, or when it is
/// followed by `as LocalizedMessage`. Literals inside interpolations are values, not messages,
/// and so is a literal with no words (`"%@: %@"`).
struct MessageScanner {
    static let markedCalls: Set<String> = ["localized", "error", "cliError", "notSent", "step", "say", "webSocket", "failing"]
    static let markedLabels: Set<String> = ["localized", "what", "purpose"]
    /// Calls named like a marked one that print without translating.
    static let unmarkedCalls: Set<String> = ["Terminal.error", "Terminal.out"]

    struct Found: Hashable {
        let key: String
        let file: String
        let line: Int
    }

    /// The repository, found from this file's path.
    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }

    /// Every message in the Swift files under `folders` (relative to the repository).
    static func messages(in folders: [String]) throws -> [Found] {
        var found: [Found] = []
        for folder in folders {
            let root = repository.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { continue }
            for case let url as URL in walker where url.pathExtension == "swift" {
                let text = try String(contentsOf: url, encoding: .utf8)
                var scanner = MessageScanner(Array(text.unicodeScalars))
                found += scanner.scan().map {
                    Found(key: $0.key, file: url.lastPathComponent, line: $0.line)
                }
            }
        }
        return found
    }

    private let text: [Unicode.Scalar]
    private var index = 0
    private var line = 1

    init(_ text: [Unicode.Scalar]) { self.text = text }

    /// An open bracket, with the call it belongs to and the current argument's label.
    private struct Open {
        let bracket: Unicode.Scalar
        let callee: String
        var label: String?
    }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        index + offset < text.count ? text[index + offset] : nil
    }

    private func starts(with string: String, at position: Int) -> Bool {
        var at = position
        for scalar in string.unicodeScalars {
            guard at < text.count, text[at] == scalar else { return false }
            at += 1
        }
        return true
    }

    private mutating func advance(_ count: Int = 1) {
        for _ in 0..<count where index < text.count {
            if text[index] == "\n" { line += 1 }
            index += 1
        }
    }

    private static func isIdentifier(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isAlphabetic || scalar == "_" || ("0"..."9").contains(scalar)
    }

    /// The dotted name that ends just before `position` (`Terminal.error`, `reader.error`).
    private func name(endingAt position: Int) -> String {
        var start = position
        while start > 0, Self.isIdentifier(text[start - 1]) || text[start - 1] == "." { start -= 1 }
        return String(String.UnicodeScalarView(text[start..<position]))
    }

    mutating func scan() -> [(key: String, line: Int)] {
        var results: [(key: String, line: Int)] = []
        var stack: [Open] = []
        while let scalar = peek() {
            if scalar == "/", peek(1) == "/" {
                while let next = peek(), next != "\n" { advance() }
            } else if scalar == "/", peek(1) == "*" {
                while index < text.count, !starts(with: "*/", at: index) { advance() }
                advance(2)
            } else if scalar == "\"" || (scalar == "#" && peek(1) == "\"") {
                let startLine = line
                let key = readLiteral()
                if let key, isMarked(stack), Self.hasWords(key) { results.append((key, startLine)) }
            } else if scalar == "(" || scalar == "[" || scalar == "{" {
                stack.append(Open(bracket: scalar, callee: scalar == "(" ? name(endingAt: index) : "", label: nil))
                advance()
            } else if scalar == ")" || scalar == "]" || scalar == "}" {
                if !stack.isEmpty { stack.removeLast() }
                advance()
            } else if scalar == ",", !stack.isEmpty {
                stack[stack.count - 1].label = nil
                advance()
            } else if scalar == ":", !stack.isEmpty, stack[stack.count - 1].bracket == "(", peek(1) != ":" {
                let label = name(endingAt: index)
                if !label.isEmpty, !label.contains(".") { stack[stack.count - 1].label = label }
                advance()
            } else {
                advance()
            }
        }
        return results
    }

    /// Whether a key has words besides its values: `"%@: %@"` needs no translation.
    static func hasWords(_ key: String) -> Bool {
        key.replacingOccurrences(of: "%@", with: "").unicodeScalars.contains { $0.properties.isAlphabetic }
    }

    /// Whether the literal just read is a message.
    private func isMarked(_ stack: [Open]) -> Bool {
        var after = index
        while after < text.count, text[after] == " " { after += 1 }
        if starts(with: "as LocalizedMessage", at: after) { return true }
        // The call the literal is an argument of: the innermost parenthesis, through closures.
        guard let call = stack.last(where: { $0.bracket == "(" }) else { return false }
        if let label = call.label { return Self.markedLabels.contains(label) }
        if Self.unmarkedCalls.contains(call.callee) { return false }
        let last = call.callee.split(separator: ".").last.map(String.init) ?? ""
        return Self.markedCalls.contains(last)
    }

    /// Reads the literal at `index`; returns its key, or `nil` for a raw string (never a message).
    private mutating func readLiteral() -> String? {
        if peek() == "#" {  // a raw string: skip it
            advance(2)
            while index < text.count, !(text[index] == "\"" && peek(1) == "#") { advance() }
            advance(2)
            return nil
        }
        if starts(with: "\"\"\"", at: index) { return readMultiline() }
        advance()
        var key = ""
        while let scalar = peek(), scalar != "\"" {
            if scalar == "\\" {
                key += readEscape()
            } else {
                key += scalar == "%" ? "%%" : String(scalar)
                advance()
            }
        }
        advance()
        return key
    }

    /// A `"""` literal: lines without the closing delimiter's indentation, `\` joins lines.
    private mutating func readMultiline() -> String {
        advance(3)
        while let scalar = peek(), scalar != "\n" { advance() }
        advance()
        var raw: [String] = []
        var current = ""
        while index < text.count {
            if starts(with: "\"\"\"", at: index) {
                advance(3)
                break
            }
            let scalar = text[index]
            if scalar == "\\" {
                if peek(1) == "\n" {
                    current += "\u{1}"  // a continuation: joins this line to the next
                    advance(2)
                    raw.append(current)
                    current = ""
                    continue
                }
                current += readEscape()
            } else if scalar == "\n" {
                raw.append(current)
                current = ""
                advance()
            } else {
                current += scalar == "%" ? "%%" : String(scalar)
                advance()
            }
        }
        let indent = current.count  // the closing line holds only the indentation
        var key = ""
        for (number, line) in raw.enumerated() {
            let stripped = String(line.dropFirst(min(indent, line.prefix { $0 == " " }.count)))
            if stripped.hasSuffix("\u{1}") {
                key += stripped.dropLast()
            } else {
                key += stripped
                if number < raw.count - 1 { key += "\n" }
            }
        }
        return key
    }

    /// An escape or an interpolation at `index` (which holds the backslash).
    private mutating func readEscape() -> String {
        advance()
        guard let scalar = peek() else { return "" }
        advance()
        switch scalar {
        case "(":
            var depth = 1
            while depth > 0, let next = peek() {
                if next == "\"" {
                    _ = readLiteral()
                    continue
                }
                if next == "(" { depth += 1 }
                if next == ")" { depth -= 1 }
                advance()
            }
            return "%@"
        case "n": return "\n"
        case "t": return "\t"
        case "r": return "\r"
        case "0": return "\0"
        case "u":
            var hex = ""
            advance()  // {
            while let next = peek(), next != "}" {
                hex.unicodeScalars.append(next)
                advance()
            }
            advance()
            return UInt32(hex, radix: 16).flatMap(Unicode.Scalar.init).map { String($0) } ?? ""
        default: return String(scalar)
        }
    }
}
