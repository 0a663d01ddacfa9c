import Callsign
import Foundation

// The ```swift blocks of Resilience.md's "Hedged requests" section, compiled in the context they
// need. ArticleSamplesTests checks that each block appears in a *Samples.swift file line for
// line: change the article and this file together.

enum HedgingSamples {
    static func perClientAndCall() async throws {
        let client = APIClient(configuration: .init {
            $0.hedging = .after(.milliseconds(200))   // every idempotent call of this client
        })
        let quote = try await client.get("quotes/latest").hedging(.after(.milliseconds(150))).send()
        let report = try await client.get("reports/yearly").hedging(.off).send()   // never this one
        _ = (quote, report)
    }

    static func perDefinition() {
        var search = APIDefinition(name: "Search", path: "search")
        search.hedging = .observedPercentile(95, minimum: .milliseconds(50), fallback: .milliseconds(300))
        _ = search
    }
}
