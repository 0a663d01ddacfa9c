import Callsign
import CallsignPostgres
import Foundation
import PostgresNIO

// The ```swift blocks about rate limits shared through PostgreSQL — in Resilience.md ("One limit
// for a fleet") and in CallsignPostgres.md ("One rate limit for the fleet") — compiled in the
// context they need. ArticleSamplesTests checks that each block appears here line for line:
// change the articles and this file together.

enum SharedRateLimitSamples {
    private static func show(_ text: String) {}

    // Resilience.md
    static func fleetLimit(postgres: PostgresClient) {
        var configuration = APIClient.Configuration()
        let shared = PostgresRateLimitStore(client: postgres)
        configuration.rateLimits = RateLimits(perOrigin: .perSecond(5), store: shared)
        _ = configuration
    }

    // CallsignPostgres.md
    static func postgresStore(postgres: PostgresClient) async throws {
        let shared = PostgresRateLimitStore(client: postgres)
        let client = APIClient(configuration: .init {
            $0.rateLimits = RateLimits(perOrigin: .perSecond(5), perTag: ["search": .per(10, .seconds(10))], store: shared)
        })
        _ = client

        if let wait = try await shared.closedFor("origin https://api.example.com:443") {
            show("Try again in \(wait)")
        }
    }
}
