public import Callsign
import NIOCore
import NIOSSL

extension TestServer {
    /// How a TLS server identifies itself and whom it accepts.
    public struct TLS: Sendable {
        /// The server's certificate chain and key.
        public var identity: TestCertificates.Identity
        /// The protocols offered by ALPN, preferred first. Default: HTTP/2, then HTTP/1.1.
        public var protocols: [String] = ["h2", "http/1.1"]
        /// When set, the server asks for a client certificate and accepts only one issued by this
        /// authority (PEM): mutual TLS.
        public var clientAuthorityPEM: String? = nil
        /// The highest TLS version the server speaks; `nil` for the highest it can.
        public var maximumVersion: Callsign.TLSVersion? = nil

        public init(
            identity: TestCertificates.Identity, protocols: [String] = ["h2", "http/1.1"], clientAuthorityPEM: String? = nil,
            maximumVersion: Callsign.TLSVersion? = nil
        ) {
            self.identity = identity
            self.protocols = protocols
            self.clientAuthorityPEM = clientAuthorityPEM
            self.maximumVersion = maximumVersion
        }

        func context() throws -> NIOSSLContext {
            let chain = try NIOSSLCertificate.fromPEMBytes(Array(identity.certificateChainPEM.utf8)).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
            configuration.applicationProtocols = protocols
            if let maximumVersion { configuration.maximumTLSVersion = maximumVersion == .tls12 ? .tlsv12 : .tlsv13 }
            if let clientAuthorityPEM {
                configuration.certificateVerification = .noHostnameVerification
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(clientAuthorityPEM.utf8)))
            }
            return try NIOSSLContext(configuration: configuration)
        }
    }
}
