public import Foundation
import Crypto

/// How a client trusts servers over TLS and proves who it is: trust roots, a client certificate,
/// the lowest TLS version, certificate pins, and whether HTTP/2 may be negotiated.
///
/// The default trusts the system's roots, sends no client certificate, accepts TLS 1.2 and 1.3,
/// pins nothing and lets ALPN choose HTTP/2 where the server offers it.
///
/// ```swift
/// configuration.tls.trustRoots = .adding(try TLSCertificate.load(pem: privateCAFile))
/// configuration.tls.pins = CertificatePins(["api.example.com": ["sha256/7HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y="]])
/// ```
public struct TLSSettings: Sendable, Hashable {
    /// Which certificate authorities a server's chain must lead to.
    public enum TrustRoots: Sendable, Hashable {
        /// The operating system's roots.
        case system
        /// The system's roots and these (a private CA next to the public ones).
        case adding([TLSCertificate])
        /// These roots only: the system's are not trusted. Pins a private CA.
        case only([TLSCertificate])
    }

    /// The trusted roots. Default ``TrustRoots/system``.
    public var trustRoots: TrustRoots = .system
    /// The certificate and key sent when a server asks for one (mutual TLS). Default `nil`.
    public var clientIdentity: TLSClientIdentity? = nil
    /// The lowest TLS version accepted. Default ``TLSVersion/tls12``.
    public var minimumVersion: TLSVersion = .tls12
    /// Public keys a server's certificate must have, by host. Checked after the usual validation,
    /// never instead of it. Default `nil`: no pins.
    public var pins: CertificatePins? = nil
    /// Whether HTTP/2 may be negotiated (ALPN) with servers that offer it. Default `true`;
    /// `false` keeps every connection on HTTP/1.1 (curl's `--http1.1`).
    public var allowsHTTP2: Bool = true

    /// The defaults: system roots, no client certificate, TLS 1.2+, no pins, HTTP/2 allowed.
    public init() {}

    /// Whether these are the defaults, which every transport honours without extra work.
    /// Asked for every request: compares fields, builds nothing.
    var isDefault: Bool {
        guard case .system = trustRoots else { return false }
        return clientIdentity == nil && minimumVersion == .tls12 && pins == nil && allowsHTTP2
    }
}

/// A TLS protocol version.
public enum TLSVersion: Sendable, Hashable, Comparable {
    /// TLS 1.2.
    case tls12
    /// TLS 1.3.
    case tls13
}

/// An X.509 certificate, kept as its DER bytes.
public struct TLSCertificate: Sendable, Hashable {
    /// The DER encoding.
    public let der: Data

    /// A certificate from its DER bytes.
    public init(der: Data) {
        self.der = der
    }

    /// Every certificate in PEM text (`-----BEGIN CERTIFICATE-----` blocks, other blocks ignored).
    ///
    /// ```swift
    /// let roots = try TLSCertificate.load(pem: String(contentsOf: caFile, encoding: .utf8))
    /// ```
    ///
    /// - Throws: ``APIError`` (``APIError/Code/invalidRequest``) when the text holds no
    ///   certificate or a block is not base64.
    public static func load(pem text: String) throws(APIError) -> [TLSCertificate] {
        let blocks = try PEMBlocks.parse(text, label: "CERTIFICATE")
        guard !blocks.isEmpty else { throw APIError(.invalidRequest, localized: "the PEM text holds no certificate") }
        return blocks.map(TLSCertificate.init(der:))
    }

    /// The largest PEM file read (certificates or a key): 4 MiB. A system's whole bundle of roots
    /// is about 200 KiB.
    package static let maximumPEMFileSize = 4 << 20

    /// Every certificate of a PEM file (at most 4 MiB: a system's whole bundle of roots is about 200 KiB).
    public static func load(pemFile url: URL) throws(APIError) -> [TLSCertificate] {
        let data = try FileReader.read(url, limit: maximumPEMFileSize) { error in
            APIError(.invalidRequest, localized: "the certificate file \"\(url.lastPathComponent)\" cannot be read", underlyingError: error)
        } tooLarge: { limit in
            APIError(.invalidRequest, localized: "the certificate file \"\(url.lastPathComponent)\" is larger than \(limit) bytes")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw APIError(.invalidRequest, localized: "the certificate file \"\(url.lastPathComponent)\" is not UTF-8 text, as a PEM file is")
        }
        return try load(pem: text)
    }
}

/// A client certificate chain and its private key, for mutual TLS: from PEM text, or from a
/// PKCS#12 file (`.p12`, `.pfx`), the form a keychain exports and the one both transports read.
/// Its description, `dump` and mirrors never show the key or the password.
///
/// | | AsyncHTTPClient | URLSession, Apple platforms |
/// |---|---|---|
/// | PEM text | ✓ | refused, naming PKCS#12 and ``URLSessionHooks`` |
/// | PKCS#12 | ✓ | ✓ |
///
/// An identity kept in the app's keychain is handed over through ``URLSessionHooks`` `challenge`
/// (`NSURLAuthenticationMethodClientCertificate`).
public struct TLSClientIdentity: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What the identity is made of. Secret.
    enum Material: Sendable, Hashable {
        /// The private key, PEM (PKCS#8, or SEC1/PKCS#1).
        case pem(privateKey: String)
        /// A PKCS#12 file and its password.
        case pkcs12(Data, password: String)
    }

    /// The client's certificate first, then any intermediates. Empty for a PKCS#12 identity:
    /// its certificates stay inside the file until a transport opens it.
    public let certificateChain: [TLSCertificate]
    /// The key, or the file that holds it.
    let material: Material

    /// The largest PKCS#12 file read: 1 MiB (a client identity is a few kilobytes).
    static let maximumPKCS12Size = 1 << 20

    /// An identity from PEM text: the certificate chain and the private key.
    ///
    /// ```swift
    /// let identity = try TLSClientIdentity(certificatePEM: certificateText, privateKeyPEM: keyText)
    /// ```
    public init(certificatePEM: String, privateKeyPEM: String) throws(APIError) {
        certificateChain = try TLSCertificate.load(pem: certificatePEM)
        guard privateKeyPEM.contains("PRIVATE KEY-----") else {
            throw APIError(.invalidRequest, localized: "the private key is not a PEM private key")
        }
        material = .pem(privateKey: privateKeyPEM)
    }

    /// An identity from the bytes of a PKCS#12 file and its password, for both transports.
    ///
    /// ```swift
    /// let p12 = try Data(contentsOf: Bundle.main.url(forResource: "client", withExtension: "p12")!)
    /// configuration.tls.clientIdentity = try TLSClientIdentity(pkcs12: p12, password: password)
    /// ```
    ///
    /// The file is opened by the transport when it first connects: a wrong password fails the
    /// call with ``APIError/Code/invalidRequest``, before anything is sent.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/invalidRequest``) when the bytes are empty, larger
    ///   than 1 MiB, or not DER (a PKCS#12 file is one DER structure).
    public init(pkcs12 data: Data, password: String) throws(APIError) {
        guard !data.isEmpty, data.count <= Self.maximumPKCS12Size else {
            throw APIError(.invalidRequest, localized: "the PKCS#12 identity is empty or larger than \(Self.maximumPKCS12Size) bytes")
        }
        guard data.first == 0x30 else {
            throw APIError(.invalidRequest, localized: "the PKCS#12 identity is not a PKCS#12 file (it does not start as DER does; PEM text goes to init(certificatePEM:privateKeyPEM:))")
        }
        certificateChain = []
        material = .pkcs12(data, password: password)
    }

    /// An identity from a PKCS#12 file (at most 1 MiB) and its password.
    ///
    /// ```swift
    /// configuration.tls.clientIdentity = try .load(pkcs12File: url, password: password)
    /// ```
    public static func load(pkcs12File url: URL, password: String) throws(APIError) -> TLSClientIdentity {
        let data = try FileReader.read(url, limit: maximumPKCS12Size) { error in
            APIError(.invalidRequest, localized: "the PKCS#12 file \"\(url.lastPathComponent)\" cannot be read", underlyingError: error)
        } tooLarge: { limit in
            APIError(.invalidRequest, localized: "the PKCS#12 file \"\(url.lastPathComponent)\" is larger than \(limit) bytes")
        }
        return try TLSClientIdentity(pkcs12: data, password: password)
    }

    public var description: String {
        switch material {
        case .pem: "TLSClientIdentity(\(certificateChain.count) certificates, private key: REDACTED)"
        case .pkcs12(let data, _): "TLSClientIdentity(PKCS#12 of \(data.count) bytes, password: REDACTED)"
        }
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        switch material {
        case .pem: Mirror(self, children: ["certificates": certificateChain.count, "privateKey": "REDACTED"])
        case .pkcs12(let data, _): Mirror(self, children: ["pkcs12": "\(data.count) bytes", "password": "REDACTED"])
        }
    }
}

/// Public-key pins by host: the SHA-256 of a certificate's SubjectPublicKeyInfo, written
/// `sha256/<base64>` as curl and OkHttp write them.
///
/// A connection to a pinned host succeeds only if the server's certificate, after the usual
/// validation, has one of the host's keys: list a backup key so a new certificate does not lock
/// users out. After `expires`, pins are no longer enforced, so an old app keeps working once its
/// pins are out of date.
///
/// ```swift
/// configuration.tls.pins = CertificatePins(
///     ["api.example.com": ["sha256/7HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=", "sha256/backupKeyHash…="]],
///     expires: Date(timeIntervalSinceNow: 86_400 * 365))
/// ```
///
/// Print a server's pin: `openssl s_client -connect api.example.com:443 </dev/null 2>/dev/null |
/// openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`.
public struct CertificatePins: Sendable, Hashable {
    /// The SHA-256 digests (raw bytes, base64) by lower-cased host.
    public let hosts: [String: Set<String>]
    /// After this moment the pins are ignored. `nil`: always enforced.
    public let expires: Date?

    /// Pins by host (`*` for every host without pins of its own); each pin is
    /// `sha256/<base64>` or the base64 digest alone.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/invalidRequest``) for a pin that is not the
    ///   base64 of 32 bytes.
    public init(_ pins: [String: [String]], expires: Date? = nil) throws(APIError) {
        var hosts: [String: Set<String>] = [:]
        for (host, list) in pins {
            for pin in list {
                let digest = pin.hasPrefix("sha256/") ? String(pin.dropFirst("sha256/".count)) : pin
                guard let bytes = Data(base64Encoded: digest), bytes.count == 32 else {
                    throw APIError(.invalidRequest, localized: "the pin \"\(pin)\" for \(host) is not sha256/ and the base64 of a SHA-256 digest")
                }
                hosts[Self.normalized(host), default: []].insert(bytes.base64EncodedString())
            }
        }
        self.hosts = hosts
        self.expires = expires
    }

    /// The digests `host` must match now, or `nil` when it has none or the pins expired. The
    /// host `*` stands for every host without pins of its own.
    func activeDigests(for host: String, now: Date = Date()) -> Set<String>? {
        if let expires, now >= expires { return nil }
        return hosts[Self.normalized(host)] ?? hosts["*"]
    }

    /// The pin of a SubjectPublicKeyInfo (DER): `sha256/<base64>`.
    public static func pin(forSubjectPublicKeyInfo spki: Data) -> String {
        "sha256/" + digest(ofSubjectPublicKeyInfo: spki)
    }

    static func digest(ofSubjectPublicKeyInfo spki: some DataProtocol) -> String {
        Data(SHA256.hash(data: spki)).base64EncodedString()
    }

    private static func normalized(_ host: String) -> String {
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        while host.hasSuffix(".") { host.removeLast() }
        return host
    }
}

/// The blocks of PEM text with one label, decoded.
enum PEMBlocks {
    /// At most this many blocks are read from one text: a chain is a handful, a trust store a few hundred.
    static let maximumBlocks = 1_000

    static func parse(_ text: String, label: String) throws(APIError) -> [Data] {
        let begin = "-----BEGIN \(label)-----"
        let end = "-----END \(label)-----"
        var blocks: [Data] = []
        var rest = text[...]
        while let start = rest.range(of: begin) {
            guard let stop = rest.range(of: end, range: start.upperBound..<rest.endIndex) else {
                throw APIError(.invalidRequest, localized: "a PEM \(label) block has no END line")
            }
            let body = rest[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
            guard let der = Data(base64Encoded: String(body)), !der.isEmpty else {
                throw APIError(.invalidRequest, localized: "a PEM \(label) block is not base64")
            }
            blocks.append(der)
            guard blocks.count <= maximumBlocks else {
                throw APIError(.invalidRequest, localized: "the PEM text holds more than \(maximumBlocks) blocks")
            }
            rest = rest[stop.upperBound...]
        }
        return blocks
    }
}

/// Just enough DER to find a certificate's SubjectPublicKeyInfo, for pins on transports that
/// hand over certificates as bytes (URLSession's server trust). Every length is bounded by the
/// bytes there are; anything else is `nil`.
enum CertificateDER {
    /// The SubjectPublicKeyInfo of an X.509 certificate (RFC 5280 §4.1), as its DER bytes.
    static func subjectPublicKeyInfo(of certificate: Data) -> Data? {
        let bytes = [UInt8](certificate)
        // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { … } … }
        guard let outer = element(in: bytes, at: 0), outer.tag == 0x30,
            let tbs = element(in: bytes, at: outer.contentStart), tbs.tag == 0x30
        else { return nil }
        var position = tbs.contentStart
        // Optional [0] version, then serialNumber, signature, issuer, validity, subject.
        if let version = element(in: bytes, at: position), version.tag == 0xA0 { position = version.end }
        for _ in 0..<5 {
            guard let skipped = element(in: bytes, at: position), skipped.end <= tbs.end else { return nil }
            position = skipped.end
        }
        guard let spki = element(in: bytes, at: position), spki.tag == 0x30, spki.end <= tbs.end else { return nil }
        return Data(bytes[position..<spki.end])
    }

    /// One TLV at `offset`: its tag, where its content starts and where it ends.
    private static func element(in bytes: [UInt8], at offset: Int) -> (tag: UInt8, contentStart: Int, end: Int)? {
        guard offset >= 0, offset + 2 <= bytes.count else { return nil }
        let tag = bytes[offset]
        let first = bytes[offset + 1]
        var length = 0
        var contentStart = offset + 2
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            // At most four length bytes: no certificate is 4 GiB, and nothing can overflow.
            guard (1...4).contains(count), contentStart + count <= bytes.count else { return nil }
            for index in 0..<count { length = length << 8 | Int(bytes[contentStart + index]) }
            contentStart += count
        }
        guard length <= bytes.count - contentStart else { return nil }
        return (tag, contentStart, contentStart + length)
    }
}
