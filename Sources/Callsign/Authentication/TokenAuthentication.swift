public import Foundation

/// Tokens from a ``TokenProvider``, refreshed before they expire and after a 401 with exactly
/// one refresh in flight (``Authentication/tokens(_:refreshBefore:onSessionExpired:)``).
///
/// ```swift
/// configuration.authentication = .tokens(SessionTokens(auth: authClient)) { _ in await showLogin() }
/// ```
///
/// Copies share the same tokens, so clients configured with one refresh together.
public struct TokenAuthentication: AuthenticationScheme {
    let store: CredentialStore

    /// Creates the scheme.
    ///
    /// - Parameters:
    ///   - provider: where tokens come from.
    ///   - refreshBefore: how long before its expiry a token is refreshed. Default 30 seconds.
    ///   - onSessionExpired: called once per failed refresh, for example to show a login screen.
    public init(
        _ provider: some TokenProvider, refreshBefore: Duration = .seconds(30),
        onSessionExpired: (@Sendable (APIError) async -> Void)? = nil
    ) {
        store = CredentialStore(provider: provider, leeway: refreshBefore, onSessionExpired: onSessionExpired)
    }

    public func authorize(_ request: Request, context: MiddlewareContext) async throws -> Request {
        var request = request
        request.headers["Authorization"] = try await store.token().authorizationValue
        return request
    }

    /// After a 401, the request with a token newer than the one it carried: the one refresh in
    /// flight, or a new one.
    public func reauthorize(_ request: Request, after response: Response, context: MiddlewareContext) async throws -> Request? {
        guard response.status.code == 401, let rejected = request.headers["Authorization"] else { return nil }
        var again = request
        again.headers["Authorization"] = try await store.refresh(rejected: rejected).authorizationValue
        return again
    }

    public func signOut() async { await store.reset() }
}

/// A source of access tokens for ``Authentication/tokens(_:refreshBefore:onSessionExpired:)``.
///
/// ```swift
/// struct SessionTokens: TokenProvider {
///     let auth: APIClient
///     func initialToken() async throws -> AccessToken {
///         try await auth.call("Login", parameters: credentials, as: AccessToken.self)
///     }
///     func refreshToken(replacing stale: AccessToken) async throws -> AccessToken {
///         try await auth.call("Refresh", parameters: ["refresh_token": .string(refreshToken)], as: AccessToken.self)
///     }
/// }
/// ```
public protocol TokenProvider: Sendable {
    /// The token to start with (from a keychain, a login, …).
    func initialToken() async throws -> AccessToken
    /// A new token to replace `stale`, which expired or was rejected.
    func refreshToken(replacing stale: AccessToken) async throws -> AccessToken
}

/// An access token and when it expires. Its description never shows the token.
public struct AccessToken: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The token itself. Secret.
    public var value: String
    /// When it expires, if known.
    public var expiresAt: Date?
    /// The authorization scheme. Default `Bearer`.
    public var scheme: String

    /// Creates a token.
    public init(_ value: String, expiresAt: Date? = nil, scheme: String = "Bearer") {
        self.value = value
        self.expiresAt = expiresAt
        self.scheme = scheme
    }

    /// The `Authorization` header value.
    public var authorizationValue: String { "\(scheme) \(value)" }

    /// The token an `Authorization` value carried (`Bearer abc`), as the provider gave it out.
    init(authorization: String) {
        let parts = authorization.split(separator: " ", maxSplits: 1)
        if parts.count == 2 {
            self.init(String(parts[1]), scheme: String(parts[0]))
        } else {
            self.init(authorization)
        }
    }

    public var description: String {
        "AccessToken(\(scheme), \(expiresAt.map { "expires \($0)" } ?? "no expiry"), value redacted)"
    }
}

/// Holds the current token and makes sure only one refresh runs at a time.
///
/// Every sign-out starts a new generation: a fetch that was in flight when the user signed out
/// may still finish, but its token belongs to the old generation and is thrown away, so a
/// sign-out can never be undone by a late refresh.
actor CredentialStore {
    private let provider: any TokenProvider
    private let leeway: Duration
    private let onSessionExpired: (@Sendable (APIError) async -> Void)?
    private var current: AccessToken?
    private var pending: Task<AccessToken, any Error>?
    private var generation = 0
    /// The stale token of the last failed refresh and its error: requests that were rejected
    /// with that token get the same error instead of starting (and failing) another refresh.
    private var lastFailure: (stale: String?, error: any Error)?

    /// The store whose provider the current task is running inside, if any: a provider that
    /// calls back through a client using the same store would wait for itself.
    @TaskLocal private static var fetchingStore: ObjectIdentifier?

    init(provider: any TokenProvider, leeway: Duration, onSessionExpired: (@Sendable (APIError) async -> Void)?) {
        self.provider = provider
        self.leeway = leeway
        self.onSessionExpired = onSessionExpired
    }

    /// A token good for at least the leeway: the current one, or a fresh one.
    func token() async throws -> AccessToken {
        try checkNotReentrant()
        let token: AccessToken
        if let pending {
            token = try await pending.value
        } else if let current {
            token = current
        } else {
            token = try await run(replacing: nil) { try await $0.initialToken() }
        }
        guard isExpiring(token) else { return token }
        // Refresh once before use; if the new token expires soon too, it is still the best there is.
        if let pending { return try await pending.value }
        if let current, current != token { return current }
        return try await run(replacing: token) { try await $0.refreshToken(replacing: token) }
    }

    private func isExpiring(_ token: AccessToken) -> Bool {
        guard let expiry = token.expiresAt else { return false }
        return expiry.timeIntervalSinceNow < leeway.seconds
    }

    /// A token to use after the one whose `Authorization` value was `rejected` was refused: a
    /// newer one if another request already refreshed, else the result of the one refresh in
    /// flight, else a new refresh.
    func refresh(rejected: String) async throws -> AccessToken {
        try checkNotReentrant()
        if let pending { return try await pending.value }
        if let current, current.authorizationValue != rejected { return current }
        if let lastFailure, lastFailure.stale == rejected { throw lastFailure.error }
        let stale = current ?? AccessToken(authorization: rejected)
        return try await run(replacing: stale) { try await $0.refreshToken(replacing: stale) }
    }

    /// Signs out: forgets the token, ends the fetch in flight, and starts a new generation so
    /// that fetch's result, if it still arrives, is discarded.
    func reset() {
        generation += 1
        current = nil
        lastFailure = nil
        pending?.cancel()
        pending = nil
    }

    /// Whether a fetch is in flight (for tests of sign-out races).
    var isFetching: Bool { pending != nil }

    private func checkNotReentrant() throws(APIError) {
        guard Self.fetchingStore == ObjectIdentifier(self) else { return }
        throw APIError(
            .authentication,
            localized: "the token provider called back through a client that uses the same tokens, and would wait for itself; give the provider a client without this authentication, or send its requests with needsAuthorization = false")
    }

    private func run(
        replacing stale: AccessToken?, _ fetch: @escaping @Sendable (any TokenProvider) async throws -> AccessToken
    ) async throws -> AccessToken {
        let provider = self.provider
        let identity = ObjectIdentifier(self)
        let task = Task<AccessToken, any Error> {
            do {
                return try await Self.$fetchingStore.withValue(identity) { try await fetch(provider) }
            } catch let error as APIError where error.code == .authentication || error.code == .cancelled {
                throw error
            } catch is CancellationError {
                throw APIError(.cancelled, localized: "the token fetch was cancelled")
            } catch {
                throw APIError(.authentication, localized: "the session could not be renewed: \(error)", underlyingError: error)
            }
        }
        let started = generation
        pending = task
        do {
            let token = try await task.value
            // Signed out meanwhile: this token belongs to the old session.
            guard generation == started else {
                throw APIError(.authentication, localized: "signed out while the token was being fetched")
            }
            current = token
            pending = nil
            // A provider that hands out again the token whose refresh just failed (a stale one
            // from a keychain) has not renewed the session: requests rejected with it keep
            // failing with that error instead of starting another refresh.
            if lastFailure?.stale != token.authorizationValue { lastFailure = nil }
            return token
        } catch {
            guard generation == started else { throw error }  // a sign-out already reset the state
            current = nil
            pending = nil
            let apiError = error as? APIError
            let cancelled = apiError?.code == .cancelled || task.isCancelled
            if !cancelled { lastFailure = (stale?.authorizationValue, error) }
            // The session expired only when a fetch really failed: not on cancellation, and not
            // after a sign-out (handled above).
            if !cancelled, let onSessionExpired, let apiError {
                await onSessionExpired(apiError)
            }
            throw error
        }
    }
}
