import Callsign
import CallsignTesting
import Foundation
import Testing

@Suite("Message overrides: the app's texts win over Callsign's", .hangGuard)
struct MessageOverridesTests {
    /// The sentence a 404 gives, as Callsign writes it (its key).
    static let statusSentence = "the server answered %@; accepted: %@"

    static func isChinese(_ text: String) -> Bool { text.unicodeScalars.contains { $0.properties.isIdeographic } }

    /// A 404 and a wrong content type from the test server, told by a client in `locale`.
    static func failures(locale: String, overrides: MessageOverrides?, server: TestServer) async throws -> (status: APIError, type: APIError) {
        let client = APIClient(configuration: .init {
            $0.baseURL = server.baseURL
            $0.locale = Locale(identifier: locale)
            $0.messageOverrides = overrides
        })
        let status = await #expect(throws: APIError.self) { try await client.get("status/404").decode([String: String].self) }
        let type = await #expect(throws: APIError.self) { try await client.get("json").send().validate(contentTypes: ["text/csv"]) }
        return (try #require(status), try #require(type))
    }

    @Test("an override for one message wins in English and in Chinese; the other messages keep Callsign's texts")
    func dictionary() async throws {
        let overrides = MessageOverrides([
            "en": [Self.statusSentence: "Not available (%@)."],
            "zh-Hans": [Self.statusSentence: "暂时无法获取（%@）。"],
        ])
        try await TestServer.withRunning { server in
            let english = try await Self.failures(locale: "en", overrides: overrides, server: server)
            #expect(english.status.code == .unacceptableStatus)
            #expect(english.status.message == "Not available (404 Not Found).")
            #expect(english.type.message.hasPrefix("the response is application/json; expected text/csv"), "\(english.type.message)")

            let chinese = try await Self.failures(locale: "zh-Hans", overrides: overrides, server: server)
            #expect(chinese.status.message == "暂时无法获取（404 Not Found）。")
            #expect(Self.isChinese(chinese.type.message) && chinese.type.message.contains("text/csv"), "\(chinese.type.message)")

            // Whatever language is asked of the error, the client's texts win; codes and descriptions' codes stay.
            #expect(english.status.localizedMessage(in: Locale(identifier: "zh_CN")) == "暂时无法获取（404 Not Found）。")
            #expect(chinese.status.description.hasPrefix("APIError.unacceptableStatus "))

            // Without overrides, Callsign's own texts.
            let plain = try await Self.failures(locale: "en", overrides: nil, server: server)
            #expect(plain.status.message.hasPrefix("the server answered 404 Not Found; accepted:"), "\(plain.status.message)")
            let plainChinese = try await Self.failures(locale: "zh-Hans", overrides: nil, server: server)
            #expect(plainChinese.status.message.hasPrefix("服务器应答 404 Not Found；"), "\(plainChinese.status.message)")
            #expect(plainChinese.type.message == chinese.type.message)
        }
    }

    @Test("a language given no text keeps Callsign's translation; unsupported languages are left out")
    func partial() async throws {
        let overrides = MessageOverrides(["en_US": [Self.statusSentence: "Gone: %@"], "fr": [Self.statusSentence: "Introuvable"]])
        #expect(overrides.text(for: Self.statusSentence, in: Locale(identifier: "en")) == "Gone: %@")
        #expect(overrides.text(for: Self.statusSentence, in: Locale(identifier: "zh-Hans")) == nil)
        try await TestServer.withRunning { server in
            let english = try await Self.failures(locale: "en", overrides: overrides, server: server)
            #expect(english.status.message == "Gone: 404 Not Found")
            let chinese = try await Self.failures(locale: "zh-Hans", overrides: overrides, server: server)
            #expect(chinese.status.message.hasPrefix("服务器应答 404 Not Found；"), "\(chinese.status.message)")
        }
    }

    @Test("texts from a bundle's strings tables, as RFAPI read the main bundle's")
    func bundle() async throws {
        try await withTemporaryFolder("overrides") { folder in
            let bundleURL = folder.appendingPathComponent("App.bundle")
            let english = bundleURL.appendingPathComponent("en.lproj")
            let chinese = bundleURL.appendingPathComponent("zh-Hans.lproj")
            for language in [english, chinese] { try FileManager.default.createDirectory(at: language, withIntermediateDirectories: true) }
            // A text table in UTF-8, and one in UTF-16 as older tables were written.
            try Data("/* ours */\n\"the server answered %@; accepted: %@\" = \"Sorry: %1$@\";\n".utf8)
                .write(to: english.appendingPathComponent("Messages.strings"))
            let chineseTable = "\"the server answered %@; accepted: %@\" = \"抱歉：%1$@\";\n\"not { nested\" = \"(x)\";\n"
            try #require(chineseTable.data(using: .utf16)).write(to: chinese.appendingPathComponent("Messages.strings"))
            let bundle = try #require(Bundle(url: bundleURL))
            let overrides = try MessageOverrides(bundle: bundle, table: "Messages")
            #expect(overrides.text(for: "not { nested", in: Locale(identifier: "zh-Hans")) == "(x)")
            try await TestServer.withRunning { server in
                let english = try await Self.failures(locale: "en", overrides: overrides, server: server)
                let chinese = try await Self.failures(locale: "zh-Hans", overrides: overrides, server: server)
                #expect(english.status.message == "Sorry: 404 Not Found")
                #expect(chinese.status.message == "抱歉：404 Not Found")
            }
            // A table the bundle lacks gives no texts.
            let none = try MessageOverrides(bundle: bundle, table: "Missing")
            #expect(none == MessageOverrides([:]))
        }
    }

    @Test("a table that is nested, not of strings or too large is refused with a clear error")
    func refused() async throws {
        try await withTemporaryFolder("overrides") { folder in
            let bundleURL = folder.appendingPathComponent("Bad.bundle")
            let english = bundleURL.appendingPathComponent("en.lproj")
            try FileManager.default.createDirectory(at: english, withIntermediateDirectories: true)
            let cases: [(String, Data)] = [
                ("Nested", Data(("\"a\" = " + String(repeating: "{", count: 100_000)).utf8)),
                ("Numbers", Data("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>a</key><integer>1</integer></dict></plist>".utf8)),
                ("Huge", Data(repeating: UInt8(ascii: " "), count: 4 * 1024 * 1024 + 1)),
            ]
            for (name, bytes) in cases { try bytes.write(to: english.appendingPathComponent("\(name).strings")) }
            let bundle = try #require(Bundle(url: bundleURL))
            for (name, _) in cases {
                let error = #expect(throws: APIError.self, "\(name)") { _ = try MessageOverrides(bundle: bundle, table: name) }
                #expect(error?.code == .invalidDefinition)
                #expect(error?.localizedMessage(in: Locale(identifier: "en")).contains("\(name).strings") == true, "\(String(describing: error))")
            }
        }
    }
}
