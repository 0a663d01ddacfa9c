import Foundation

/// The one sanitizer for text from outside — a server, a document, a stored row, the
/// environment — that the command line prints on a terminal.
///
/// A terminal obeys what it is sent: ESC and CSI sequences move the cursor and clear the screen,
/// OSC sets the window title or (in some terminals) writes the clipboard, BEL rings, CR
/// overwrites what was printed, and a line feed starts a line that can pose as Callsign's own
/// (`callsign: …`). Every control character is therefore shown as a visible escape, in Swift's
/// spelling (`\u{1b}`, `\n`), so what a person reads is what was sent and nothing more:
///
/// - C0 (U+0000–U+001F, CR, LF and TAB included), DEL (U+007F) and C1 (U+0080–U+009F, which
///   some terminals read as 8-bit CSI/OSC/ST);
/// - the bidirectional overrides and isolates U+202A–U+202E and U+2066–U+2069, which reorder how a
///   line is drawn and so can make an error message or a URL read as something else
///   ("Trojan Source"). The marks U+200E/U+200F only affect neutral characters and stay.
///
/// ``line(_:)`` is for one line of notes, errors, headers and summaries — ``Terminal/out(_:)``
/// and ``Terminal/error(_:)`` pass everything through it, so no caller can forget. ``body(_:)``
/// is for a response body shown on a terminal: it keeps the line structure (LF, TAB, CRLF) and
/// reports binary content instead of printing it. Bodies written to a file or a pipe never come
/// here: they stay byte for byte as received.
///
/// ```swift
/// TerminalText.line("bad\u{1B}]0;owned\u{07}")   // "bad\\u{1b}]0;owned\\u{7}"
/// ```
enum TerminalText {
    /// `text` with every control character, and every bidirectional override, escaped.
    static func line(_ text: String) -> String {
        // Most lines hold nothing to escape: return them as they are, without copying.
        guard text.unicodeScalars.contains(where: { escapesInLine($0) }) else { return text }
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count + 16)
        for scalar in text.unicodeScalars {
            if escapesInLine(scalar) {
                result += visible(scalar)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// What a body shown on a terminal becomes.
    enum Body: Equatable {
        /// UTF-8 text with its control characters escaped; LF, TAB and CR before LF kept.
        case text(Data)
        /// Not text (a NUL byte, or not UTF-8): not shown, only its size.
        case binary(count: Int)
    }

    /// A response body as it may be shown on a terminal: text with controls escaped (line feeds,
    /// tabs and CRLF line ends kept, so it still reads as lines), or ``Body/binary(count:)`` for
    /// bytes that are not text, which HTTPie does not show on a terminal either.
    static func body(_ data: Data) -> Body {
        guard !data.contains(0), let text = String(validatingUTF8Data: data) else { return .binary(count: data.count) }
        let scalars = Array(text.unicodeScalars)
        guard scalars.indices.contains(where: { escapesInBody(scalars, at: $0) }) else { return .text(data) }
        var result = ""
        result.unicodeScalars.reserveCapacity(scalars.count + 16)
        for index in scalars.indices {
            if escapesInBody(scalars, at: index) {
                result += visible(scalars[index])
            } else {
                result.unicodeScalars.append(scalars[index])
            }
        }
        return .text(Data(result.utf8))
    }

    /// C0, DEL, C1, and the bidirectional overrides and isolates.
    static func escapesInLine(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// In a body: every control except LF, TAB and a CR that ends a line (CRLF). Bidirectional
    /// marks stay: in a body they are content (right-to-left text), and they cannot leave the line.
    private static func escapesInBody(_ scalars: [Unicode.Scalar], at index: Int) -> Bool {
        let value = scalars[index].value
        switch value {
        case 0x0A, 0x09: return false
        case 0x0D: return !(index + 1 < scalars.count && scalars[index + 1] == "\n")
        case 0x00...0x1F, 0x7F...0x9F: return true
        default: return false
        }
    }

    /// The visible spelling: `\n`, `\r`, `\t`, else `\u{…}` in lowercase hexadecimal.
    private static func visible(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\n": "\\n"
        case "\r": "\\r"
        case "\t": "\\t"
        default: "\\u{" + String(scalar.value, radix: 16) + "}"
        }
    }
}

extension String {
    /// The text if `data` is valid UTF-8, else `nil` (never a replacement character).
    fileprivate init?(validatingUTF8Data data: Data) {
        var iterator = data.makeIterator()
        var decoder = UTF8()
        var text = ""
        text.reserveCapacity(data.count)
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): text.unicodeScalars.append(scalar)
            case .emptyInput: break loop
            case .error: return nil
            }
        }
        self = text
    }
}

/// A line of outside text with Callsign's own colours around its pieces: each piece goes through
/// ``TerminalText/line(_:)`` as it is appended, and only the colour codes chosen here are added
/// as they are — so a header a server sends can be shown in colour and still never reach the
/// terminal as a control sequence.
///
/// ```swift
/// var line = StyledLine()
/// line.append("Content-Type", style: HeadColors.standard.name)
/// line.append(": text/html\u{1B}[2J")   // the escape is shown, not obeyed
/// ```
struct StyledLine: Sendable {
    /// The text to write: sanitized pieces and colour codes.
    private(set) var text = ""

    init() {}

    /// A line of one piece, in one style (or none).
    init(_ outside: String, style: String? = nil) {
        append(outside, style: style)
    }

    /// Appends `outside`, its control characters escaped, in `style` (an SGR sequence) if given.
    mutating func append(_ outside: String, style: String? = nil) {
        guard let style, !style.isEmpty else {
            text += TerminalText.line(outside)
            return
        }
        text += style + TerminalText.line(outside) + HeadColors.reset
    }
}

/// The colours of an HTTP head on a terminal, as HTTPie draws them: the request or status line
/// in bold, header names in cyan.
struct HeadColors: Sendable, Equatable {
    /// The request line or the status line.
    var startLine: String
    /// A header's name.
    var name: String

    /// What ends a colour.
    static let reset = "\u{1B}[0m"
    /// Bold start lines, cyan names.
    static let standard = HeadColors(startLine: "\u{1B}[1m", name: "\u{1B}[36m")
}
