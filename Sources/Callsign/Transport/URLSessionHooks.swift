#if canImport(FoundationNetworking)
public import FoundationNetworking
#else
public import Foundation
#endif

/// An app's own answers to what URLSession asks and Callsign does not answer itself, for
/// ``URLSessionTransport/init(configuration:spoolDirectory:hooks:)``: an authentication challenge
/// (a client certificate from the keychain, a proxy's or a server's own scheme), and each task's
/// metrics (connection reuse, DNS, TLS and transfer times, as URLSession measured them).
///
/// Callsign answers first what it owns — the proxy's credentials from
/// ``APIClient/Configuration/proxy``, and the server's trust when `configuration.tls` sets roots
/// or pins — and hands every other challenge to ``challenge``; returning `nil` keeps Callsign's
/// answer (a 401 reaches the caller as a response, and its ``AuthenticationScheme`` handles it).
///
/// ```swift
/// let hooks = URLSessionHooks(
///     challenge: { challenge, _ in
///         guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodClientCertificate,
///               challenge.protectionSpace.host == "api.example.com",
///               let identity = Keychain.identity(label: "device") else { return nil }
///         return (.useCredential, URLCredential(identity: identity, certificates: nil, persistence: .forSession))
///     },
///     metrics: { metrics, _ in
///         for transaction in metrics.transactionMetrics { log.debug("reused: \(transaction.isReusedConnection)") }
///     })
/// let client = APIClient(transport: URLSessionTransport(configuration: .default, hooks: hooks))
/// ```
///
/// A credential is the app's to send: check the challenge's `protectionSpace.host` before
/// answering, as the example does — a redirect may lead to another host.
public struct URLSessionHooks: Sendable {
    /// An answer to a challenge: what to do, and the credential to use.
    public typealias Answer = (disposition: URLSession.AuthChallengeDisposition, credential: URLCredential?)

    /// Answers a challenge Callsign leaves open, or returns `nil` for Callsign's answer.
    public var challenge: (@Sendable (URLAuthenticationChallenge, URLSessionTask) async -> Answer?)?
    /// Told each task's metrics when URLSession has collected them (Apple platforms; Linux's
    /// FoundationNetworking collects none).
    public var metrics: (@Sendable (URLSessionTaskMetrics, URLSessionTask) -> Void)?

    /// Hooks for what you give; `nil` leaves it to Callsign.
    public init(
        challenge: (@Sendable (URLAuthenticationChallenge, URLSessionTask) async -> Answer?)? = nil,
        metrics: (@Sendable (URLSessionTaskMetrics, URLSessionTask) -> Void)? = nil
    ) {
        self.challenge = challenge
        self.metrics = metrics
    }
}
