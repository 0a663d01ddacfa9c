import Callsign
import Foundation

/// Writes a response body to standard output as its chunks arrive, as curl does: a live feed (an
/// event stream, a log tail) shows at once, and memory stays bounded whatever the body's size.
///
/// To a pipe, or with `--raw`, the bytes go out exactly as received. On a terminal each complete
/// line is made safe as it arrives (``TerminalText/body(_:)``: controls escaped, CRLF kept); an
/// unfinished line waits for its end, up to ``pendingLimit`` bytes, then what is held goes out,
/// cut between two UTF-8 characters. Once a piece turns out not to be text (a NUL, invalid
/// UTF-8), nothing more is shown on the terminal and the end of the body says how many bytes
/// were left out.
struct BodyFlow {
    /// The most of an unfinished line held back on a terminal.
    static let pendingLimit = 64 * 1024

    /// Whether standard output is a terminal the body is made safe for.
    let onTerminal: Bool
    /// Whether a body that does not end a line gets a line feed at the end (a person reads it).
    let endsLine: Bool
    /// The bytes received so far.
    private(set) var received = 0
    /// The bytes of an unfinished line, on a terminal.
    private var pending = Data()
    /// The bytes written so far, and the last of them.
    private var shown = 0
    private var last: UInt8?
    /// The bytes not shown since the body turned out not to be text.
    private var hidden = 0

    init(onTerminal: Bool, endsLine: Bool) {
        self.onTerminal = onTerminal
        self.endsLine = endsLine
    }

    /// Writes what of `chunk` can be written now.
    mutating func write(_ chunk: Data) {
        guard !chunk.isEmpty else { return }
        received = received.addingReportingOverflow(chunk.count).overflow ? .max : received + chunk.count
        guard onTerminal else { return emit(chunk) }
        guard hidden == 0 else {
            hidden = hidden.addingReportingOverflow(chunk.count).overflow ? .max : hidden + chunk.count
            return
        }
        pending.append(chunk)
        if let lineEnd = pending.lastIndex(of: UInt8(ascii: "\n")) {
            let lines = Data(pending[..<pending.index(after: lineEnd)])
            pending = Data(pending[pending.index(after: lineEnd)...])
            show(lines)
        }
        if pending.count > Self.pendingLimit {
            let cut = Self.characterBoundary(in: pending)
            let piece = Data(pending[..<cut])
            pending = Data(pending[cut...])
            show(piece)
        }
    }

    /// Writes what is left once the body has ended (or broken off), and what was not shown.
    mutating func finish() {
        if !pending.isEmpty {
            let rest = pending
            pending = Data()
            show(rest)
        }
        if hidden > 0 {
            if shown == 0 {
                Terminal.out(localized("[binary body of \(hidden) bytes not shown on a terminal: use -o FILE, a pipe, or --raw]"))
            } else {
                if last != UInt8(ascii: "\n") { emit(Data("\n".utf8)) }
                Terminal.out(localized("[the rest of the body, \(hidden) bytes, is not text: not shown on a terminal; use -o FILE, a pipe, or --raw]"))
            }
        } else if endsLine, shown > 0, last != UInt8(ascii: "\n") {
            emit(Data("\n".utf8))
        }
    }

    /// Shows a piece of text on the terminal, made safe, or starts hiding the body.
    private mutating func show(_ piece: Data) {
        switch TerminalText.body(piece) {
        case .text(let safe): emit(safe)
        case .binary(let count): hidden = count
        }
    }

    private mutating func emit(_ bytes: Data) {
        guard let final = bytes.last else { return }
        Terminal.write(bytes)
        shown += bytes.count
        last = final
    }

    /// Where `bytes` may be cut so that no UTF-8 character is split: before a trailing lead byte
    /// whose continuation bytes have not all arrived, else at the end.
    static func characterBoundary(in bytes: Data) -> Data.Index {
        let end = bytes.endIndex
        var back = 1
        while back <= min(4, bytes.count) {
            let byte = bytes[end - back]
            if byte & 0xC0 == 0x80 {  // a continuation byte: look further back
                back += 1
                continue
            }
            let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
            return length > back ? end - back : end
        }
        return end
    }
}
