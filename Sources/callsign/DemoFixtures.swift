import Callsign
import CallsignTesting
import Foundation
import Synchronization

// The demo API's values and helpers: tokens, decoded types, an endpoint enum.

/// Counts the demo's token refreshes.
final class RefreshCounter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// Tokens for the demo: starts with an expired one, refreshes through the demo API.
struct DemoTokens: TokenProvider {
    let client: APIClient
    let refreshes: RefreshCounter

    func initialToken() async throws -> AccessToken { AccessToken("demo-access-1") }

    func refreshToken(replacing stale: AccessToken) async throws -> AccessToken {
        refreshes.increment()
        let body = try await client.call("TokenRefresh").json()
        guard let token = body["access_token"]?.stringValue else {
            throw cliError(.authentication, "the refresh answer has no access_token")
        }
        return AccessToken(token)
    }
}

struct DemoTopic: Decodable { let id: Int; let title: String }
struct DemoProfile: Decodable { let id: Int; let name: String; let bio: String }
struct DemoBoard: Decodable { let id: Int?; let title: String }
struct DemoUser: Decodable { let id: Int; let name: String }

/// Malibu's example, as an endpoint enum against the demo API.
enum DemoBoards: Endpoint {
    case show(id: Int)
    case create(title: String)

    static let headers: Headers = ["Accept": "application/json"]

    var request: Request {
        switch self {
        case .show(let id): .get("demo/boards/{id}", parameters: ["id": .int(id)])
        case .create(let title): .post("demo/boards", parameters: ["title": .string(title)])
        }
    }

    var acceptedStatusCodes: StatusCodes? {
        if case .create = self { [201] } else { nil }
    }
}

/// Formatting for the demo's lines.
enum APIClientDemoFormat {
    static func seconds(_ duration: Duration) -> String {
        let (whole, fraction) = duration.components
        guard fraction != 0 else { return "\(whole) s" }  // whole seconds: no floating point at all
        return "\((Double(whole) + Double(fraction) / 1e18).formatted(.number.precision(.fractionLength(0...3)))) s"
    }
}
