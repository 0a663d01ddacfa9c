public import Foundation

/// Credentials for requests that need authorization (`needsAuthorization`), added only when the
/// request goes to one of the client's own origins.
///
/// ```swift
/// configuration.authentication = .basic(username: "ape", password: "group")
/// configuration.authentication = .bearer("eyJhbGciOi…")
/// configuration.authentication = .authorization("Token token=ASDF")          // any Authorization value
/// configuration.authentication = .tokens(MyTokenProvider()) { error in await showLogin() }
///
/// // RFAPI's authorization headers and parameters, alone or with any of the above:
/// var auth = Authentication.bearer(token)
/// auth.headers["X-Device"] = deviceID
/// auth.parameters["api_key"] = "…"
/// ```
///
/// Credentials go only to the client's trusted origins, an explicit set: the origin of
/// ``APIClient/Configuration/baseURL``, those of the base URLs and absolute paths in trusted
/// definitions (built in code or loaded from a local file — definitions fetched from a server
/// only with `fetch(from:using:trustingOrigins: true)`), and ``additionalOrigins``. A request to
/// any other origin never receives credentials, and neither does a request that was redirected
/// to another origin.
public struct Authentication: Sendable {
    enum Credential: Sendable {
        case none
        case basic(username: String, password: String)
        case bearer(String)
        case authorization(String)
        case tokens(CredentialStore)

        /// Whether it sets the `Authorization` header.
        var setsAuthorization: Bool {
            if case .none = self { return false }
            return true
        }
    }

    let credential: Credential
    /// Extra headers added to authorized requests (RFAPI's `authorizationHeader`). Default none.
    public var headers: Headers
    /// Parameters added to authorized requests (RFAPI's `authorizationParameters`); they win
    /// over a call's parameter of the same name. Default none.
    public var parameters: Parameters
    /// Where ``parameters`` go. Default ``CommonParameterPlacement/parameters``.
    public var parameterPlacement: CommonParameterPlacement
    /// More origins that may receive credentials, besides the client's base URLs. Default none.
    public var additionalOrigins: [URL]

    init(credential: Credential) {
        self.credential = credential
        headers = [:]
        parameters = [:]
        parameterPlacement = .parameters
        additionalOrigins = []
    }

    /// HTTP basic authentication (RFC 7617).
    public static func basic(username: String, password: String) -> Authentication {
        Authentication(credential: .basic(username: username, password: password))
    }

    /// A bearer token (RFC 6750).
    public static func bearer(_ token: String) -> Authentication { Authentication(credential: .bearer(token)) }

    /// Any `Authorization` header value, such as `Token token=…`.
    public static func authorization(_ value: String) -> Authentication { Authentication(credential: .authorization(value)) }

    /// Only headers and parameters, without an `Authorization` header (RFAPI's style).
    public static func headers(_ headers: Headers, parameters: Parameters = [:]) -> Authentication {
        var authentication = Authentication(credential: .none)
        authentication.headers = headers
        authentication.parameters = parameters
        return authentication
    }

    /// Tokens from a ``TokenProvider``: fetched when first needed, refreshed before they expire
    /// and after a 401 — exactly one refresh at a time, however many requests need it. A request
    /// rejected with a stale token is sent once more with the new one. When a refresh fails,
    /// every waiting request fails with the same ``APIError`` (``APIError/Code/authentication``)
    /// and `onSessionExpired` runs once.
    ///
    /// Copies of this value share the same tokens, so clients configured with it refresh together.
    ///
    /// - Parameters:
    ///   - provider: where tokens come from.
    ///   - refreshBefore: how long before its expiry a token is refreshed. Default 30 seconds.
    ///   - onSessionExpired: called once per failed refresh, for example to show a login screen.
    public static func tokens(
        _ provider: some TokenProvider, refreshBefore: Duration = .seconds(30),
        onSessionExpired: (@Sendable (APIError) async -> Void)? = nil
    ) -> Authentication {
        Authentication(
            credential: .tokens(CredentialStore(provider: provider, leeway: refreshBefore, onSessionExpired: onSessionExpired)))
    }

    /// Forgets the current token (for example after logout); the next request fetches a new one.
    public func signOut() async {
        if case .tokens(let store) = credential { await store.reset() }
    }
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
    private var lastFailure: (stale: AccessToken?, error: any Error)?

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

    /// A token to use after `rejected` was refused: a newer one if another request already
    /// refreshed, else the result of the one refresh in flight, else a new refresh.
    func refresh(rejected: AccessToken) async throws -> AccessToken {
        try checkNotReentrant()
        if let pending { return try await pending.value }
        if let current, current != rejected { return current }
        if let lastFailure, lastFailure.stale == rejected { throw lastFailure.error }
        return try await run(replacing: rejected) { try await $0.refreshToken(replacing: rejected) }
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
            localized: "the token provider called back through a client that uses the same tokens, and would wait for itself; give the provider a client without this authentication, or send its requests without needsAuthorization")
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
            lastFailure = nil
            return token
        } catch {
            guard generation == started else { throw error }  // a sign-out already reset the state
            current = nil
            pending = nil
            let apiError = error as? APIError
            let cancelled = apiError?.code == .cancelled || task.isCancelled
            if !cancelled { lastFailure = (stale, error) }
            // The session expired only when a fetch really failed: not on cancellation, and not
            // after a sign-out (handled above).
            if !cancelled, let onSessionExpired, let apiError {
                await onSessionExpired(apiError)
            }
            throw error
        }
    }
}
