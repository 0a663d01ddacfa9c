import Callsign
import CallsignTesting
import Foundation
import Testing

/// A HAR archive with one recorded exchange whose response content is `content` (JSON).
private func archive(content: String) -> Data {
    Data(
        """
        {"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": [{
          "startedDateTime": "2026-01-01T00:00:00Z", "time": 1,
          "request": {"method": "GET", "url": "https://api.example.test/x", "httpVersion": "HTTP/1.1", "headers": [],
                      "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
          "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "headers": [], "cookies": [],
                       "content": \(content), "redirectURL": "", "headersSize": -1, "bodySize": -1},
          "cache": {}, "timings": {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 1, "receive": 0}}]}}
        """.utf8)
}

@Suite("Hostile recordings and mock files", .hangGuard)
struct HostileRecordingTests {
    @Test("a HAR body marked base64 that is not base64, or in an unknown encoding, is refused naming the entry")
    func badBase64() throws {
        let good = try HARReplay(data: archive(content: #"{"size": 2, "mimeType": "text/plain", "text": "b2s=", "encoding": "base64"}"#))
        #expect(good.count == 1)
        for content in [
            #"{"size": 2, "mimeType": "text/plain", "text": "!!! not base64 !!!", "encoding": "base64"}"#,
            #"{"size": 2, "mimeType": "text/plain", "text": "b2s", "encoding": "base64"}"#,
        ] {
            let error = #expect(throws: APIError.self) { try HARReplay(data: archive(content: content), name: "bad.har") }
            #expect(error?.code == .invalidDefinition)
            #expect(error?.message.contains("\"bad.har\": entry 1") == true)
            #expect(error?.message.contains("base64") == true)
        }
        let unknown = #expect(throws: APIError.self) {
            try HARReplay(data: archive(content: #"{"size": 2, "mimeType": "text/plain", "text": "x", "encoding": "gzip"}"#))
        }
        #expect(unknown?.message.contains("gzip") == true)
    }

    @Test("a definition's mock path cannot leave the mock folder: .., absolute paths and links out are refused")
    func mockPathConfined() async throws {
        let root = Scratch.folder()
        let folder = root.appendingPathComponent("mocks")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("nested"), withIntermediateDirectories: true)
        try Data(#"{"secret": true}"#.utf8).write(to: root.appendingPathComponent("secret.json"))
        try Data(#"{"ok": true}"#.utf8).write(to: folder.appendingPathComponent("nested/ok.json"))
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("link.json").path, withDestinationPath: root.appendingPathComponent("secret.json").path)
        let yaml = """
            DEFAULT:
              baseURL: https://api.example.test/
            Fine:
              path: fine
              mock: nested/ok.json
            Climb:
              path: climb
              mock: ../secret.json
            Hidden:
              path: hidden
              mock: nested/../../secret.json
            Absolute:
              path: absolute
              mock: \(root.appendingPathComponent("secret.json").path)
            Linked:
              path: linked
              mock: link.json
            """
        let definitions = try APIDefinitions(data: Data(yaml.utf8), format: .yaml)
        let client = APIClient(
            definitions: definitions, configuration: .init { $0.mocks = Mocks(definitions: definitions, directory: folder, realRequests: false) })
        #expect(try await client.call("Fine").body == Data(#"{"ok": true}"#.utf8))
        for name in ["Climb", "Hidden", "Absolute", "Linked"] {
            let error = await apiError { _ = try await client.call(name) }
            #expect(error?.code == .invalidDefinition, "\(name)")
            #expect(error?.message.contains("mock folder") == true, "\(name): \(error?.message ?? "no error")")
            #expect(error?.response == nil)
        }
        // Paths in code are the developer's own: an absolute one still works.
        let coded = APIClient(configuration: .init {
            $0.mocks = Mocks(realRequests: false) { _ in .file(root.appendingPathComponent("secret.json").path) }
        })
        #expect(try await coded.send(.get("https://api.example.test/x")).body == Data(#"{"secret": true}"#.utf8))
    }
}
