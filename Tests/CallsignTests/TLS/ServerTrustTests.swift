import Callsign
import CallsignTesting
import Foundation
import Testing

@testable import Callsign

/// Whether URLSession raises TLS challenges here (server trust, client certificates): Apple's
/// does; Linux's FoundationNetworking raises none, and refuses any TLS setting instead.
private let urlSessionAnswersChallenges: Bool = {
    #if canImport(FoundationNetworking)
    false
    #else
    true
    #endif
}()

/// The portable trust decision (`ServerTrust`) that URLSession's challenges on Apple platforms
/// and AsyncHTTPClient's pin check share, with certificates made for each run; and PKCS#12
/// identities for mutual TLS.
@Suite("Server trust: one portable decision on roots, hosts, dates and pins; PKCS#12 client identities", .hangGuard)
struct ServerTrustTests {
    static let certificates: TestCertificates? = try? TestCertificates()

    private func certificates() throws -> TestCertificates { try #require(Self.certificates) }

    /// A chain as a server sends it: DER, its own certificate first.
    private func chain(_ identity: TestCertificates.Identity) throws -> [Data] {
        try TLSCertificate.load(pem: identity.certificateChainPEM).map(\.der)
    }

    private func settings(_ roots: TLSSettings.TrustRoots, pins: [String]? = nil) throws -> TLSSettings {
        var settings = TLSSettings()
        settings.trustRoots = roots
        if let pins { settings.pins = try CertificatePins(["localhost": pins, "127.0.0.1": pins]) }
        return settings
    }

    @Test("roots of the app's own: the right chain passes for its names and addresses; expired, other host, self-signed and another root are told apart")
    func ownRoots() async throws {
        let certificates = try certificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        let only = try settings(.only(authority))
        for host in ["localhost", "127.0.0.1", "::1"] {
            let refusal = await ServerTrust.decide(chain: try chain(certificates.localhost), host: host, settings: only, system: .notAsked)
            #expect(refusal == nil, "\(host): \(String(describing: refusal))")
        }
        let expired = await ServerTrust.decide(chain: try chain(certificates.expired), host: "localhost", settings: only, system: .notAsked)
        #expect(expired?.code == .certificateExpired)
        let otherHost = await ServerTrust.decide(chain: try chain(certificates.otherHost), host: "localhost", settings: only, system: .notAsked)
        #expect(otherHost?.code == .certificateHostMismatch)
        let wrongAddress = await ServerTrust.decide(chain: try chain(certificates.localhost), host: "10.0.0.1", settings: only, system: .notAsked)
        #expect(wrongAddress?.code == .certificateHostMismatch)
        let selfSigned = await ServerTrust.decide(chain: try chain(certificates.selfSigned), host: "localhost", settings: only, system: .notAsked)
        #expect(selfSigned?.code == .certificateUntrusted)
        // The right chain under another root only.
        let other = try settings(.only(try TLSCertificate.load(pem: certificates.selfSigned.certificatePEM)))
        let elsewhere = await ServerTrust.decide(chain: try chain(certificates.localhost), host: "localhost", settings: other, system: .trusted)
        #expect(elsewhere?.code == .certificateUntrusted, "the system's verdict is not asked for .only")
        #expect(elsewhere?.message.contains("localhost") == true)
    }

    @Test("added roots: the system's yes stands; its no is decided again against the added roots, but never for dates or names")
    func addedRoots() async throws {
        let certificates = try certificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        let adding = try settings(.adding(authority))
        let localhost = try chain(certificates.localhost)
        #expect(await ServerTrust.decide(chain: localhost, host: "localhost", settings: adding, system: .trusted) == nil)
        #expect(await ServerTrust.decide(chain: localhost, host: "localhost", settings: adding, system: .untrusted) == nil, "the private CA")
        #expect(await ServerTrust.decide(chain: localhost, host: "localhost", settings: adding, system: .expired)?.code == .certificateExpired)
        #expect(await ServerTrust.decide(chain: localhost, host: "localhost", settings: adding, system: .hostMismatch)?.code == .certificateHostMismatch)
        let selfSigned = try chain(certificates.selfSigned)
        #expect(await ServerTrust.decide(chain: selfSigned, host: "localhost", settings: adding, system: .untrusted)?.code == .certificateUntrusted)

        // The system's roots alone: the system decides.
        let system = try settings(.system, pins: [certificates.localhost.pin])
        #expect(await ServerTrust.decide(chain: localhost, host: "localhost", settings: system, system: .trusted) == nil)
        #expect(await ServerTrust.decide(chain: localhost, host: "localhost", settings: system, system: .untrusted)?.code == .certificateUntrusted)
        #expect(await ServerTrust.decide(chain: localhost, host: "localhost", settings: system, system: .notAsked)?.code == .certificateUntrusted)
        #expect(await ServerTrust.decide(chain: localhost, host: "localhost", settings: system, system: .hostMismatch)?.code == .certificateHostMismatch)
    }

    @Test("pins: after validation, any certificate of the validated path; the server's key, its CA's, a wrong one, expired pins")
    func pins() async throws {
        let certificates = try certificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        let localhost = try chain(certificates.localhost)
        let leafPin = try settings(.only(authority), pins: [certificates.localhost.pin])
        #expect(await ServerTrust.decide(chain: localhost, host: "localhost", settings: leafPin, system: .notAsked) == nil)
        let rootPin = try settings(.only(authority), pins: [certificates.authority.pin])
        #expect(await ServerTrust.decide(chain: Array(localhost.prefix(1)), host: "localhost", settings: rootPin, system: .notAsked) == nil,
            "the root is on the validated path even when the server does not send it")
        let wrongPin = try settings(.only(authority), pins: [certificates.otherHost.pin])
        let refused = await ServerTrust.decide(chain: localhost, host: "localhost", settings: wrongPin, system: .notAsked)
        #expect(refused?.code == .certificatePinMismatch)
        var expiredPins = wrongPin
        expiredPins.pins = try CertificatePins(["localhost": [certificates.otherHost.pin]], expires: Date(timeIntervalSinceNow: -60))
        #expect(await ServerTrust.decide(chain: localhost, host: "localhost", settings: expiredPins, system: .notAsked) == nil)
        // A pin is never a way around validation.
        let pinnedSelfSigned = try settings(.only(authority), pins: [certificates.selfSigned.pin])
        #expect(await ServerTrust.decide(chain: try chain(certificates.selfSigned), host: "localhost", settings: pinnedSelfSigned, system: .notAsked)?.code == .certificateUntrusted)
        #expect(ServerTrust.isPinned(localhost, digests: [String(certificates.localhost.pin.dropFirst("sha256/".count))]))
        #expect(!ServerTrust.isPinned([], digests: [String(certificates.localhost.pin.dropFirst("sha256/".count))]))
    }

    @Test("a hostile chain: nothing, garbage, truncated and flipped certificates, too many of them — a refusal, never a crash")
    func hostileChains() async throws {
        let certificates = try certificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        let only = try settings(.only(authority), pins: [certificates.localhost.pin])
        let good = try chain(certificates.localhost)
        #expect(await ServerTrust.decide(chain: [], host: "localhost", settings: only, system: .notAsked)?.code == .certificateUntrusted)
        #expect(await ServerTrust.decide(chain: [Data("not DER".utf8)], host: "localhost", settings: only, system: .notAsked)?.code == .certificateUntrusted)
        let tooMany = Array(repeating: good[1], count: 10_000)
        #expect(await ServerTrust.decide(chain: [good[0]] + tooMany, host: "localhost", settings: only, system: .notAsked) == nil, "read up to the limit")
        // Every truncation, and a run of flipped bytes, of the server's certificate.
        var generator = SystemRandomNumberGenerator()
        for length in stride(from: 0, to: good[0].count, by: 7) {
            let cut = await ServerTrust.decide(chain: [good[0].prefix(length), good[1]], host: "localhost", settings: only, system: .notAsked)
            #expect(cut != nil)
        }
        for _ in 0..<300 {
            var flipped = good[0]
            let index = Int.random(in: 0..<flipped.count, using: &generator)
            flipped[index] ^= UInt8.random(in: 1...255, using: &generator)
            // Accepted only if the change left a certificate the CA signed for this host: never, for a flipped byte.
            let refusal = await ServerTrust.decide(chain: [flipped, good[1]], host: "localhost", settings: only, system: .notAsked)
            #expect(refusal != nil, "byte \(index)")
        }
    }

    @Test("Apple's trust error codes read as the same verdicts")
    func securityCodes() {
        #expect(ServerTrust.SystemVerdict(securityErrorCode: -67818) == .expired)
        #expect(ServerTrust.SystemVerdict(securityErrorCode: -67819) == .expired)
        #expect(ServerTrust.SystemVerdict(securityErrorCode: -67602) == .hostMismatch)
        #expect(ServerTrust.SystemVerdict(securityErrorCode: -67843) == .untrusted)
        #expect(ServerTrust.SystemVerdict(securityErrorCode: 0) == .untrusted)
    }

    @Test(
        "PKCS#12: a client identity from a .p12 file passes mutual TLS; a wrong password or a file that is not one is a clear error; the password never shows",
        arguments: TransportKind.allCases.filter { $0 == .asyncHTTPClient || urlSessionAnswersChallenges })
    func pkcs12(kind: TransportKind) async throws {
        let certificates = try certificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        let clientAuthority = try String(contentsOf: Fixture.url("mtls/client-ca.pem"), encoding: .utf8)
        let identity = try TLSClientIdentity.load(pkcs12File: Fixture.url("mtls/client.p12"), password: "callsign-fixture")
        #expect(identity.certificateChain.isEmpty)
        #expect(!"\(identity)".contains("callsign-fixture"))
        var dumped = ""
        dump(identity, to: &dumped)
        #expect(!dumped.contains("callsign-fixture"))

        let tls = TestServer.TLS(identity: certificates.localhost, clientAuthorityPEM: clientAuthority)
        try await TestServer.withRunning(tls: tls) { server in
            func client(_ identity: TLSClientIdentity?) -> APIClient {
                APIClient(
                    configuration: .init {
                        $0.baseURL = server.baseURL
                        $0.tls.trustRoots = .only(authority)
                        $0.tls.clientIdentity = identity
                        $0.retry = .none
                    }, transport: kind.make())
            }
            let response = try await client(identity).get("/get").send()
            #expect(response.status.code == 200)

            let wrong = try TLSClientIdentity(pkcs12: Data(contentsOf: Fixture.url("mtls/client.p12")), password: "not it")
            let refused = await apiError { _ = try await client(wrong).get("/get").send() }
            #expect(refused?.code == .invalidRequest)
            #expect(refused?.message.contains("PKCS#12") == true, "\(String(describing: refused))")
            #expect(refused?.message.contains("not it") == false)
        }
        #expect(throws: APIError.self) { try TLSClientIdentity(pkcs12: Data(), password: "") }
        #expect(throws: APIError.self) { try TLSClientIdentity(pkcs12: Data("-----BEGIN CERTIFICATE-----".utf8), password: "") }
        #expect(throws: APIError.self) { try TLSClientIdentity(pkcs12: Data(count: (1 << 20) + 1), password: "") }
    }
}
