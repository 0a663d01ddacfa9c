import AsyncHTTPClient
import Callsign
import CallsignTesting
import Foundation
import NIOCore
import NIOSSL

/// HTTP/2 against HTTP/1.1 over TLS, Callsign next to raw AsyncHTTPClient, interleaved rounds
/// at c=32 against an in-process HTTPS server with a private CA. The server shares the process:
/// compare the ratios.
enum TLSBenchmark {
    static func run(body: Data, scale: Double, rounds: Int) async throws {
        let certificates = try TestCertificates()
        let server = try await TestServer.start(tls: .init(identity: certificates.localhost))
        server.route("/item") { _ in ServerResponse(headers: [("Content-Type", "application/json")], body: .data(body)) }
        let url = server.url("/item").absoluteString
        let authority = try TLSCertificate.load(pem: certificates.authority.certificatePEM)

        func rawClient(http2: Bool) throws -> HTTPClient {
            var configuration = HTTPClient.Configuration()
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(certificates.authority.certificatePEM.utf8)))
            configuration.tlsConfiguration = tls
            configuration.httpVersion = http2 ? .automatic : .http1Only
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 32
            return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        }
        func callsign(http2: Bool) -> APIClient {
            APIClient(configuration: .init {
                $0.tls.trustRoots = .only(authority)
                $0.tls.allowsHTTP2 = http2
            }, transport: callsignAHCTransport(maximumConnectionsPerHost: 32))
        }
        let raw1 = try rawClient(http2: false)
        let raw2 = try rawClient(http2: true)
        let client1 = callsign(http2: false)
        let client2 = callsign(http2: true)
        func rawCall(_ client: HTTPClient) -> @Sendable () async throws -> Void {
            return { @Sendable () async throws -> Void in
                let response = try await client.execute(HTTPClientRequest(url: url), deadline: .now() + .seconds(30))
                _ = try await response.body.collect(upTo: 1 << 20)
            }
        }
        func callsignCall(_ client: APIClient) -> @Sendable () async throws -> Void {
            return { @Sendable () async throws -> Void in _ = try await client.get(url).send() }
        }
        let rows: [(name: String, reference: String?, call: @Sendable () async throws -> Void)] = [
            ("raw AHC, TLS HTTP/1.1", nil, rawCall(raw1)),
            ("raw AHC, TLS HTTP/2", "raw AHC, TLS HTTP/1.1", rawCall(raw2)),
            ("Callsign + AHC, TLS HTTP/1.1", "raw AHC, TLS HTTP/1.1", callsignCall(client1)),
            ("Callsign + AHC, TLS HTTP/2", "raw AHC, TLS HTTP/2", callsignCall(client2)),
        ]
        let requests = Int(10_000 * scale)
        for row in rows { _ = try await Measure.run(requests: max(100, requests / 10), concurrency: 32, row.call) }
        var samples: [String: [Double]] = [:]
        for _ in 0..<rounds {
            for row in rows {
                samples[row.name, default: []].append(try await Measure.run(requests: requests, concurrency: 32, row.call).requestsPerSecond)
            }
        }
        print("")
        print("TLS, c=32, \(requests) requests per round, in-process HTTPS server (medians; HTTP/2 rows to their HTTP/1.1 or raw reference)")
        for row in rows {
            let rps = median(samples[row.name, default: []])
            let ratio = row.reference.map { format(rps / median(samples[$0, default: []]), 2) + "× " + $0 } ?? ""
            print("\(pad(row.name, 34)) \(pad(format(rps), 9, right: true)) req/s  \(ratio)")
        }
        print("connections the HTTPS server accepted: \(server.connectionCount) (HTTP/2 needs one per client)")
        try await raw1.shutdown()
        try await raw2.shutdown()
        await server.stop()
    }
}
