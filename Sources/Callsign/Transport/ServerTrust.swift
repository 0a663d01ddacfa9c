import Foundation
import SwiftASN1
import X509

/// The one decision on a server's certificates when ``TLSSettings`` asks for more than the
/// system's default: trust roots of the app's own, the host's pins. The same code on every
/// platform, certificates in as DER, a refusal (or `nil`) out — tested on Linux, where the
/// URLSession transport on Apple platforms calls it with the chain read from the system's trust
/// object, and the AsyncHTTPClient transport with the certificate its TLS library verified.
///
/// - Trust roots of the app's own (``TLSSettings/TrustRoots/only(_:)``, and
///   ``TLSSettings/TrustRoots/adding(_:)`` once the system's roots refused the chain) are checked
///   by X.509 path validation (RFC 5280, swift-certificates): the chain must lead to one of the
///   roots, every certificate must be valid now, and the server's certificate must name the host
///   (or its IP address).
/// - The system's roots are the system's to judge: its verdict comes in as ``SystemVerdict``.
/// - Pins are checked after, never instead: one certificate of the validated chain must have one
///   of the host's public keys.
enum ServerTrust {
    /// What the platform's own validation, against the system's roots, said of the chain.
    enum SystemVerdict: Sendable, Equatable {
        case trusted
        /// The chain is out of its validity period.
        case expired
        /// The chain is valid, for another host.
        case hostMismatch
        /// The chain does not lead to a root the system trusts.
        case untrusted
        /// Not asked: the settings trust other roots only.
        case notAsked

        /// Apple's Security framework's error code from `SecTrustEvaluateWithError`, read:
        /// `errSecCertificateExpired` (−67818) and `errSecCertificateNotValidYet` (−67819),
        /// `errSecHostNameMismatch` (−67602); anything else is untrusted.
        init(securityErrorCode code: Int) {
            switch code {
            case -67818, -67819: self = .expired
            case -67602: self = .hostMismatch
            default: self = .untrusted
            }
        }
    }

    /// The most certificates read from a server's chain: real chains hold three or four.
    static let maximumChainLength = 16

    /// Decides whether to trust a server.
    ///
    /// - Parameters:
    ///   - chain: the server's certificates as DER, its own first, as the TLS handshake gave them.
    ///   - host: the host the request names (a name, or an IP address without brackets).
    ///   - system: the system's verdict on the chain, asked only when its roots take part.
    /// - Returns: why the server is refused, or `nil` to trust it.
    static func decide(chain: [Data], host: String, settings: TLSSettings, system: SystemVerdict, now: Date = Date()) async -> APIError? {
        var validated = chain
        switch (settings.trustRoots, system) {
        case (.system, .trusted), (.adding, .trusted):
            break
        case (.system, _), (.adding, .expired), (.adding, .hostMismatch):
            // An added root changes neither a certificate's dates nor the names it holds.
            return refusal(system == .notAsked ? .untrusted : system, host: host)
        case (.adding(let roots), _), (.only(let roots), _):
            switch await validate(chain, roots: roots, host: host, now: now) {
            case .success(let path): validated = path
            case .failure(let refusal): return refusal
            }
        }
        guard let digests = settings.pins?.activeDigests(for: host, now: now) else { return nil }
        return isPinned(validated, digests: digests)
            ? nil : .notSent(.certificatePinMismatch, "the certificate of \(host) has none of the public keys pinned for it (configuration.tls.pins)")
    }

    /// Whether one certificate of `chain` (DER) has a public key whose SHA-256 is in `digests`.
    static func isPinned(_ chain: [Data], digests: Set<String>) -> Bool {
        chain.prefix(maximumChainLength).contains { certificate in
            CertificateDER.subjectPublicKeyInfo(of: certificate).map { digests.contains(CertificatePins.digest(ofSubjectPublicKeyInfo: $0)) } ?? false
        }
    }

    /// The chain validated against `roots` alone: the path from the server's certificate to the
    /// root, as DER, or why there is none.
    static func validate(_ chain: [Data], roots: [TLSCertificate], host: String, now: Date) async -> Result<[Data], APIError> {
        guard !chain.isEmpty else { return .failure(refusal(.untrusted, host: host)) }
        let certificates: [Certificate]
        do {
            certificates = try chain.prefix(maximumChainLength).map { try Certificate(derEncoded: Array($0)) }
        } catch {
            return .failure(.notSent(.certificateUntrusted, "the certificate of \(host) cannot be read", underlyingError: error))
        }
        let anchors = CertificateStore(roots.compactMap { try? Certificate(derEncoded: Array($0.der)) })
        let intermediates = CertificateStore(certificates.dropFirst())
        let leaf = certificates[0]
        // Out of date says more than "untrusted": the usual reason, with its own code.
        if now < leaf.notValidBefore || now > leaf.notValidAfter { return .failure(refusal(.expired, host: host)) }
        let isAddress = IPAddressText.checked(host) != nil && (host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." })
        var verifier = Verifier(rootCertificates: anchors) {
            RFC5280Policy()
            ServerIdentityPolicy(serverHostname: isAddress ? nil : host, serverIP: isAddress ? host : nil)
        }
        switch await verifier.validate(leaf: leaf, intermediates: intermediates) {
        case .validCertificate(let path):
            return .success(path.compactMap(Self.der))
        case .couldNotValidate:
            // A path that holds without the host's name is a certificate for another host.
            var pathOnly = Verifier(rootCertificates: anchors) { RFC5280Policy() }
            if case .validCertificate = await pathOnly.validate(leaf: leaf, intermediates: intermediates) {
                return .failure(refusal(.hostMismatch, host: host))
            }
            return .failure(refusal(.untrusted, host: host))
        }
    }

    /// The refusal for what was found, in the same words on every transport.
    static func refusal(_ verdict: SystemVerdict, host: String) -> APIError {
        switch verdict {
        case .expired: .notSent(.certificateExpired, "the certificate of \(host) has expired or is not valid yet")
        case .hostMismatch: .notSent(.certificateHostMismatch, "the certificate of \(host) is valid, but for another host name")
        case .trusted, .untrusted, .notAsked:
            .notSent(.certificateUntrusted, "the certificate of \(host) does not lead to a trusted root (configuration.tls.trustRoots)")
        }
    }

    private static func der(_ certificate: Certificate) -> Data? {
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(certificate)) != nil else { return nil }
        return Data(serializer.serializedBytes)
    }
}
