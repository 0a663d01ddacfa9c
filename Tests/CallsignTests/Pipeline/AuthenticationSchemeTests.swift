import Callsign
import CallsignTesting
import Crypto
import Foundation
import HTTPTypes
import Logging
import Synchronization
import Testing

/// A scheme of the app's own: every request signed with an HMAC of its method, path, date and
/// body digest, over the exact bytes sent (the docs' example).
struct HMACSigning: AuthenticationScheme {
    let keyID: String
    let key: SymmetricKey
    /// How many requests the scheme was asked to sign: the stage's origin check decides.
    let signed = Counter()

    final class Counter: Sendable {
        let value = Mutex(0)
    }

    static func signature(method: String, path: String, date: String, digest: String, key: SymmetricKey) -> String {
        let text = [method, path, date, digest].joined(separator: "\n")
        return Data(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)).base64EncodedString()
    }

    func sign(_ request: WireRequest, context: MiddlewareContext) async throws -> WireRequest {
        signed.value.withLock { $0 += 1 }
        var request = request
        let date = "2026-11-25T12:00:00Z"
        let body = request.body?.inMemoryData ?? Data()
        let digest = Data(SHA256.hash(data: body)).base64EncodedString()
        let signature = Self.signature(method: request.head.method.rawValue, path: request.head.path ?? "/", date: date, digest: digest, key: key)
        request.head.headerFields[HTTPField.Name("X-Date")!] = date
        request.head.headerFields[HTTPField.Name("Content-Digest")!] = "sha-256=:\(digest):"
        request.head.headerFields[.authorization] = "HMAC keyId=\"\(keyID)\", signature=\"\(signature)\""
        return request
    }

    var secretNames: Set<String> { ["X-App-Proof"] }
    var secretValues: [String] { [keyID] }
}

@Suite("Authentication schemes: open to your own, behind one origin check", .hangGuard)
struct AuthenticationSchemeTests {
    @Test("a custom scheme signs the exact bytes sent: method, path with query, date and body digest")
    func hmacSigning() async throws {
        let key = SymmetricKey(data: Data("a shared secret of thirty-two b!".utf8))
        let scheme = HMACSigning(keyID: "app-1", key: key)
        try await withServer(configure: { $0.authentication = Authentication(scheme) }) { server, client in
            var request = Request.post("anything/orders", parameters: ["item": "board", "count": 2])
            request.query = ["dry": "no"]
            request.needsAuthorization = true
            _ = try await client.send(request).validate()

            let received = try #require(server.requests.last)
            let date = try #require(received.header("X-Date"))
            let digest = Data(SHA256.hash(data: received.body)).base64EncodedString()
            #expect(received.header("Content-Digest") == "sha-256=:\(digest):")
            let expected = HMACSigning.signature(method: received.method, path: received.uri, date: date, digest: digest, key: key)
            #expect(received.header("Authorization") == "HMAC keyId=\"app-1\", signature=\"\(expected)\"")
            #expect(scheme.signed.value.withLock { $0 } == 1)
        }
    }

    @Test("no scheme can skip the origin check: another origin, a request that opts out, a redirect away")
    func originCheck() async throws {
        let key = SymmetricKey(size: .bits256)
        let scheme = HMACSigning(keyID: "app-1", key: key)
        try await TestServer.withRunning { other in
            try await withServer(configure: { $0.authentication = Authentication(scheme) }) { server, client in
                var elsewhere = Request.get(other.url("/headers").absoluteString)
                elsewhere.needsAuthorization = true
                _ = try await client.send(elsewhere)
                var optedOut = Request.get("headers")
                optedOut.needsAuthorization = false
                _ = try await client.send(optedOut)
                #expect(scheme.signed.value.withLock { $0 } == 0)
                #expect(other.requests.last?.header("Authorization") == nil)

                var away = Request.get("redirect-to?url=\(other.url("/headers").absoluteString)")
                away.needsAuthorization = true
                _ = try await client.send(away)
                #expect(scheme.signed.value.withLock { $0 } == 1, "signed for its own origin, not for the hop")
                #expect(other.requests.last?.header("Authorization") == nil)
            }
        }
    }

    @Test("a scheme names its secrets: masked in logs and errors, and part of the cache's partition")
    func secrets() async throws {
        struct ProofScheme: AuthenticationScheme {
            let proof: String
            func authorize(_ request: Request, context: MiddlewareContext) async throws -> Request {
                var request = request
                request.headers["X-App-Proof"] = proof
                return request
            }
            var secretNames: Set<String> { ["X-App-Proof"] }
            var secretValues: [String] { [proof] }
        }
        let lines = CapturingLogHandler()
        try await withServer(configure: {
            $0.authentication = Authentication(ProofScheme(proof: "proof-4711-secret"))
            $0.observability.logger = Logger(label: "test") { _ in lines }
        }) { server, client in
            var request = Request.get("anything/echo")
            request.needsAuthorization = true
            let echo = try await client.send(request).json()
            #expect(echo["headers"]?["X-App-Proof"] == "proof-4711-secret", "sent as the scheme said")
            let logged = lines.lines.withLock { $0 }.joined(separator: "\n")
            #expect(logged.contains("X-App-Proof: REDACTED"))
            #expect(!logged.contains("proof-4711-secret"))
            #expect(!"\(client.configuration.authentication.map(String.init(describing:)) ?? "")".contains("proof-4711"))
        }
    }
}
