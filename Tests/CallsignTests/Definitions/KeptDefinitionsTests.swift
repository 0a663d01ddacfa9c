import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

@testable import Callsign

@Suite("Definitions from a server, kept for offline starts", .hangGuard)
struct KeptDefinitionsTests {
    static let first = "DEFAULT:\n  baseURL: http://127.0.0.1:9/\nHealth:\n  path: get\n"
    static let altered = "DEFAULT:\n  baseURL: http://attacker.invalid/\nHealth:\n  path: get\nExtra:\n  path: x\n"
    static let lastModified = "Wed, 21 Oct 2015 07:28:00 GMT"

    /// A definitions server whose document can be changed; it answers 304 to the ETag of the
    /// current document, and 503 while `failing`.
    final class DefinitionsServer: Sendable {
        let document = Mutex(KeptDefinitionsTests.first)
        let failing = Mutex(false)

        func install(on server: TestServer) {
            server.route("/api.yaml") { request in
                if self.failing.withLock({ $0 }) { return .text("down", status: 503) }
                let text = self.document.withLock { $0 }
                let etag = "\"\(Digest.sha256Hex(text).prefix(12))\""
                if request.header("If-None-Match") == etag { return ServerResponse(status: 304, headers: [("ETag", etag)]) }
                return .text(text, contentType: "application/yaml", headers: [("ETag", etag), ("Last-Modified", KeptDefinitionsTests.lastModified)])
            }
        }
    }

    static func client() -> APIClient { APIClient(configuration: .init { $0.retry = .none }) }

    static func mode(of file: URL) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int)
    }

    @Test("the first fetch keeps the document owner-only; the next sends its validators and a 304 loads the kept copy")
    func revalidates() async throws {
        try await withTemporaryFolder("kept") { folder in
            let kept = folder.appendingPathComponent("api.kept")
            let definitions = DefinitionsServer()
            try await TestServer.withRunning { server in
                definitions.install(on: server)
                let client = Self.client()
                let fetched = try await APIDefinitions.fetch(from: server.url("/api.yaml"), using: client, keepingCopyAt: kept)
                #expect(fetched.names == ["Health"])
                #expect(fetched.warnings.isEmpty, "\(fetched.warnings)")
                #expect(!fetched.trustsItsOrigins)
                #expect(try Self.mode(of: kept) == 0o600)
                #expect(server.requests.last?.header("If-None-Match") == nil)

                let again = try await APIDefinitions.fetch(from: server.url("/api.yaml"), using: client, keepingCopyAt: kept)
                let sent = try #require(server.requests.last)
                #expect(sent.header("If-None-Match") == "\"\(Digest.sha256Hex(Self.first).prefix(12))\"")
                #expect(sent.header("If-Modified-Since") == Self.lastModified)
                #expect(again.names == ["Health"] && again.warnings.isEmpty, "\(again.warnings)")
                #expect(try again.definition(named: "Health").path == "get")

                // A changed document is fetched whole and replaces the kept copy.
                definitions.document.withLock { $0 = Self.altered }
                let changed = try await APIDefinitions.fetch(from: server.url("/api.yaml"), using: client, keepingCopyAt: kept)
                #expect(changed.names == ["Extra", "Health"])
                let third = try #require(server.requests.last)
                #expect(third.header("If-None-Match") != nil)
                let reread = try await APIDefinitions.fetch(from: server.url("/api.yaml"), using: client, keepingCopyAt: kept)
                #expect(reread.names == ["Extra", "Health"])
                #expect(server.requests.count == 4)
            }
        }
    }

    @Test("server down or failing: the kept copy loads, with a warning")
    func offline() async throws {
        try await withTemporaryFolder("kept") { folder in
            let kept = folder.appendingPathComponent("api.kept")
            let definitions = DefinitionsServer()
            let client = Self.client()
            let url = try await TestServer.withRunning { server in
                definitions.install(on: server)
                let url = server.url("/api.yaml")
                _ = try await APIDefinitions.fetch(from: url, using: client, keepingCopyAt: kept)
                // A 5xx answer: the kept copy.
                definitions.failing.withLock { $0 = true }
                let failing = try await APIDefinitions.fetch(from: url, using: client, keepingCopyAt: kept)
                #expect(failing.names == ["Health"])
                #expect(failing.warnings.count == 1 && failing.warnings[0].contains("answered 503"), "\(failing.warnings)")
                return url
            }
            // The server is gone: connection refused.
            let offline = try await APIDefinitions.fetch(from: url, using: client, keepingCopyAt: kept)
            #expect(offline.names == ["Health"])
            let warning = try #require(offline.warnings.first)
            #expect(warning.contains("could not be reached") && warning.contains(kept.path), "\(warning)")
            let appClient = APIClient(definitions: offline, configuration: .init { $0.locale = Locale(identifier: "zh-Hans") })
            #expect(appClient.warnings.first?.contains("无法连接定义服务器") == true, "\(appClient.warnings)")

            // Without a kept copy the failure is the caller's.
            let none = await #expect(throws: APIError.self) {
                _ = try await APIDefinitions.fetch(from: url, using: client, keepingCopyAt: folder.appendingPathComponent("none.kept"))
            }
            #expect(none?.code == .transport)
            // A copy kept for another URL is not used.
            let other = URL(string: url.absoluteString + "?v=2")!
            let elsewhere = await #expect(throws: APIError.self) { _ = try await APIDefinitions.fetch(from: other, using: client, keepingCopyAt: kept) }
            #expect(elsewhere?.code == .transport)
        }
    }

    @Test("an expected SHA-256 refuses an altered document and keeps the copy it had")
    func pinned() async throws {
        try await withTemporaryFolder("kept") { folder in
            let kept = folder.appendingPathComponent("api.kept")
            let definitions = DefinitionsServer()
            let expected = Digest.sha256Hex(Self.first).uppercased()
            try await TestServer.withRunning { server in
                definitions.install(on: server)
                let client = Self.client()
                let url = server.url("/api.yaml")
                _ = try await APIDefinitions.fetch(from: url, using: client, keepingCopyAt: kept, expectedSHA256: expected)
                let keptBytes = try Data(contentsOf: kept)

                definitions.document.withLock { $0 = Self.altered }
                let refused = await #expect(throws: APIError.self) {
                    _ = try await APIDefinitions.fetch(from: url, using: client, keepingCopyAt: kept, expectedSHA256: expected)
                }
                #expect(refused?.code == .invalidDefinition)
                #expect(refused?.message.contains("SHA-256 is \(Digest.sha256Hex(Self.altered))") == true, "\(String(describing: refused))")
                #expect(try Data(contentsOf: kept) == keptBytes, "the kept copy is not replaced")

                // Offline, the kept copy still loads, since it is the expected one.
                definitions.failing.withLock { $0 = true }
                let fallback = try await APIDefinitions.fetch(from: url, using: client, keepingCopyAt: kept, expectedSHA256: expected)
                #expect(fallback.names == ["Health"])
                // A kept copy that is not the expected document does not load either.
                let other = await #expect(throws: APIError.self) {
                    _ = try await APIDefinitions.fetch(
                        from: url, using: client, keepingCopyAt: kept, expectedSHA256: Digest.sha256Hex(Self.altered))
                }
                #expect(other?.code == .invalidDefinition)

                let malformed = await #expect(throws: APIError.self) {
                    _ = try await APIDefinitions.fetch(from: url, using: client, expectedSHA256: "abc")
                }
                #expect(malformed?.code == .invalidRequest)
            }
        }
    }

    @Test("a damaged kept copy or a link at its name is never trusted")
    func damaged() async throws {
        try await withTemporaryFolder("kept") { folder in
            let kept = folder.appendingPathComponent("api.kept")
            let definitions = DefinitionsServer()
            try await TestServer.withRunning { server in
                definitions.install(on: server)
                let client = Self.client()
                let url = server.url("/api.yaml")
                _ = try await APIDefinitions.fetch(from: url, using: client, keepingCopyAt: kept)
                // Damaged: fetched whole again (no validator sent), replaced, and said.
                // The document changed, its stored SHA-256 not.
                var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: kept)) as? [String: Any])
                object["document"] = Data(Self.altered.utf8).base64EncodedString()
                try JSONSerialization.data(withJSONObject: object).write(to: kept)
                let repaired = try await APIDefinitions.fetch(from: url, using: client, keepingCopyAt: kept)
                #expect(server.requests.last?.header("If-None-Match") == nil)
                #expect(repaired.warnings.count == 1 && repaired.warnings[0].contains("damaged"), "\(repaired.warnings)")
                #expect(try Self.mode(of: kept) == 0o600)
                // A symbolic link planted at the name is neither read nor written through.
                let target = folder.appendingPathComponent("target")
                try Data("x".utf8).write(to: target)
                try FileManager.default.removeItem(at: kept)
                try FileManager.default.createSymbolicLink(at: kept, withDestinationURL: target)
                let linked = try await APIDefinitions.fetch(from: url, using: client, keepingCopyAt: kept)
                #expect(linked.names == ["Health"])
                #expect(linked.warnings.contains { $0.contains("could not be kept") }, "\(linked.warnings)")
                #expect(try Data(contentsOf: target) == Data("x".utf8))
            }
        }
    }
}
