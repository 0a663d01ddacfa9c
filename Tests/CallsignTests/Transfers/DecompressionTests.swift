import Callsign
import CallsignTesting
import Foundation
import Testing

@Suite("Decompression", .enabled(if: TransportKind.asyncHTTPClientIsBuilt), .hangGuard)
struct DecompressionTests {
    @Test("gzip, deflate (zlib and raw) and stacked encodings are decoded", arguments: TransportKind.allCases)
    func decodes(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            for path in ["/gzip", "/deflate", "/compressed/raw-deflate", "/compressed/stacked"] {
                let response = try await client.get(path).send()
                #expect(response.status.code == 200, "\(path)")
                let json = try response.json()
                #expect(json["path"]?.stringValue == path, "\(path)")
                #expect(json["items"]?.arrayValue?.count == 200, "\(path)")
                if kind == .asyncHTTPClient {
                    #expect(response.headers[.contentEncoding] == nil, "\(path)")
                }
            }
            #expect(server.requests.first?.header("Accept-Encoding") == "gzip, deflate")
        }
    }

    @Test("A gzip bomb, a truncated stream, a corrupt stream and too many encodings are typed errors")
    func hostileBodies() async throws {
        try await withServer { _, client in
            let bomb = await apiError { _ = try await client.get("/compressed/bomb").send() }
            #expect(bomb?.code == .responseTooLarge)
            #expect(bomb?.message.contains("decompression bomb") == true)

            let truncated = await apiError { _ = try await client.get("/compressed/truncated").send() }
            #expect(truncated?.code == .invalidResponse)
            #expect(truncated?.message.contains("truncated") == true)

            let corrupt = await apiError { _ = try await client.get("/compressed/corrupt").send() }
            #expect(corrupt?.code == .invalidResponse)
            #expect(corrupt?.message.contains("corrupt") == true)

            let stacked = await apiError { _ = try await client.get("/compressed/too-many").send() }
            #expect(stacked?.code == .invalidResponse)
            #expect(stacked?.message.contains("3 stacked content encodings") == true)
        }
    }

    @Test("The decoded-size cap and a disabled policy")
    func limits() async throws {
        try await withServer(configure: { $0.responses.decompression.maximumDecodedSize = 1000 }) { _, client in
            let capped = await apiError { _ = try await client.get("/gzip").send() }
            #expect(capped?.code == .responseTooLarge)
        }
        try await withServer(configure: { $0.responses.decompression = .disabled }) { server, client in
            let raw = try await client.get("/gzip").send()
            #expect(raw.headers[.contentEncoding] == "gzip")
            #expect(raw.body.prefix(2) == Data([0x1f, 0x8b]))
            #expect(server.requests.last?.header("Accept-Encoding") == nil)
        }
    }
}
