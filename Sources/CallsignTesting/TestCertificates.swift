public import Foundation
import Crypto
import SwiftASN1
import X509

/// Certificates made at run time for TLS tests: a private certificate authority and the leaves a
/// test needs. Nothing is committed, no key leaves the process, and every run has new keys.
///
/// ```swift
/// let certificates = try TestCertificates()
/// try await TestServer.withRunning(tls: .init(identity: certificates.localhost)) { server in
///     // trust certificates.authority.certificatePEM in the client
/// }
/// ```
public struct TestCertificates: Sendable {
    /// A certificate with its private key, both PEM.
    public struct Identity: Sendable {
        /// The certificate, then its issuer when it has one (a chain a server sends).
        public let certificateChainPEM: String
        /// The certificate alone.
        public let certificatePEM: String
        /// The PKCS#8 private key. A secret of the test only.
        public let privateKeyPEM: String
        /// The certificate's SubjectPublicKeyInfo, DER: what a pin hashes.
        public let subjectPublicKeyInfo: Data

        /// `sha256/<base64>` of the SubjectPublicKeyInfo, as curl and OkHttp write pins.
        public var pin: String {
            "sha256/" + Data(SHA256.hash(data: subjectPublicKeyInfo)).base64EncodedString()
        }
    }

    /// The private certificate authority that signs every other certificate here but `selfSigned`.
    public let authority: Identity
    /// A valid server certificate for `127.0.0.1`, `::1` and `localhost`.
    public let localhost: Identity
    /// The same names, expired yesterday.
    public let expired: Identity
    /// A valid certificate for `other.example`, not for the loopback names.
    public let otherHost: Identity
    /// A certificate for the loopback names that signed itself.
    public let selfSigned: Identity
    /// A client certificate, for mutual TLS.
    public let client: Identity

    /// Makes a new authority and leaves (P-256 keys, a few milliseconds).
    public init() throws {
        let now = Date()
        let authorityKey = P256.Signing.PrivateKey()
        let authorityName = try DistinguishedName { CommonName("Callsign Test CA") }
        let authorityCertificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(authorityKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400 * 30,
            issuer: authorityName, subject: authorityName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(authorityKey))
        let authority = try Self.identity(authorityCertificate, key: authorityKey, issuer: nil)
        self.authority = authority

        let loopback: [GeneralName] = [
            .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
            .ipAddress(ASN1OctetString(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
        ]
        func leaf(
            _ name: String, names: [GeneralName], from start: Date, to end: Date, usage: ExtendedKeyUsage.Usage = .serverAuth,
            selfSigned: Bool = false
        ) throws -> Identity {
            let key = P256.Signing.PrivateKey()
            let subject = try DistinguishedName { CommonName(name) }
            let certificate = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
                notValidBefore: start, notValidAfter: end,
                issuer: selfSigned ? subject : authorityName, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([usage])
                    SubjectAlternativeNames(names)
                },
                issuerPrivateKey: .init(selfSigned ? key : authorityKey))
            return try Self.identity(certificate, key: key, issuer: selfSigned ? nil : authority)
        }
        localhost = try leaf("localhost", names: loopback, from: now - 3600, to: now + 86_400)
        expired = try leaf("localhost", names: loopback, from: now - 86_400 * 3, to: now - 86_400)
        otherHost = try leaf("other.example", names: [.dnsName("other.example")], from: now - 3600, to: now + 86_400)
        selfSigned = try leaf("localhost", names: loopback, from: now - 3600, to: now + 86_400, selfSigned: true)
        client = try leaf(
            "Callsign test client", names: [.dnsName("client.test")], from: now - 3600, to: now + 86_400, usage: .clientAuth)
    }

    private static func identity(_ certificate: Certificate, key: P256.Signing.PrivateKey, issuer: Identity?) throws -> Identity {
        let pem = try certificate.serializeAsPEM().pemString + "\n"
        return Identity(
            certificateChainPEM: pem + (issuer?.certificatePEM ?? ""), certificatePEM: pem,
            privateKeyPEM: key.pemRepresentation + "\n", subjectPublicKeyInfo: key.publicKey.derRepresentation)
    }
}
