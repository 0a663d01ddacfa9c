import Callsign
import CallsignTesting
import Foundation
import Testing

@testable import callsign

@Suite("Localization: English and Simplified Chinese", .hangGuard)
struct LocalizationTests {
    /// Every sentence of a module has a translation, every translation a sentence, and each
    /// keeps the sentence's values.
    private func checkComplete(_ catalog: MessageCatalog, sources: [String]) throws {
        let found = try MessageScanner.messages(in: sources)
        try #require(found.count > 20, "the scanner found the messages in \(sources)")
        let table = catalog.table(for: .simplifiedChinese)
        #expect(!table.isEmpty, "the zh-Hans table of \(catalog.bundleName) loads")
        let keys = Set(found.map(\.key))
        let missing = found.filter { table[$0.key] == nil }
        // Printed as .strings lines, ready to translate.
        let missingLines = Set(missing.map { "\"\(Self.escaped($0.key))\" = \"\";  /* \($0.file):\($0.line) */" }).sorted()
        #expect(missing.isEmpty, "untranslated in \(catalog.bundleName):\n\(missingLines.joined(separator: "\n"))")
        let stale = table.keys.filter { !keys.contains($0) }.sorted()
        #expect(stale.isEmpty, "translations of sentences no source has: \(stale)")
        for (key, translation) in table {
            #expect(Self.placeholders(in: key) == Self.placeholders(in: translation), "the values of \"\(key)\" → \"\(translation)\"")
            #expect(translation.unicodeScalars.contains { $0.properties.isIdeographic }, "\"\(translation)\" is Chinese")
        }
    }

    /// The values a template uses: `%@` count as 1, 2, 3…; `%2$@` as 2.
    static func placeholders(in template: String) -> [Int] {
        var numbers: [Int] = []
        var next = 1
        var rest = Substring(template)
        while let percent = rest.firstIndex(of: "%") {
            let after = rest[rest.index(after: percent)...]
            if after.hasPrefix("%") {
                rest = after.dropFirst()
            } else if after.hasPrefix("@") {
                numbers.append(next)
                next += 1
                rest = after.dropFirst()
            } else if let digit = after.first?.wholeNumberValue, after.dropFirst().hasPrefix("$@") {
                numbers.append(digit)
                rest = after.dropFirst(3)
            } else {
                rest = after
            }
        }
        return numbers.sorted()
    }

    static func escaped(_ key: String) -> String {
        key.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    @Test("every message of the library has its Simplified Chinese translation")
    func libraryComplete() throws {
        try checkComplete(.callsign, sources: ["Sources/Callsign", "Sources/CallsignSQLite", "Sources/CallsignOpenAPI", "Sources/CallsignPostgres"])
    }

    @Test("every message and help text of the command line has its Simplified Chinese translation")
    func commandLineComplete() throws {
        try checkComplete(.cli, sources: ["Sources/callsign"])
    }

    @Test("the language follows the POSIX locale variables as gettext reads them")
    func processLanguage() {
        let chinese: [[String: String]] = [
            ["LANG": "zh_CN.UTF-8"], ["LANG": "zh_SG"], ["LANG": "zh"], ["LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"],
            ["LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"], ["LANGUAGE": "zh_CN:en", "LANG": "en_US.UTF-8"],
            ["LANGUAGE": "fr:zh_CN", "LANG": "fr_FR.UTF-8"], ["LANG": "zh_CN.UTF-8@pinyin"], ["LANG": "zh-Hans"],
        ]
        for environment in chinese {
            #expect(MessageLanguage.choose(fromEnvironment: environment) == .simplifiedChinese, "\(environment)")
        }
        let english: [[String: String]] = [
            [:], ["LANG": "C.UTF-8"], ["LANG": "POSIX"], ["LANG": "en_US.UTF-8"], ["LANG": "fr_FR.UTF-8"],
            ["LANG": "zh_TW.UTF-8"], ["LANG": "zh_HK"], ["LC_ALL": "C", "LANG": "zh_CN.UTF-8"],
            // gettext ignores LANGUAGE in the C locale.
            ["LANGUAGE": "zh_CN", "LANG": "C"],
        ]
        for environment in english {
            #expect(MessageLanguage.choose(fromEnvironment: environment) == .english, "\(environment)")
        }
        #expect(MessageLanguage(Locale(identifier: "zh-Hans-CN")) == .simplifiedChinese)
        #if !canImport(Darwin)
        // Accept-Language follows the same variables (Linux Foundation ignores them).
        #expect(MessageLanguage.preferredLanguageTags(environment: ["LANG": "zh_CN.UTF-8"]) == ["zh-CN"])
        #expect(MessageLanguage.preferredLanguageTags(environment: ["LANGUAGE": "fr:de_AT", "LANG": "en_US.UTF-8"]) == ["fr", "de-AT", "en-US"])
        #expect(MessageLanguage.preferredLanguageTags(environment: ["LANG": "C.UTF-8", "LANGUAGE": "fr"]).isEmpty)
        #expect(MessageLanguage.preferredLanguageTags(environment: ["LANG": "x\r\ny"]).isEmpty)
        #endif
        #expect(MessageLanguage(Locale(identifier: "zh-Hant")) == .english)
    }

    @Test("Foundation finds the zh-Hans resources of both modules on this platform")
    func bundles() throws {
        for catalog in [MessageCatalog.callsign, .cli] {
            let bundle = try #require(catalog.bundle, "\(catalog.bundleName) is next to the executable")
            // SwiftPM writes the folder as zh-hans.lproj; Foundation on Linux finds it only by that name.
            #expect(bundle.localizations.contains { $0.lowercased() == "zh-hans" }, "\(bundle.localizations)")
            let url = try #require(catalog.tableURL(for: .simplifiedChinese))
            #expect(url.path.lowercased().contains("zh-hans.lproj"))
            #expect(catalog.table(for: .simplifiedChinese).count > 20)
        }
    }

    @Test("templates take their values in order, by position, and keep percent signs")
    func templates() {
        #expect(LocalizedMessage.fill("a %@ b %@", with: ["1", "2"]) == "a 1 b 2")
        #expect(LocalizedMessage.fill("%2$@ 然后 %1$@", with: ["1", "2"]) == "2 然后 1")
        #expect(LocalizedMessage.fill("100%% of %@", with: ["%@"]) == "100% of %@")
        #expect(LocalizedMessage.fill("%@ and %@", with: ["only"]) == "only and ")
        #expect(LocalizedMessage.fill("trailing %", with: []) == "trailing %")
        let value = "50%"
        let message: LocalizedMessage = "the path parameter \"\(value)\" is empty"
        #expect(message.key == "the path parameter \"%@\" is empty")
        #expect(message.resolved(in: .english) == "the path parameter \"50%\" is empty")
        #expect(message.resolved(in: .simplifiedChinese).contains("50%"))
        #expect(message.resolved(in: .simplifiedChinese) != message.resolved(in: .english))
    }

    @Test("a client's errors speak its configured language; codes and descriptions' codes stay English", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func clientLanguage() async throws {
        let refusing = try RefusingPort()
        defer { refusing.release() }
        let url = "http://127.0.0.1:\(refusing.port)/x"
        for (locale, expected) in [("zh-Hans", MessageLanguage.simplifiedChinese), ("en", .english)] {
            let client = APIClient(
                configuration: .init { $0.locale = Locale(identifier: locale) }, transport: TransportKind.asyncHTTPClient.make())
            let error = await #expect(throws: APIError.self) { try await client.get(url).send() }
            let failure = try #require(error)
            #expect(failure.code == .transport)
            #expect(failure.description.hasPrefix("APIError.transport "))
            let chinese = failure.message.unicodeScalars.contains { $0.properties.isIdeographic }
            #expect(chinese == (expected == .simplifiedChinese), "\(failure.message)")
            #expect(failure.localizedMessage(in: Locale(identifier: "en")).contains("refused"))
            #expect(failure.localizedMessage(in: Locale(identifier: "zh_CN")).contains("拒绝"))
        }
        // Definitions errors, thrown before any client, speak the language asked of them.
        let error = #expect(throws: APIError.self) { _ = try APIDefinitions(data: Data("Bad:\n  Methd: GET\n".utf8), format: .yaml) }
        let text = try #require(error).localizedMessage(in: Locale(identifier: "zh-Hans"))
        #expect(text.contains("Methd") && text.contains("Method") && text.unicodeScalars.contains { $0.properties.isIdeographic }, "\(text)")
    }

    @Test("the command line speaks Chinese under LANG=zh_CN.UTF-8 and English otherwise", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func commandLine() async throws {
        try CLIRunner.requireBuilt()
        try await withTemporaryFolder("l10n") { folder in
            let file = folder.appendingPathComponent("api.yaml")
            try Data("Users:\n  baseURL: http://127.0.0.1:9/\n  path: users\n".utf8).write(to: file)
            let chinese = try await CLIRunner.run(["call", "Userz", "-D", file.path], environment: ["LANG": "zh_CN.UTF-8"])
            #expect(chinese.status == callsign.ExitStatus.code(for: APIError(.unknownAPI, "")))
            #expect(chinese.standardError.contains("APIError.unknownAPI"), "the code is never translated")
            #expect(chinese.standardError.contains("\"Users\""))
            #expect(chinese.standardError.unicodeScalars.contains { $0.properties.isIdeographic }, "\(chinese.standardError)")
            let english = try await CLIRunner.run(["call", "Userz", "-D", file.path])
            #expect(english.standardError.contains("no API is defined with the name \"Userz\"; did you mean \"Users\"?"))
            // Help and a command-line error of the CLI's own.
            let help = try await CLIRunner.run(["call", "--help"], environment: ["LANG": "zh_CN.UTF-8"])
            #expect(help.standardOutput.contains("按名称调用"), "\(help.standardOutput)")
            let item = try await CLIRunner.run(["get", "http://127.0.0.1:9/", "novalue"], environment: ["LANG": "zh_CN.UTF-8"])
            #expect(item.standardError.contains("novalue") && item.standardError.contains("不是"), "\(item.standardError)")
        }
    }
}
