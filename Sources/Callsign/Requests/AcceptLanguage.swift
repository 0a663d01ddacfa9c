import Foundation

/// The `Accept-Language` every request sends unless it sets its own (Malibu sent the user's
/// preferred languages the same way): the first language as it is, the next ones with falling
/// quality values, at most six.
///
/// ```swift
/// configuration.acceptLanguage = .preferred                  // the default: the user's languages
/// configuration.acceptLanguage = AcceptLanguage(["zh-Hans", "en"])   // "zh-Hans, en;q=0.9"
/// configuration.acceptLanguage = .none                       // no header
/// ```
public struct AcceptLanguage: Sendable, Hashable, CustomStringConvertible {
    /// The language tags, most preferred first. Tags that are not well-formed (only letters,
    /// digits and `-`; POSIX forms such as `zh_CN.UTF-8` are converted) are left out.
    public let languages: [String]

    /// Sends these languages, most preferred first.
    public init(_ languages: [String]) {
        var seen: Set<String> = []
        self.languages = languages.compactMap(Self.tag).filter { seen.insert($0.lowercased()).inserted }
    }

    /// The user's preferred languages (`Locale.preferredLanguages` on Apple platforms; elsewhere
    /// from `LANGUAGE`, `LC_ALL`, `LC_MESSAGES` and `LANG` as gettext reads them, since Linux
    /// Foundation does not), read when the value is made. None in the C locale.
    public static var preferred: AcceptLanguage { AcceptLanguage(MessageLanguage.preferredLanguageTags()) }

    /// No `Accept-Language` header.
    public static let none = AcceptLanguage([])

    /// The header value, or `nil` when there is no language: `"zh-Hans, en;q=0.9, fr;q=0.8"`.
    public var headerValue: String? {
        guard !languages.isEmpty else { return nil }
        return languages.prefix(6).enumerated().map { index, tag in
            index == 0 ? tag : "\(tag);q=0.\(10 - index)"
        }.joined(separator: ", ")
    }

    /// The header value, or `none`.
    public var description: String { headerValue ?? "none" }

    /// A well-formed language tag from what a platform reports, or `nil`.
    private static func tag(_ raw: String) -> String? {
        // POSIX locale names: language_REGION.codeset@modifier.
        var text = raw.split(separator: ".", maxSplits: 1).first.map(String.init) ?? ""
        text = text.split(separator: "@", maxSplits: 1).first.map(String.init) ?? ""
        text = text.replacingOccurrences(of: "_", with: "-")
        guard !text.isEmpty, text.count <= 35, text != "C", text.uppercased() != "POSIX",
            text.utf8.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "-")
            }),
            !text.hasPrefix("-"), !text.hasSuffix("-"), !text.contains("--")
        else { return nil }
        return text
    }
}
