import Callsign
import Foundation

// The ```swift blocks of the articles' sections on issue 38's features (Languages.md: your own
// words; Definitions.md: from a server, kept), compiled in the context they need. ArticleSamplesTests checks that each block appears
// here line for line: change the article and this file together.

enum SeedFeatureSamples {
    static func messageOverrides(definitions: APIDefinitions) throws {
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.messageOverrides = MessageOverrides([
                "en": ["the server answered %@; accepted: %@": "The service answered %1$@."],
                "zh-Hans": ["the server answered %@; accepted: %@": "服务返回了 %1$@。"],
            ])
        })
        _ = client

        var configuration = APIClient.Configuration()
        configuration.messageOverrides = try MessageOverrides(bundle: .main, table: "CallsignMessages")
    }
}

extension SeedFeatureSamples {
    static func keptDefinitions(definitionsURL: URL) async throws {
        let folder = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
        let kept = folder.appendingPathComponent("api-definitions.callsign")
        let definitions = try await APIDefinitions.fetch(from: definitionsURL, keepingCopyAt: kept,
                                                         expectedSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
        _ = definitions
    }
}
