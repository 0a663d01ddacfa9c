@testable import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// Tokens from the test server's `/refresh` route, which counts calls.
struct ServerTokens: TokenProvider {
    let refreshURL: URL
    let client: APIClient
    let initial: String

    func initialToken() async throws -> AccessToken { AccessToken(initial) }

    func refreshToken(replacing stale: AccessToken) async throws -> AccessToken {
        let body = try await client.send(.post(refreshURL.absoluteString)).validate().json()
        guard let token = body["token"]?.stringValue else { throw APIError(.decoding, "no token") }
        return AccessToken(token)
    }
}

/// A server whose `/protected` accepts only the current token and whose `/refresh` issues the next.
func installTokenRoutes(on server: TestServer, refreshFails: Bool = false) {
    let valid = Mutex("t1")
    server.route("/protected") { request in
        let current = valid.withLock { $0 }
        guard request.header("Authorization") == "Bearer \(current)" else {
            return .json(["error": "stale token"], status: 401, headers: [("WWW-Authenticate", "Bearer realm=\"api\"")])
        }
        return .json(["ok": true, "id": .string(request.header("X-Request-ID") ?? "")])
    }
    server.route("/refresh") { _ in
        if refreshFails { return .json(["error": "refresh token revoked"], status: 500) }
        // Slow enough that every 401 arrives while the refresh is in flight.
        try? await Task.sleep(for: .milliseconds(50))
        return .json(["token": .string(valid.withLock { $0 })])
    }
}

@Suite("Authentication", .hangGuard)
struct AuthenticationTests {
    @Test("basic, bearer, custom and parameters go only to authorized requests on the client's origins; a request no definition built carries them to the client's own origin unless it opts out")
    func staticCredentials() async throws {
        try await TestServer.withRunning { other in
            for (authentication, expected) in [
                (Authentication.basic(username: "ape", password: "group"), "Basic YXBlOmdyb3Vw"),
                (.bearer("ASDF"), "Bearer ASDF"),
                (.authorization("Token token=ASDF"), "Token token=ASDF"),
            ] {
                var authentication = authentication
                authentication.parameters = ["api_key": "k1"]
                try await withServer(configure: { $0.authentication = authentication }) { server, client in
                    var authorized = Request.get("anything/a")
                    authorized.needsAuthorization = true
                    let echo = try await client.send(authorized).json()
                    #expect(echo["headers"]?["Authorization"]?.stringValue == expected)
                    #expect(echo["args"]?["api_key"] == "k1")

                    var optedOut = Request.get("anything/b")
                    optedOut.needsAuthorization = false
                    let plain = try await client.send(optedOut).json()
                    #expect(plain["headers"]?["Authorization"] == nil)
                    #expect(plain["args"]?["api_key"] == nil)
                    #expect(try await client.get("anything/b").authorized(false).send().json()["headers"]?["Authorization"] == nil)

                    // Nothing said: the client's own origin gets them, by request and by builder…
                    let byDefault = try await client.send(.get("anything/d")).json()
                    #expect(byDefault["headers"]?["Authorization"]?.stringValue == expected)
                    #expect(try await client.get("anything/e").send().json()["headers"]?["Authorization"]?.stringValue == expected)
                    // …and another origin does not.
                    _ = try await client.send(.get(other.url("/anything/f").absoluteString))
                    #expect(other.requests.last?.header("Authorization") == nil)
                    #expect(other.requests.last?.query("api_key") == nil)

                    var elsewhere = Request.get(other.url("/anything/c").absoluteString)
                    elsewhere.needsAuthorization = true
                    _ = try await client.send(elsewhere)
                    #expect(other.requests.last?.header("Authorization") == nil)
                    #expect(other.requests.last?.query("api_key") == nil)
                }
            }
        }
    }

    @Test("an endpoint's own base URL is trusted for its authorized requests; an endpoint that says nothing gets no credentials there")
    func endpointOrigin() async throws {
        try await TestServer.withRunning { server in
            enum Secure: Endpoint {
                case me
                static var baseURL: URL? { TestServerBox.url }
                var request: Request {
                    var request = Request.get("anything/me")
                    request.needsAuthorization = true
                    return request
                }
            }
            // An endpoint of another API, which says nothing: the client's credentials stay home.
            enum ThirdParty: Endpoint {
                case status
                static var baseURL: URL? { TestServerBox.url }
                var request: Request { .get("anything/status") }
            }
            TestServerBox.url = server.baseURL
            let client = APIClient(configuration: .init { $0.authentication = .bearer("e") })
            let echo = try await client.send(Secure.me).json()
            #expect(echo["headers"]?["Authorization"] == "Bearer e")
            #expect(try await client.send(ThirdParty.status).json()["headers"]?["Authorization"] == nil)
        }
    }

    @Test("50 concurrent 401s cause exactly one refresh; every request succeeds; none resent with the stale token")
    func singleFlightRefresh() async throws {
        try await withServer { server, _ in
            installTokenRoutes(on: server)
            let tokens = ServerTokens(refreshURL: server.url("/refresh"), client: APIClient(), initial: "t0")
            let expired = Mutex(0)
            let client = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.authentication = .tokens(tokens) { _ in expired.withLock { $0 += 1 } }
            })
            let results = await withTaskGroup(of: Result<JSONValue, APIError>.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        var request = Request.get("protected", headers: ["X-Request-ID": "\(index)"])
                        request.needsAuthorization = true
                        do {
                            return .success(try await client.send(request).validate().json())
                        } catch {
                            return .failure(error as? APIError ?? APIError(.transport, "\(error)"))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.allSatisfy { if case .success = $0 { true } else { false } })
            #expect(server.hits("/refresh") == 1)
            #expect(expired.withLock { $0 } == 0)
            let protected = server.requests.filter { $0.rawPath == "/protected" }
            let stale = protected.filter { $0.header("Authorization") == "Bearer t0" }.compactMap { $0.header("X-Request-ID") }
            let fresh = protected.filter { $0.header("Authorization") == "Bearer t1" }.compactMap { $0.header("X-Request-ID") }
            #expect(Set(stale).count == stale.count, "a request was sent twice with the stale token")
            #expect(Set(fresh) == Set((0..<50).map(String.init)))
            #expect(protected.count == stale.count + fresh.count)
        }
    }

    @Test("a failed refresh fails every waiting request with the same error and fires the hook once")
    func refreshFailure() async throws {
        try await withServer { server, _ in
            installTokenRoutes(on: server, refreshFails: true)
            let tokens = ServerTokens(refreshURL: server.url("/refresh"), client: APIClient(), initial: "t0")
            let expired = Mutex(0)
            let client = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.authentication = .tokens(tokens) { _ in expired.withLock { $0 += 1 } }
            })
            let errors = await withTaskGroup(of: APIError?.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        var request = Request.get("protected")
                        request.needsAuthorization = true
                        return await apiError { _ = try await client.send(request) }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(errors.count == 50)
            #expect(errors.allSatisfy { $0?.code == .authentication })
            #expect(Set(errors.compactMap { $0?.message }).count == 1)
            #expect(expired.withLock { $0 } == 1)
            #expect(server.hits("/refresh") == 1)
        }
    }

    @Test("a token about to expire is refreshed before the request, not after a 401")
    func proactiveRefresh() async throws {
        final class Counter: Sendable { let count = Mutex(0) }
        struct Expiring: TokenProvider {
            let refreshes: Counter
            func initialToken() async throws -> AccessToken { AccessToken("t0", expiresAt: Date().addingTimeInterval(5)) }
            func refreshToken(replacing stale: AccessToken) async throws -> AccessToken {
                refreshes.count.withLock { $0 += 1 }
                return AccessToken("t1", expiresAt: Date().addingTimeInterval(3600))
            }
        }
        let provider = Expiring(refreshes: Counter())
        try await withServer(configure: { $0.authentication = .tokens(provider, refreshBefore: .seconds(30)) }) { server, client in
            installTokenRoutes(on: server)
            var request = Request.get("protected")
            request.needsAuthorization = true
            _ = try await client.send(request).validate()
            _ = try await client.send(request).validate()
            #expect(provider.refreshes.count.withLock { $0 } == 1)
            #expect(server.requests.filter { $0.rawPath == "/protected" }.map { $0.header("Authorization") } == ["Bearer t1", "Bearer t1"])
        }
    }

    @Test("an access token's description never shows the token")
    func tokenDescription() {
        #expect(!AccessToken("s3cr3t").description.contains("s3cr3t"))
    }
}

/// Lets a local endpoint type reach the test server's URL.
enum TestServerBox {
    nonisolated(unsafe) static var url: URL?
}

@Suite("Trusted origins", .hangGuard)
struct TrustedOriginTests {
    @Test("definitions fetched from a server grant credentials to their origins only when the caller trusts them")
    func fetchedDefinitionsDoNotWidenTrust() async throws {
        try await TestServer.withRunning { definitionsServer in
            try await TestServer.withRunning(host: "127.0.0.2") { elsewhere in
                definitionsServer.route("/api.yaml") { _ in
                    .text("DEFAULT:\n  baseURL: \(elsewhere.baseURL.absoluteString)\n  needsAuthorization: true\nWho:\n  path: anything/who\n", contentType: "application/yaml")
                }
                let fetched = try await APIDefinitions.fetch(from: definitionsServer.url("/api.yaml"))
                #expect(!fetched.trustsItsOrigins)
                let client = APIClient(definitions: fetched, configuration: .init { $0.authentication = .bearer("s3cr3t") })
                _ = try await client.call("Who")
                #expect(elsewhere.requests.last?.header("Authorization") == nil)

                let trusted = try await APIDefinitions.fetch(from: definitionsServer.url("/api.yaml"), trustingOrigins: true)
                let trusting = APIClient(definitions: trusted, configuration: .init { $0.authentication = .bearer("s3cr3t") })
                _ = try await trusting.call("Who")
                #expect(elsewhere.requests.last?.header("Authorization") == "Bearer s3cr3t")
            }
        }
    }
}

/// A provider whose fetches wait at a gate the test opens, answering from a script.
private final class GatedProvider: TokenProvider {
    private let state = Mutex<
        (opened: Bool, waiters: [CheckedContinuation<Void, Never>], answers: [Result<String, any Error>], fetches: Int, watchers: CountWatchers)
    >((false, [], [], 0, CountWatchers()))

    init(answers: [Result<String, any Error>]) { state.withLock { $0.answers = answers } }

    var fetches: Int { state.withLock { $0.fetches } }

    func open() {
        let waiters = state.withLock { state in
            state.opened = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once a fetch waits at the gate (the store is fetching), without polling.
    func waitUntilFetching() async {
        await CountWatchers.wait { continuation in
            state.withLock { $0.watchers.register(1, current: $0.waiters.count, continuation) }
        }
    }

    private func next() async throws -> AccessToken {
        await withCheckedContinuation { continuation in
            let (resumeNow, watchers) = state.withLock { state in
                if state.opened { return (true, [CheckedContinuation<Void, Never>]()) }
                state.waiters.append(continuation)
                return (false, state.watchers.take(reaching: state.waiters.count))
            }
            for watcher in watchers { watcher.resume() }
            if resumeNow { continuation.resume() }
        }
        let answer = state.withLock { state in
            state.fetches += 1
            return state.answers.isEmpty ? .success("spare") : state.answers.removeFirst()
        }
        return AccessToken(try answer.get())
    }

    func initialToken() async throws -> AccessToken { try await next() }
    func refreshToken(replacing stale: AccessToken) async throws -> AccessToken { try await next() }
}

private final class Counter: Sendable {
    let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
}

@Suite("Token store races", .hangGuard)
struct TokenStoreRaceTests {
    @Test("signing out while a fetch is in flight does not bring the old session back")
    func signOutDuringFetch() async throws {
        let provider = GatedProvider(answers: [.success("old-session"), .success("new-session")])
        let expired = Counter()
        let store = CredentialStore(provider: provider, leeway: .zero, onSessionExpired: { _ in expired.increment() })
        let waiting = Task { try await store.token() }
        await provider.waitUntilFetching()
        #expect(await store.isFetching)
        await store.reset()  // the user signs out
        provider.open()      // the old fetch finishes anyway
        let first = try? await waiting.value
        #expect(first == nil, "the request that waited must not get the old session")
        let next = try await store.token()
        #expect(next.value == "new-session")
        #expect(expired.value.withLock { $0 } == 0, "a sign-out is not an expired session")
    }

    @Test("onSessionExpired fires for a failed fetch, not for a cancelled one")
    func sessionExpiredOnlyOnFailure() async throws {
        let expired = Counter()
        let failing = GatedProvider(answers: [.failure(URLError(.userAuthenticationRequired))])
        failing.open()
        let store = CredentialStore(provider: failing, leeway: .zero, onSessionExpired: { _ in expired.increment() })
        await #expect(throws: APIError.self) { try await store.token() }
        #expect(expired.value.withLock { $0 } == 1)

        let cancelled = GatedProvider(answers: [.failure(CancellationError())])
        cancelled.open()
        let quiet = Counter()
        let other = CredentialStore(provider: cancelled, leeway: .zero, onSessionExpired: { _ in quiet.increment() })
        await #expect(throws: APIError.self) { try await other.token() }
        #expect(quiet.value.withLock { $0 } == 0)
    }

    @Test("a provider that calls back through the same client gets a clear error, not a deadlock")
    func reentrantProvider() async throws {
        try await TestServer.withRunning { server in
            let box = ClientBox()
            let client = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.retry = .none
                $0.authentication = .tokens(CallingBackProvider(box: box))
            })
            box.client.withLock { $0 = client }
            let error = await apiError { _ = try await client.get("/get").authorized().send() }
            #expect(error?.code == .authentication)
            #expect(error?.message.contains("called back") == true, "\(error?.message ?? "")")
        }
    }
}

private final class ClientBox: Sendable {
    let client = Mutex<APIClient?>(nil)
}

/// Logs in through the very client that needs the token.
private struct CallingBackProvider: TokenProvider {
    let box: ClientBox
    func initialToken() async throws -> AccessToken {
        guard let client = box.client.withLock({ $0 }) else { throw APIError(.authentication, "no client") }
        let response = try await client.get("/get").authorized().send()
        return AccessToken("\(response.status.code)")
    }
    func refreshToken(replacing stale: AccessToken) async throws -> AccessToken { try await initialToken() }
}
