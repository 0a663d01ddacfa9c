import Callsign
import Foundation

// The ```swift blocks of the articles' sections on issue 38's features (Languages.md: your own
// words), compiled in the context they need. ArticleSamplesTests checks that each block appears
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
