import Callsign
import Foundation

// The per-user default options file, read as curl reads its .curlrc, kept free of ArgumentParser
// so the fuzz package can compile this file as it is (Fuzz/Sources/CallsignFuzz/CLI/ links to it).

/// The lines of a default-options file: one option a line, with its value after a space or `=`,
/// `#` starting a comment line.
///
/// ```
/// # ~/.config/callsign/config
/// --timeout 30
/// --print hb
/// -H X-Team: payments
/// --max-redirs=3
/// ```
///
/// Only options: a line that does not start with `-` (a URL, an item) is an error naming the file
/// and the line, never sent anywhere. A value may be written in double quotes to keep spaces at
/// its ends.
enum ConfigFile {
    /// One option of the file, and the line it is on.
    struct Entry: Equatable, Sendable {
        var line: Int
        /// The option as written: `--timeout`, `-H`.
        var option: String
        /// Its value; `nil` for a flag.
        var value: String?

        /// The arguments the entry stands for.
        var arguments: [String] { [option] + (value.map { [$0] } ?? []) }
    }

    /// The largest file read, in bytes.
    static let maximumSize = 64 * 1024
    /// The most options a file gives.
    static let maximumEntries = 256
    /// The longest line, in bytes.
    static let maximumLineBytes = 4_096
    /// Options that mean nothing as a default, or would turn the file off or into something else.
    static let refused: Set<String> = [
        "-h", "--help", "--version", "--no-config", "--experimental-dump-help", "--generate-completion-script",
    ]

    /// Why the file at `path` is not read: it is larger than ``maximumSize``.
    static func tooLarge(_ path: String) -> APIError {
        cliError(.invalidRequest, "\(path): larger than \(maximumSize) bytes; a default-options file holds a few options")
    }

    /// The options in `data`, the contents of the file at `path`.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/invalidRequest``) naming `path` and the line — its
    ///   number only, since a line may hold a secret.
    static func parse(_ data: Data, path: String) throws(APIError) -> [Entry] {
        guard data.count <= maximumSize else { throw tooLarge(path) }
        guard let text = String(data: data, encoding: .utf8) else {
            throw cliError(.invalidRequest, "\(path): not UTF-8 text")
        }
        var entries: [Entry] = []
        var number = 0
        // "\r\n" is one Character: a file written on Windows splits into the same lines.
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            guard line.utf8.count <= maximumLineBytes else {
                throw cliError(.invalidRequest, "\(path):\(number): longer than \(maximumLineBytes) bytes")
            }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard !trimmed.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || (0x7F...0x9F).contains($0.value) }) else {
                throw cliError(.invalidRequest, "\(path):\(number): a control character")
            }
            guard trimmed.hasPrefix("-"), trimmed != "-", trimmed != "--", !trimmed.hasPrefix("-- ") else {
                throw cliError(.invalidRequest, "\(path):\(number): not an option; only options (starting with -) go in this file, URLs and items on the command line")
            }
            let entry = try self.entry(trimmed, line: number, path: path)
            guard !refused.contains(entry.option) else {
                throw cliError(.invalidRequest, "\(path):\(number): \(entry.option) cannot be a default option")
            }
            entries.append(entry)
            guard entries.count <= maximumEntries else {
                throw cliError(.invalidRequest, "\(path):\(number): more than \(maximumEntries) options")
            }
        }
        return entries
    }

    /// `--name value`, `--name=value`, `-x value` or a lone `--flag`.
    private static func entry(_ text: String, line: Int, path: String) throws(APIError) -> Entry {
        let isLong = text.hasPrefix("--")
        let end = text.firstIndex { $0 == " " || $0 == "\t" || (isLong && $0 == "=") } ?? text.endIndex
        let option = String(text[..<end])
        let name = option.dropFirst(isLong ? 2 : 1)
        guard let first = name.first, first.isASCII, first.isLetter || first.isNumber,
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
        else {
            throw cliError(.invalidRequest, "\(path):\(line): not an option name; write --name value or --name=value")
        }
        guard end < text.endIndex else { return Entry(line: line, option: option, value: nil) }
        var value = String(text[text.index(after: end)...]).trimmingCharacters(in: .whitespaces)
        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
        return Entry(line: line, option: option, value: value)
    }
}
