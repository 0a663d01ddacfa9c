import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

@testable import Callsign

/// TLS against the in-process HTTPS server, with certificates made for each run.
@Suite("TLS: trust roots, mutual TLS, versions, pins, certificate errors, HTTP/2", .hangGuard)
struct TLSTests {
    static let certificates: TestCertificates? = try? TestCertificates()

    private func certificates() throws -> TestCertificates { try #require(Self.certificates) }

    /// A client of `server` with these TLS settings, on AsyncHTTPClient.
    private func client(_ server: TestServer, _ configure: (inout TLSSettings) throws -> Void = { _ in }) rethrows -> APIClient {
        var tls = TLSSettings()
        try configure(&tls)
        return APIClient(
            configuration: .init {
                $0.baseURL = server.baseURL
                $0.tls = tls
                $0.retry = RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(1))
            }, transport: TransportKind.asyncHTTPClient.make())
    }

    private func failure(_ call: () async throws -> Void) async -> APIError? {
        do {
            try await call()
            return nil
        } catch {
            return error as? APIError
        }
    }

    @Test("a private CA is refused by default, and trusted when added or named as the only root")
    func trustRoots() async throws {
        let certificates = try certificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        let stranger = try TLSCertificate.load(pem: try TestCertificates().authority.certificatePEM)
        try await TestServer.withRunning(tls: .init(identity: certificates.localhost)) { server in
            let refused = await failure { _ = try await client(server).get("/get").send() }
            #expect(refused?.code == .certificateUntrusted, "\(String(describing: refused))")
            #expect(refused?.requestSent == false)
            for roots in [TLSSettings.TrustRoots.adding(authority), .only(authority)] {
                let response = try await client(server) { $0.trustRoots = roots }.get("/get").send()
                #expect(response.status.code == 200)
            }
            let wrongRoot = await failure { _ = try await client(server) { $0.trustRoots = .only(stranger) }.get("/get").send() }
            #expect(wrongRoot?.code == .certificateUntrusted)
            #expect(server.requests.count == 2, "nothing reached the server over an untrusted connection")
        }
    }

    @Test(
        "expired, wrong-host and self-signed certificates each have their own code, and are never retried or queued",
        arguments: ["expired", "otherHost", "selfSigned"])
    func certificateErrors(kind: String) async throws {
        let certificates = try certificates()
        let (identity, expected): (TestCertificates.Identity, APIError.Code) =
            switch kind {
            case "expired": (certificates.expired, .certificateExpired)
            case "otherHost": (certificates.otherHost, .certificateHostMismatch)
            default: (certificates.selfSigned, .certificateUntrusted)
            }
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        try await TestServer.withRunning(tls: .init(identity: identity)) { server in
            let queue = MemoryOfflineQueue()
            let client = APIClient(
                configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.tls.trustRoots = .adding(authority)
                    $0.retry = RetryPolicy(maximumAttempts: 5, baseDelay: .milliseconds(1))
                    $0.offline.queue = queue
                }, transport: TransportKind.asyncHTTPClient.make())
            var request = Request.post("/anything", parameters: ["note": "x"])
            request.storePolicy = .offline
            let error = await failure { _ = try await client.send(request) }
            #expect(error?.code == expected, "\(String(describing: error))")
            #expect(await queue.list(.pending).isEmpty, "a TLS failure is not queued offline")
            #expect(server.requests.isEmpty)
            // CLI exit status 35 for every TLS failure.
            #expect(error?.message.isEmpty == false)
        }
    }

    @Test("mutual TLS: a server that asks for a client certificate gets one from configuration.tls.clientIdentity", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func mutualTLS() async throws {
        let certificates = try certificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        let tls = TestServer.TLS(identity: certificates.localhost, clientAuthorityPEM: certificates.authority.certificatePEM)
        try await TestServer.withRunning(tls: tls) { server in
            let without = await failure { _ = try await client(server) { $0.trustRoots = .adding(authority) }.get("/get").send() }
            #expect(without != nil, "no certificate, no answer")
            let identity = try TLSClientIdentity(
                certificatePEM: certificates.client.certificateChainPEM, privateKeyPEM: certificates.client.privateKeyPEM)
            let response = try await client(server) {
                $0.trustRoots = .adding(authority)
                $0.clientIdentity = identity
            }.get("/get").send()
            #expect(response.status.code == 200)
            #expect(!"\(identity)".contains("PRIVATE"))
            var dumped = ""
            dump(identity, to: &dumped)
            #expect(!dumped.contains("PRIVATE") && !dumped.contains(certificates.client.privateKeyPEM.dropFirst(40).prefix(20)))
        }
    }

    @Test("a minimum TLS version the server cannot meet fails the handshake")
    func minimumVersion() async throws {
        let certificates = try certificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        try await TestServer.withRunning(tls: .init(identity: certificates.localhost, maximumVersion: .tls12)) { server in
            let ok = try await client(server) { $0.trustRoots = .adding(authority) }.get("/get").send()
            #expect(ok.status.code == 200)
            let refused = await failure {
                _ = try await client(server) {
                    $0.trustRoots = .adding(authority)
                    $0.minimumVersion = .tls13
                }.get("/get").send()
            }
            #expect(refused?.code == .tls, "\(String(describing: refused))")
        }
    }

    @Test("pins: the server's key passes, a backup pin list passes, a wrong one fails before any request, expired pins are not enforced")
    func pins() async throws {
        let certificates = try certificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        let wrong = "sha256/" + Data(repeating: 7, count: 32).base64EncodedString()
        try await TestServer.withRunning(tls: .init(identity: certificates.localhost)) { server in
            func pinned(_ pins: [String], expires: Date? = nil) throws -> APIClient {
                try client(server) {
                    $0.trustRoots = .adding(authority)
                    $0.pins = try CertificatePins([server.host: pins], expires: expires)
                }
            }
            #expect(try await pinned([certificates.localhost.pin]).get("/get").send().status.code == 200)
            #expect(try await pinned([wrong, certificates.localhost.pin]).get("/get").send().status.code == 200)
            let before = server.requests.count
            let refused = await failure { _ = try await pinned([wrong]).get("/get").send() }
            #expect(refused?.code == .certificatePinMismatch, "\(String(describing: refused))")
            #expect(refused?.requestSent == false)
            #expect(server.requests.count == before, "no request went out on the unpinned connection")
            // Pins of another host do not apply; expired pins are no longer enforced.
            let other = try client(server) {
                $0.trustRoots = .adding(authority)
                $0.pins = try CertificatePins(["api.example.com": [wrong]])
            }
            #expect(try await other.get("/get").send().status.code == 200)
            #expect(try await pinned([wrong], expires: Date(timeIntervalSinceNow: -60)).get("/get").send().status.code == 200)
            #expect(
                CertificatePins.pin(forSubjectPublicKeyInfo: certificates.localhost.subjectPublicKeyInfo) == certificates.localhost.pin)
        }
    }

    @Test("HTTP/2 is negotiated by ALPN: many concurrent calls share one connection, and HAR records the protocol", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func http2() async throws {
        let certificates = try certificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        try await withTemporaryFolder("h2") { folder in
            try await TestServer.withRunning(tls: .init(identity: certificates.localhost)) { server in
                let har = folder.appendingPathComponent("h2.har")
                let client = APIClient(
                    configuration: .init {
                        $0.baseURL = server.baseURL
                        $0.tls.trustRoots = .adding(authority)
                        $0.observability.recorder = HARRecorder(fileURL: har)
                    }, transport: TransportKind.asyncHTTPClient.make())
                let versions = try await withThrowingTaskGroup(of: String.self) { group in
                    for index in 0..<24 {
                        group.addTask { try await client.get("/anything/\(index)").send().httpVersion }
                    }
                    return try await group.reduce(into: [String]()) { $0.append($1) }
                }
                #expect(versions.count == 24 && versions.allSatisfy { $0 == "HTTP/2" }, "\(versions)")
                #expect(server.requests.allSatisfy { $0.httpVersion == "HTTP/2" })
                #expect(server.connectionCount == 1, "one connection carried every call")
                let archive = try JSONSerialization.jsonObject(with: Data(contentsOf: har)) as? [String: Any]
                let entries = (archive?["log"] as? [String: Any])?["entries"] as? [[String: Any]] ?? []
                let recorded = entries.compactMap { ($0["response"] as? [String: Any])?["httpVersion"] as? String }
                #expect(recorded.count == 24 && recorded.allSatisfy { $0 == "HTTP/2" }, "\(recorded)")

                let http1 = try await self.client(server) {
                    $0.trustRoots = .adding(authority)
                    $0.allowsHTTP2 = false
                }.get("/get").send()
                #expect(http1.httpVersion == "HTTP/1.1")
                #expect(server.requests.last?.httpVersion == "HTTP/1.1")
            }
        }
    }

    @Test("URLSessionTransport applies trust roots where the platform lets it, and refuses them where it cannot instead of connecting with weaker checks")
    func urlSessionTrustRoots() async throws {
        let certificates = try certificates()
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)
        try await TestServer.withRunning(tls: .init(identity: certificates.localhost)) { server in
            let client = APIClient(
                configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.tls.trustRoots = .only(authority)
                }, transport: TransportKind.urlSession.make())
            #if canImport(FoundationNetworking)
            // FoundationNetworking raises no server-trust challenge: refused, nothing sent.
            let error = await failure { _ = try await client.get("/get").send() }
            #expect(error?.code == .invalidRequest)
            #expect(server.requests.isEmpty)
            #else
            // URLSession's delegate evaluates the chain against the one root given.
            let response = try await client.get("/get").send()
            #expect(response.status == .ok)
            #expect(server.requests.count == 1)
            #endif
        }
    }

    @Test("PEM text, pins and keys from outside are checked, never trusted blindly")
    func parsing() throws {
        let certificates = try certificates()
        #expect(try TLSCertificate.load(pem: certificates.localhost.certificateChainPEM).count == 2)
        for bad in ["", "no pem here", "-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----", "-----BEGIN CERTIFICATE-----\nAAAA"] {
            #expect(throws: APIError.self, "\(bad)") { try TLSCertificate.load(pem: bad) }
        }
        for bad in ["sha256/", "sha256/AAAA", "md5/" + Data(count: 32).base64EncodedString(), "sha256/" + Data(count: 31).base64EncodedString()] {
            #expect(throws: APIError.self, "\(bad)") { try CertificatePins(["h": [bad]]) }
        }
        #expect(throws: APIError.self) {
            try TLSClientIdentity(certificatePEM: certificates.client.certificatePEM, privateKeyPEM: "not a key")
        }
        // The SubjectPublicKeyInfo found in a certificate's DER is the one its pin hashes.
        for identity in [certificates.localhost, certificates.authority, certificates.client] {
            let der = try #require(try TLSCertificate.load(pem: identity.certificatePEM).first).der
            #expect(CertificateDER.subjectPublicKeyInfo(of: der) == identity.subjectPublicKeyInfo)
            for cut in [0, 1, 10, der.count / 2, der.count - 1] {
                #expect(CertificateDER.subjectPublicKeyInfo(of: der.prefix(cut)) == nil)
            }
        }
        let many = String(repeating: certificates.authority.certificatePEM, count: 1_001)
        #expect(throws: APIError.self) { try TLSCertificate.load(pem: many) }
    }
}

@Suite("callsign over TLS: --cacert, --cert/--key, --pin, --http1.1", .hangGuard)
struct TLSCommandTests {
    @Test("the CLI trusts a private CA with --cacert, sends a client certificate, checks pins and exits 35 on TLS failures", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func commandLine() async throws {
        try CLIRunner.requireBuilt()
        let certificates = try #require(TLSTests.certificates)
        try await withTemporaryFolder("tls-cli") { folder in
            func write(_ name: String, _ text: String) throws -> String {
                let url = folder.appendingPathComponent(name)
                try Data(text.utf8).write(to: url)
                return url.path
            }
            let ca = try write("ca.pem", certificates.authority.certificatePEM)
            let cert = try write("client.pem", certificates.client.certificateChainPEM)
            let key = try write("client.key", certificates.client.privateKeyPEM)
            let tls = TestServer.TLS(identity: certificates.localhost, clientAuthorityPEM: certificates.authority.certificatePEM)
            try await TestServer.withRunning(tls: tls) { server in
                let url = server.url("/anything/cli").absoluteString
                let untrusted = try await CLIRunner.run(["get", url, "--cert", cert, "--key", key])
                #expect(untrusted.status == 35, "\(untrusted.standardError)")
                #expect(untrusted.standardError.contains("certificateUntrusted"))

                let ok = try await CLIRunner.run(["get", url, "--cacert", ca, "--cert", cert, "--key", key, "--pin", certificates.localhost.pin])
                #expect(ok.status == 0, "\(ok.standardError)")
                #expect(ok.standardOutput.contains("/anything/cli"))
                #expect(server.requests.last?.httpVersion == "HTTP/2")

                let curlStyle = "sha256//" + certificates.authority.pin.dropFirst("sha256/".count) + ";" + certificates.localhost.pin.replacingOccurrences(of: "sha256/", with: "sha256//")
                let http1 = try await CLIRunner.run(["get", url, "--cacert", ca, "--cert", cert, "--key", key, "--pinnedpubkey", curlStyle, "--http1.1"])
                #expect(http1.status == 0, "\(http1.standardError)")
                #expect(server.requests.last?.httpVersion == "HTTP/1.1")

                let wrongPin = try await CLIRunner.run(["get", url, "--cacert", ca, "--cert", cert, "--key", key, "--pin", certificates.authority.pin])
                #expect(wrongPin.status == 35)
                #expect(wrongPin.standardError.contains("certificatePinMismatch"), "\(wrongPin.standardError)")

                let noClientCertificate = try await CLIRunner.run(["get", url, "--cacert", ca])
                #expect(noClientCertificate.status == 35 || noClientCertificate.status == 56, "\(noClientCertificate.standardError)")
                let usage = try await CLIRunner.run(["get", url, "--cert", cert])
                #expect(usage.status == 64)
            }
        }
    }

    @Test("the CLI sends a PKCS#12 client identity, its password read from the variable --pass-env names", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func pkcs12CommandLine() async throws {
        try CLIRunner.requireBuilt()
        let certificates = try #require(TLSTests.certificates)
        let p12 = Fixture.url("mtls/client.p12").path
        let clientAuthority = try String(contentsOf: Fixture.url("mtls/client-ca.pem"), encoding: .utf8)
        try await withTemporaryFolder("tls-p12") { folder in
            let ca = folder.appendingPathComponent("ca.pem")
            try Data(certificates.authority.certificatePEM.utf8).write(to: ca)
            try await TestServer.withRunning(tls: .init(identity: certificates.localhost, clientAuthorityPEM: clientAuthority)) { server in
                let url = server.url("/anything/p12").absoluteString
                let ok = try await CLIRunner.run(["get", url, "--cacert", ca.path, "--cert", p12, "--pass-env", "P12_PASSWORD"], environment: ["P12_PASSWORD": "callsign-fixture"])
                #expect(ok.status == 0, "\(ok.standardError)")
                #expect(ok.standardOutput.contains("/anything/p12"))
                let before = server.requests.count
                let wrong = try await CLIRunner.run(["get", url, "--cacert", ca.path, "--cert", p12, "--pass-env", "P12_PASSWORD"], environment: ["P12_PASSWORD": "nope"])
                #expect(wrong.status != 0)
                #expect(wrong.standardError.contains("PKCS#12"), "\(wrong.standardError)")
                #expect(!wrong.standardError.contains("nope"))
                for arguments in [
                    ["--cert", p12], ["--cert", p12, "--key", p12, "--pass-env", "P12_PASSWORD"], ["--cert", p12, "--cert-type", "DER", "--pass-env", "P12_PASSWORD"],
                    ["--cert", p12, "--cert-type", "PEM", "--key", p12, "--pass-env", "P12_PASSWORD"],
                ] {
                    let usage = try await CLIRunner.run(["get", url, "--cacert", ca.path] + arguments, environment: ["P12_PASSWORD": "callsign-fixture"])
                    #expect(usage.status == 64, "\(arguments): \(usage.standardError)")
                }
                let unset = try await CLIRunner.run(["get", url, "--cacert", ca.path, "--cert", p12, "--pass-env", "CALLSIGN_TEST_UNSET_VARIABLE"])
                #expect(unset.status != 0 && unset.standardError.contains("CALLSIGN_TEST_UNSET_VARIABLE"), "\(unset.standardError)")
                #expect(server.requests.count == before, "nothing sent without the identity")
            }
        }
    }
}

@Suite("TLS on URLSession (FoundationNetworking on Linux)", .hangGuard)
struct URLSessionTLSTests {
    @Test("a certificate from an unknown authority is certificateUntrusted on URLSession too, never retried")
    func untrusted() async throws {
        let certificates = try #require(TLSTests.certificates)
        for identity in [certificates.localhost, certificates.selfSigned] {
            try await TestServer.withRunning(tls: .init(identity: identity)) { server in
                let client = APIClient(
                    configuration: .init {
                        $0.baseURL = server.baseURL
                        $0.retry = RetryPolicy(maximumAttempts: 4, baseDelay: .milliseconds(1))
                    }, transport: TransportKind.urlSession.make())
                let error = await #expect(throws: APIError.self) { _ = try await client.get("get").send() }
                #expect(error?.code == .certificateUntrusted, "\(String(describing: error))")
                #expect(error?.requestSent == false)
                #expect(server.requests.isEmpty)
            }
        }
    }
}
