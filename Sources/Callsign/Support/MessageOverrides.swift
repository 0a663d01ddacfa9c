public import Foundation

/// Your own words for Callsign's built-in messages, which win over its English and Simplified
/// Chinese texts — as RFAPI let an app restate its messages in the main bundle's strings table.
///
/// Each entry is keyed by the English sentence as Callsign writes it, with `%@` where a value
/// (a name, a number, a server's words) goes and `%%` for a percent sign — the keys of Callsign's
/// own `zh-Hans.lproj/Localizable.strings`. Your text may use `%@` (the values in order) or
/// `%1$@`, `%2$@` (by position). A sentence you do not restate keeps Callsign's text; a language
/// you give no entry for keeps Callsign's translation.
///
/// ```swift
/// let client = APIClient(definitions: definitions, configuration: .init {
///     $0.messageOverrides = MessageOverrides([
///         "en": ["the server refused the connection (%@)": "We cannot reach the service right now."],
///         "zh-Hans": ["the server refused the connection (%@)": "暂时无法连接服务，请稍后再试。"],
///     ])
/// })
/// ```
///
/// Or, as RFAPI did, from the app's own strings tables (`en.lproj` and `zh-Hans.lproj`):
///
/// ```swift
/// configuration.messageOverrides = try MessageOverrides(bundle: .main, table: "Localizable")
/// ```
///
/// They apply wherever a client speaks: ``APIError/Fields/message``,
/// ``APIError/localizedMessage(in:)``, ``APIClient/warnings`` and its log lines.
public struct MessageOverrides: Sendable, Equatable {
    /// The texts by language, each keyed by Callsign's English sentence.
    private var tables: [MessageLanguage: [String: String]]

    /// The largest strings table read from a bundle: 4 MiB.
    static let maximumTableSize = 4 * 1024 * 1024

    /// Texts given as values: language → English sentence → your text.
    ///
    /// A language is named by its identifier (`"en"`, `"zh-Hans"`, `"zh_CN"`); Callsign speaks
    /// English and Simplified Chinese, so tables for other languages are never shown and are
    /// left out.
    ///
    /// ```swift
    /// MessageOverrides(["en": ["the request timed out": "The service is slow; try again."]])
    /// ```
    public init(_ texts: [String: [String: String]]) {
        var tables: [MessageLanguage: [String: String]] = [:]
        for (identifier, entries) in texts {
            guard let language = MessageLanguage.supported(identifier) else { continue }
            tables[language, default: [:]].merge(entries) { _, new in new }
        }
        self.tables = tables
    }

    /// Texts read from a bundle's strings tables: `en.lproj/<table>.strings` for English and
    /// `zh-Hans.lproj/<table>.strings` for Simplified Chinese. A table the bundle lacks gives
    /// no texts in that language.
    ///
    /// The files are read once, here; each must be a strings table (text, XML or binary, as Xcode
    /// compiles them) of at most 4 MiB.
    ///
    /// ```swift
    /// configuration.messageOverrides = try MessageOverrides(bundle: .main, table: "CallsignMessages")
    /// ```
    ///
    /// - Parameters:
    ///   - bundle: the bundle. Default `Bundle.main`, as RFAPI read it.
    ///   - table: the table's name, without `.strings`. Default `"Localizable"`.
    /// - Throws: ``APIError/Code/invalidDefinition`` when a table is larger than 4 MiB or is not a
    ///   table of strings.
    public init(bundle: Bundle = .main, table: String = "Localizable") throws(APIError) {
        var tables: [MessageLanguage: [String: String]] = [:]
        for language in MessageLanguage.allCases {
            let folders = language == .english ? ["en", "Base"] : [language.rawValue, language.rawValue.lowercased()]
            guard let url = folders.lazy.compactMap({ bundle.url(forResource: table, withExtension: "strings", subdirectory: nil, localization: $0) }).first
            else { continue }
            tables[language] = try Self.read(url)
        }
        self.tables = tables
    }

    /// Your text for `sentence` in the language Callsign uses for `locale`, or `nil`.
    ///
    /// ```swift
    /// overrides.text(for: "the request timed out", in: Locale(identifier: "en"))
    /// ```
    public func text(for sentence: String, in locale: Locale) -> String? {
        tables[MessageLanguage(locale)]?[sentence]
    }

    /// Your template for `key` in `language`, or `nil`.
    func template(for key: String, in language: MessageLanguage) -> String? {
        tables[language]?[key]
    }

    /// One strings table, read with a bound on its size and its nesting.
    static func read(_ url: URL) throws(APIError) -> [String: String] {
        let data = try FileReader.read(url, limit: maximumTableSize) { error in
            APIError(.invalidDefinition, localized: "the strings table \"\(url.path)\" cannot be read", underlyingError: error)
        } tooLarge: { limit in
            APIError(.invalidDefinition, localized: "the strings table \"\(url.path)\" is larger than \(limit) bytes")
        }
        // A strings table is one flat dictionary; text lists are not measured by
        // PropertyListReader (Foundation's reader recurses once per level), so nesting is refused first.
        guard !nestsInText(data) else {
            throw APIError(.invalidDefinition, localized: "the strings table \"\(url.path)\" is not a table of strings")
        }
        let object: Any
        do {
            object = try PropertyListReader.object(data, maximumDepth: 2, maximumValues: 1_000_000)
        } catch {
            throw APIError(
                .invalidDefinition, localized: "the strings table \"\(url.path)\" cannot be read: \(error.reason)", underlyingError: error)
        }
        guard let table = object as? [String: String] else {
            throw APIError(.invalidDefinition, localized: "the strings table \"\(url.path)\" is not a table of strings")
        }
        return table
    }

    /// Whether a text (OpenStep) property list opens a dictionary or array inside another one —
    /// which no strings table does. Quoted strings and comments are skipped; binary and XML
    /// lists have no braces outside their strings that matter here and are measured by
    /// ``PropertyListReader``.
    static func nestsInText(_ original: Data) -> Bool {
        if original.starts(with: Array("bplist".utf8)) { return false }
        var data = [UInt8](original)
        // Text tables were long written in UTF-16: scanned as the characters they are.
        if data.starts(with: [0xFF, 0xFE]) || data.starts(with: [0xFE, 0xFF]) {
            guard let text = String(data: original, encoding: .utf16) else { return false }
            data = Array(text.utf8)
        }
        if data.first(where: { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }) == UInt8(ascii: "<") { return false }
        var depth = 0
        var index = data.startIndex
        while index < data.endIndex {
            let byte = data[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                while index < data.endIndex, data[index] != UInt8(ascii: "\"") {
                    index += data[index] == UInt8(ascii: "\\") ? 2 : 1
                }
            case UInt8(ascii: "/") where index + 1 < data.endIndex && data[index + 1] == UInt8(ascii: "*"):
                index += 2
                while index + 1 < data.endIndex, !(data[index] == UInt8(ascii: "*") && data[index + 1] == UInt8(ascii: "/")) { index += 1 }
                index += 1
            case UInt8(ascii: "/") where index + 1 < data.endIndex && data[index + 1] == UInt8(ascii: "/"):
                while index < data.endIndex, data[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "{"), UInt8(ascii: "("):
                depth += 1
                if depth > 1 { return true }
            case UInt8(ascii: "}"), UInt8(ascii: ")"):
                depth -= 1
            default: break
            }
            index += 1
        }
        return false
    }
}
