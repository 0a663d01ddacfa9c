package import Foundation
import Synchronization

/// A sentence in Callsign's own words, kept as its English template and its arguments so it
/// can be shown in the reader's language when it is read, not when it is made.
///
/// Written as an interpolated string literal; the English template, with `%@` where each
/// interpolation was, is the key of its translation in `Localizable.strings`:
///
/// ```swift
/// let text: LocalizedMessage = "the path parameter \"\(name)\" is empty"
/// // key: the path parameter "%@" is empty
/// text.resolved(in: .simplifiedChinese)   // 路径参数 "id" 为空
/// ```
///
/// Interpolated values are never translated (they are names, numbers, a server's words); an
/// interpolated `LocalizedMessage` is, in the same language as the sentence around it.
package struct LocalizedMessage: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// One interpolated value.
    package indirect enum Argument: Sendable {
        case text(String)
        case message(LocalizedMessage)
    }

    /// The English template: the key of the translations. `%@` marks an argument, `%%` a percent sign.
    package private(set) var key: String
    package private(set) var arguments: [Argument]
    /// Where the translations are.
    package private(set) var catalog: MessageCatalog

    /// A whole sentence as a string: translated if it is one of Callsign's, else shown as written.
    /// (Interpolating into this would translate nothing: write a `LocalizedMessage` literal.)
    package init(sentence text: String) {
        key = Self.escapingPercent(text)
        arguments = []
        catalog = .callsign
    }

    package init(stringLiteral value: String) {
        self.init(sentence: value)
    }

    package init(stringInterpolation: StringInterpolation) {
        key = stringInterpolation.key
        arguments = stringInterpolation.arguments
        catalog = .callsign
    }

    /// The same sentence, translated from another module's catalog (the CLI's).
    package func translated(by catalog: MessageCatalog) -> LocalizedMessage {
        var copy = self
        copy.catalog = catalog
        return copy
    }

    /// The sentence in `language`, in English where no translation exists; the app's own text
    /// wherever `overrides` restates it.
    package func resolved(in language: MessageLanguage, overrides: MessageOverrides? = nil) -> String {
        let template = overrides?.template(for: key, in: language) ?? catalog.translation(of: key, in: language) ?? key
        return Self.fill(template, with: arguments.map { argument in
            switch argument {
            case .text(let text): text
            case .message(let message): message.resolved(in: language, overrides: overrides)
            }
        })
    }

    /// In the process's language.
    package var description: String { resolved(in: .process) }

    /// `text` with `%` doubled, so no part of it reads as a placeholder.
    static func escapingPercent(_ text: String) -> String {
        text.utf8.contains(UInt8(ascii: "%")) ? text.replacingOccurrences(of: "%", with: "%%") : text
    }

    /// Puts `values` into `template`: `%@` takes the next one, `%2$@` the second, `%%` is `%`.
    /// A placeholder without a value stays empty; nothing in a value is read as a placeholder.
    package static func fill(_ template: String, with values: [String]) -> String {
        guard template.utf8.contains(UInt8(ascii: "%")) else { return template }
        var result = ""
        var next = 0
        var rest = template[...]
        while let percent = rest.firstIndex(of: "%") {
            result += rest[..<percent]
            let after = rest[rest.index(after: percent)...]
            if after.hasPrefix("%") {
                result += "%"
                rest = after.dropFirst()
            } else if after.hasPrefix("@") {
                if next < values.count { result += values[next] }
                next += 1
                rest = after.dropFirst()
            } else if let digit = after.first?.wholeNumberValue, digit > 0, after.dropFirst().hasPrefix("$@") {
                if digit <= values.count { result += values[digit - 1] }
                rest = after.dropFirst(3)
            } else {
                result += "%"
                rest = after
            }
        }
        return result + rest
    }

    package struct StringInterpolation: StringInterpolationProtocol {
        var key = ""
        var arguments: [Argument] = []

        package init(literalCapacity: Int, interpolationCount: Int) {
            key.reserveCapacity(literalCapacity + 2 * interpolationCount)
        }

        package mutating func appendLiteral(_ literal: String) {
            key += LocalizedMessage.escapingPercent(literal)
        }

        package mutating func appendInterpolation(_ value: some Any) {
            key += "%@"
            arguments.append(.text(String(describing: value)))
        }

        package mutating func appendInterpolation(_ message: LocalizedMessage) {
            key += "%@"
            arguments.append(.message(message))
        }
    }
}

/// The languages Callsign speaks. English is the development language; every other language
/// falls back to it.
package enum MessageLanguage: String, Sendable, CaseIterable {
    case english = "en"
    case simplifiedChinese = "zh-Hans"

    /// The language Callsign uses for `locale`: Simplified Chinese for any Chinese locale written
    /// in Han simplified script (`zh`, `zh-CN`, `zh_SG`, `zh-Hans`), English for everything else.
    package init(_ locale: Locale) {
        self = Self.supported(locale.identifier) ?? .english
    }

    /// The supported language of one locale identifier (`zh_CN.UTF-8`, `en-US`), or `nil`.
    static func supported(_ identifier: String) -> MessageLanguage? {
        // POSIX names carry an encoding and modifier (`zh_CN.UTF-8@pinyin`): not part of the language.
        let name = identifier.prefix { $0 != "." && $0 != "@" }
        guard !name.isEmpty, name != "C", name != "POSIX" else { return nil }
        let language = Locale(identifier: String(name)).language
        switch language.languageCode?.identifier {
        case "en": return .english
        // Foundation fills in the likely script: zh-CN and zh are Hans, zh-TW and zh-HK Hant.
        case "zh" where language.script?.identifier == "Hans": return .simplifiedChinese
        default: return nil
        }
    }

    /// The process's language, read once: on Apple platforms the user's preferred languages;
    /// elsewhere the POSIX variables in gettext's order (`LANGUAGE` when a locale is set, then
    /// `LC_ALL`, `LC_MESSAGES`, `LANG`). The first supported one wins; English if none is.
    package static let process: MessageLanguage = {
        #if canImport(Darwin)
        return Self.choose(from: Locale.preferredLanguages)
        #else
        return Self.choose(fromEnvironment: ProcessInfo.processInfo.environment)
        #endif
    }()

    /// The first supported language of `identifiers`, English if none.
    static func choose(from identifiers: [String]) -> MessageLanguage {
        identifiers.lazy.compactMap(Self.supported).first ?? .english
    }

    /// The language the POSIX locale variables in `environment` ask for.
    package static func choose(fromEnvironment environment: [String: String]) -> MessageLanguage {
        choose(from: preferredLocales(environment: environment))
    }

    /// The locales the POSIX variables name, preferred first, as gettext reads them: `LANGUAGE`'s
    /// list (ignored in the C locale: a program run with `LANG=C` wants plain output), then the
    /// first set of `LC_ALL`, `LC_MESSAGES`, `LANG`. `C` and `POSIX` are left out.
    static func preferredLocales(environment: [String: String]) -> [String] {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty } ?? "C"
        func isC(_ name: String) -> Bool { ["C", "POSIX"].contains(name.prefix { $0 != "." && $0 != "@" }) }
        var candidates = [locale]
        if !isC(locale), let list = environment["LANGUAGE"], !list.isEmpty {
            candidates = list.split(separator: ":").map(String.init) + candidates
        }
        return candidates.filter { !isC($0) }
    }

    /// The user's preferred languages as BCP 47 tags (`zh-CN`, `en`): Foundation's on Apple
    /// platforms; elsewhere the POSIX variables', which Foundation on Linux does not read.
    package static func preferredLanguageTags(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        #if canImport(Darwin)
        return Locale.preferredLanguages
        #else
        var seen = Set<String>()
        return preferredLocales(environment: environment).compactMap { name -> String? in
            let tag = name.prefix { $0 != "." && $0 != "@" }.replacingOccurrences(of: "_", with: "-")
            guard !tag.isEmpty, tag.count <= 35, tag.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }),
                seen.insert(tag.lowercased()).inserted
            else { return nil }
            return tag
        }
        #endif
    }
}

/// The translations of one module, read from its resource bundle's `<language>.lproj/Localizable.strings`
/// on first use.
///
/// The bundle is looked for next to the executable and in the main bundle's resources (where
/// SwiftPM and Xcode put it), never through `Bundle.module`, which stops the process when the
/// bundle is missing: a binary copied without its `.resources` folder speaks English instead.
package final class MessageCatalog: Sendable {
    /// Callsign's own messages.
    package static let callsign = MessageCatalog(bundleName: "Callsign_Callsign")

    package let bundleName: String
    private let tables = Mutex<[MessageLanguage: [String: String]]>([:])

    /// A catalog for the SwiftPM resource bundle named `bundleName` (`<Package>_<Target>`).
    package init(bundleName: String) {
        self.bundleName = bundleName
    }

    /// The translation of `key`, or `nil` for English and for a key the language lacks.
    func translation(of key: String, in language: MessageLanguage) -> String? {
        guard language != .english else { return nil }
        return table(for: language)[key]
    }

    /// Every key of `language`'s table.
    package func table(for language: MessageLanguage) -> [String: String] {
        if let table = tables.withLock({ $0[language] }) { return table }
        let loaded = load(language)
        tables.withLock { $0[language] = loaded }
        return loaded
    }

    /// The resource bundle, if it is where SwiftPM or Xcode put it.
    package var bundle: Bundle? {
        let folders = [Bundle.main.bundleURL, Bundle.main.resourceURL, Bundle.main.executableURL?.deletingLastPathComponent()]
        for folder in folders.compactMap({ $0 }) {
            for suffix in ["resources", "bundle"] {
                let url = folder.appendingPathComponent("\(bundleName).\(suffix)")
                if FileManager.default.fileExists(atPath: url.path), let bundle = Bundle(url: url) { return bundle }
            }
        }
        return nil
    }

    /// The table's file. SwiftPM writes `zh-hans.lproj` in lower case, which a case-sensitive
    /// file system (Linux) does not match with `zh-Hans`; Xcode keeps the case: both are tried.
    package func tableURL(for language: MessageLanguage) -> URL? {
        guard let bundle else { return nil }
        return [language.rawValue, language.rawValue.lowercased()].lazy.compactMap {
            bundle.url(forResource: "Localizable", withExtension: "strings", subdirectory: nil, localization: $0)
        }.first
    }

    private func load(_ language: MessageLanguage) -> [String: String] {
        guard let url = tableURL(for: language),
            let data = try? Data(contentsOf: url),
            let table = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: String]
        else { return [:] }
        return table
    }
}
