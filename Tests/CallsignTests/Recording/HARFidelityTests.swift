import Callsign
import CallsignTesting
import Foundation
import Testing

/// The JSON a hostile-to-diffs server sends: odd spacing, tabs, CRLF, non-ASCII, escapes, a
/// number written `2.50`, and secret-named members at two depths.
private let oddJSON = Data(
    "{ \"user\" :  \"Zoë 🚀\",\r\n\t\"token\":\"tok-SECRET-1234\" , \"nested\": {\"password\" : 12345, \"list\": [1,2.50,3e2]},  \"note\":\"\\u00e9 \\\"q\\\" {not: a key}\" }\n"
        .utf8)
private let oddJSONMasked = Data(
    "{ \"user\" :  \"Zoë 🚀\",\r\n\t\"token\":\"REDACTED\" , \"nested\": {\"password\" : \"REDACTED\", \"list\": [1,2.50,3e2]},  \"note\":\"\\u00e9 \\\"q\\\" {not: a key}\" }\n"
        .utf8)

@Suite("Byte-faithful HAR recordings", .hangGuard)
struct HARFidelityTests {
    @Test("a recorded exchange replays byte for byte, secrets aside: odd JSON, non-ASCII, binary, gzip, a byte-order mark", arguments: TransportKind.allCases)
    func byteForByte(kind: TransportKind) async throws {
        let folder = Scratch.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("session.har")
        let recorder = HARRecorder(fileURL: file)
        let binary = Data((0...255).map { UInt8($0) } + [0xFF, 0xFE, 0x00, 0xC3])
        let bom = Data([0xEF, 0xBB, 0xBF]) + Data("hello, wörld\r\n".utf8)
        let requestJSON = Data("{\"name\" :\"ann\",  \"client_secret\": \"cs-SECRET-9\", \"session\": true}\n".utf8)
        var received: [String: Response] = [:]
        let paths = ["/fidelity/json", "/fidelity/binary", "/fidelity/bom", "/gzip"]
        try await withServer(transport: kind, configure: { $0.observability.recorder = recorder }) { server, client in
            server.route("/fidelity/json") { _ in
                ServerResponse(
                    headers: [
                        ("Content-Type", "application/json; charset=utf-8"), ("X-Session-Token", "hdr-SECRET-5678"),
                        ("Access-Control-Allow-Credentials", "true"), ("Access-Control-Allow-Origin", "https://app.example.test"),
                        ("WWW-Authenticate", #"Bearer realm="api""#), ("X-Kept", "  spaced  value"),
                    ],
                    body: .data(oddJSON))
            }
            server.route("/fidelity/binary") { _ in ServerResponse(headers: [("Content-Type", "application/octet-stream")], body: .data(binary)) }
            server.route("/fidelity/bom") { _ in ServerResponse(headers: [("Content-Type", "text/plain; charset=utf-8")], body: .data(bom)) }
            for path in paths { received[path] = try await client.get(path).send() }
            received["POST"] = try await client.post("/anything/fidelity").body(requestJSON, contentType: "application/json").send()
        }
        #expect(received["/fidelity/json"]?.body == oddJSON, "the server sent the odd bytes")
        #expect(received["/gzip"]?.body.isEmpty == false)

        // Replay, with the server gone, through the mocks seam.
        let replay = try HARReplay(contentsOf: file)
        #expect(replay.count == paths.count + 1)
        #expect(replay.skippedEntries.isEmpty)
        let port = try #require(received["/gzip"]?.request.url?.port)
        let offline = APIClient(
            configuration: .init { $0.baseURL = URL(string: "http://127.0.0.1:\(port)/"); $0.retry = .none; $0.mocks = Mocks(replaying: replay) },
            transport: kind.make())
        let har = try JSONValue(parsing: Data(contentsOf: file))
        let entries = try #require(har["log"]?["entries"]?.arrayValue)
        for (index, path) in paths.enumerated() {
            let original = try #require(received[path])
            let replayed = try await offline.get(path).send()
            let expected = path == "/fidelity/json" ? oddJSONMasked : original.body
            #expect(replayed.body == expected, "\(path): \(String(decoding: replayed.body.prefix(200), as: UTF8.self))")
            #expect(replayed.status == original.status)
            // content.size tells the truth about what the archive holds.
            #expect(entries[index]["response"]?["content"]?["size"]?.intValue == expected.count, "\(path)")
            // Every field as received, but the one secret and the framing the mock sets itself.
            for header in original.headers
            where !["content-length", "transfer-encoding", "content-encoding"].contains(header.name.canonicalName) {
                let value = responseField(replayed, header.name.rawName)
                #expect(value == (header.name.rawName == "X-Session-Token" ? "REDACTED" : header.value), "\(path): \(header.name)")
            }
        }
        let json = try await offline.get("/fidelity/json").send()
        #expect(responseField(json, "Access-Control-Allow-Credentials") == "true")
        #expect(responseField(json, "WWW-Authenticate") == #"Bearer realm="api""#)
        // The request body: masked in place too, and still matched on replay.
        let post = try #require(entries.last)
        #expect(post["request"]?["postData"]?["text"] == "{\"name\" :\"ann\",  \"client_secret\": \"REDACTED\", \"session\": \"REDACTED\"}\n")
        let echoed = try await offline.post("/anything/fidelity").body(requestJSON, contentType: "application/json").send()
        #expect(echoed.body.count == post["response"]?["content"]?["size"]?.intValue)
        // The raw body the server echoed as text: its secret value masked there too, and only it
        // (`true` is a secret member's value, but masking it would shred every JSON text).
        let data = try #require(try JSONValue(parsing: echoed.body)["data"]?.stringValue)
        #expect(data == "{\"name\" :\"ann\",  \"client_secret\": \"REDACTED\", \"session\": true}\n")
        let text = String(decoding: try Data(contentsOf: file), as: UTF8.self)
        for secret in ["tok-SECRET-1234", "12345", "hdr-SECRET-5678", "cs-SECRET-9"] {
            #expect(!text.contains(secret), "the archive holds \(secret)")
        }
    }

    @Test("masking a JSON body replaces only the secret values' bytes, whatever the value, at any depth, every repeat")
    func maskInPlace() {
        let redaction = Redaction.default
        let cases: [(String, String)] = [
            (#"{"a":1,"token":"x"}"#, #"{"a":1,"token":"REDACTED"}"#),
            ("[ {\"password\":\t\"p\"} ,{\"password\" : null} ]", "[ {\"password\":\t\"REDACTED\"} ,{\"password\" : null} ]"),
            (#"{"secret": {"deep": [1, {"x": "}"}]}, "after": "kept"}"#, #"{"secret": "REDACTED", "after": "kept"}"#),
            (#"{"token": [1,2], "n": -0.50e+3, "t": true}"#, #"{"token": "REDACTED", "n": -0.50e+3, "t": true}"#),
            (#"{"token": false,"token":true}"#, #"{"token": "REDACTED","token":"REDACTED"}"#),
            (#"{"pass\u0077ord": "escaped name", "password\"": 1}"#, #"{"pass\u0077ord": "REDACTED", "password\"": "REDACTED"}"#),
            (#"{"note": "\"token\": \"not a member\"", "keyword": "kept"}"#, #"{"note": "\"token\": \"not a member\"", "keyword": "kept"}"#),
            ("\u{FEFF}{\"token\" : \"bom\"}", "\u{FEFF}{\"token\" : \"REDACTED\"}"),
            (#"{"Authorization": "Bearer x", "api_key": 123456789012345678901234567890}"#, #"{"Authorization": "REDACTED", "api_key": "REDACTED"}"#),
        ]
        for (input, expected) in cases {
            let masked = redaction.redact(body: Data(input.utf8), contentType: "application/json")
            #expect(String(decoding: masked, as: UTF8.self) == expected, "\(input)")
        }
        // Not JSON, or nothing secret: the very same bytes.
        for text in [#"{"token": "x""#, #"{"a": 1}  "#, "token=x", #"{"token": "x"} extra"#, "[" + String(repeating: "[", count: 600) + "]"] {
            #expect(redaction.redact(body: Data(text.utf8), contentType: "application/json") == Data(text.utf8), "\(text.prefix(40))")
        }
    }
}
