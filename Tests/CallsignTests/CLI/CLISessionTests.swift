import CallsignTesting
import Foundation
import Testing

@testable import Callsign
@testable import callsign

/// A home of the test's own: sessions, their key and the default-options file live in it,
/// never in the real home.
struct ScratchHome {
    let folder = Scratch.folder()
    var configuration: URL { folder.appendingPathComponent("config") }
    var environment: [String: String] { ["HOME": folder.path, "XDG_CONFIG_HOME": configuration.path] }

    /// Where `--session NAME` keeps a session for `server`.
    func session(_ name: String, for server: TestServer) -> URL {
        let port = server.baseURL.port ?? 80
        return configuration.appendingPathComponent("callsign/sessions/127.0.0.1_\(port)/\(name).json")
    }

    func run(_ arguments: [String], extra: [String: String] = [:]) async throws -> CLIRunner.Result {
        try await CLIRunner.run(arguments, environment: environment.merging(extra) { _, new in new })
    }

    static func mode(_ url: URL) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int)
    }
}

@Suite("callsign --session: cookies, credentials and headers kept between commands", .hangGuard)
struct CLISessionTests {
    private func serving(_ body: @escaping @Sendable (TestServer) async throws -> Void) async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            server.route("/login") { _ in
                .json(["ok": true], headers: [
                    ("Set-Cookie", "sid=cookie-secret-1; Path=/; HttpOnly"), ("Set-Cookie", "theme=dark; Max-Age=3600; Path=/"),
                ])
            }
            server.route("/logout") { _ in .json(["ok": true], headers: [("Set-Cookie", "sid=; Max-Age=0; Path=/")]) }
            try await body(server)
        }
    }

    @Test("A cookie the server set is sent on the next command; the file is 0600 in a 0700 folder, the value sealed")
    func keepsCookies() async throws {
        try await serving { server in
            let home = ScratchHome()
            let login = try await home.run(["get", server.url("/login").absoluteString, "--session", "app"])
            #expect(login.status == 0, "\(login.standardError)")
            let next = try await home.run(["get", server.url("/headers").absoluteString, "--session", "app"])
            #expect(next.status == 0, "\(next.standardError)")
            let cookie = server.requests.last?.header("Cookie") ?? ""
            #expect(cookie.contains("sid=cookie-secret-1") && cookie.contains("theme=dark"), "\(cookie)")

            let file = home.session("app", for: server)
            #expect(try ScratchHome.mode(file) & 0o777 == 0o600)
            #expect(try ScratchHome.mode(file.deletingLastPathComponent()) & 0o777 == 0o700)
            #expect(try ScratchHome.mode(home.configuration.appendingPathComponent("callsign")) & 0o777 == 0o700)
            let text = try String(contentsOf: file, encoding: .utf8)
            #expect(text.contains("\"sid\"") && text.contains("sealed:"))
            #expect(!text.contains("cookie-secret-1"))
            #expect(!text.contains("\"dark\""))

            // The server expires a cookie: it is gone from the session.
            _ = try await home.run(["get", server.url("/logout").absoluteString, "--session", "app"])
            _ = try await home.run(["get", server.url("/headers").absoluteString, "--session", "app"])
            let after = server.requests.last?.header("Cookie") ?? ""
            #expect(!after.contains("sid=") && after.contains("theme=dark"), "\(after)")
        }
    }

    @Test("A bearer token and -H headers are kept; a later command's replace them; dry runs and -v show them REDACTED")
    func keepsCredentialsAndHeaders() async throws {
        try await serving { server in
            let home = ScratchHome()
            let url = server.url("/headers").absoluteString
            let first = try await home.run(["get", url, "--session", "api", "--bearer", "token-secret-1", "-H", "X-Team: blue", "X-Item:one"])
            #expect(first.status == 0, "\(first.standardError)")
            let second = try await home.run(["get", url, "--session", "api"])
            #expect(second.status == 0, "\(second.standardError)")
            let sent = try #require(server.requests.last)
            #expect(sent.header("Authorization") == "Bearer token-secret-1")
            #expect(sent.header("X-Team") == "blue")
            #expect(sent.header("X-Item") == "one")
            #expect(try !String(contentsOf: home.session("api", for: server), encoding: .utf8).contains("token-secret-1"))

            let dry = try await home.run(["get", url, "--session", "api", "--dry-run"])
            #expect(dry.status == 0, "\(dry.standardError)")
            #expect(dry.standardOutput.contains("Authorization: REDACTED"))
            #expect(!(dry.standardOutput + dry.standardError).contains("token-secret-1"))
            let verbose = try await home.run(["get", url, "--session", "api", "-v"])
            #expect(verbose.standardError.contains("Authorization: REDACTED"))
            #expect(!verbose.standardError.contains("token-secret-1"))

            _ = try await home.run(["get", url, "--session", "api", "--bearer", "token-secret-2", "-H", "X-Team: green"])
            _ = try await home.run(["get", url, "--session", "api"])
            let updated = try #require(server.requests.last)
            #expect(updated.header("Authorization") == "Bearer token-secret-2")
            #expect(updated.header("X-Team") == "green")

            // Basic credentials, and download takes the session too.
            let folder = Scratch.folder()
            _ = try await home.run(["get", server.url("/basic-auth/ann/pw").absoluteString, "--session", "basic", "--user", "ann:pw"])
            let download = try await CLIRunner.run(
                ["download", server.url("/basic-auth/ann/pw").absoluteString, "--session", "basic", "-o", folder.appendingPathComponent("out.json").path, "-q"],
                environment: home.environment)
            #expect(download.status == 0, "\(download.standardError)")
            #expect(try String(contentsOf: folder.appendingPathComponent("out.json"), encoding: .utf8).contains("\"authenticated\":true"))
        }
    }

    @Test("--session-read-only uses a session and writes nothing back")
    func readOnly() async throws {
        try await serving { server in
            let home = ScratchHome()
            let fresh = try await home.run(["get", server.url("/login").absoluteString, "--session-read-only", "ro"])
            #expect(fresh.status == 0, "\(fresh.standardError)")
            #expect(!FileManager.default.fileExists(atPath: home.session("ro", for: server).path))

            _ = try await home.run(["get", server.url("/headers").absoluteString, "--session", "ro", "-H", "X-Kept: 1"])
            let file = home.session("ro", for: server)
            let before = try Data(contentsOf: file)
            let used = try await home.run(["get", server.url("/login").absoluteString, "--session-read-only", "ro", "-H", "X-Kept: 2"])
            #expect(used.status == 0, "\(used.standardError)")
            #expect(server.requests.last?.header("X-Kept") == "2")
            #expect(try Data(contentsOf: file) == before)
            _ = try await home.run(["get", server.url("/headers").absoluteString, "--session-read-only", "ro"])
            #expect(server.requests.last?.header("X-Kept") == "1")
            #expect(server.requests.last?.header("Cookie") == nil)
        }
    }

    @Test("A symbolic link planted at the session's name is refused, never followed")
    func plantedLink() async throws {
        try await serving { server in
            let home = ScratchHome()
            let file = home.session("victim", for: server)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            let target = home.folder.appendingPathComponent("precious.txt")
            try Data("precious".utf8).write(to: target)
            try FileManager.default.createSymbolicLink(at: file, withDestinationURL: target)
            let result = try await home.run(["get", server.url("/login").absoluteString, "--session", "victim"])
            #expect(result.status == 74)
            #expect(result.standardError.contains("symbolic link"))
            #expect(try String(contentsOf: target, encoding: .utf8) == "precious")
            // A dangling link too: nothing is created where it points.
            let dangling = home.folder.appendingPathComponent("lure.json")
            let path = home.folder.appendingPathComponent("planted.json")
            try FileManager.default.createSymbolicLink(at: path, withDestinationURL: dangling)
            let viaPath = try await home.run(["get", server.url("/login").absoluteString, "--session", path.path])
            #expect(viaPath.status == 74)
            #expect(!FileManager.default.fileExists(atPath: dangling.path))
        }
    }

    @Test("A corrupt, oversized or hostile session file is a clear error with exit 74, never a crash, never its secret")
    func hostileFiles() async throws {
        try await serving { server in
            let home = ScratchHome()
            let folder = home.folder
            let origin = server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            let cases: [(name: String, contents: Data, says: String)] = [
                ("corrupt", Data("{not json".utf8), "damaged"),
                ("oversized", Data(repeating: 0x20, count: SessionFile.maximumSize + 1), "larger than"),
                ("format", Data(#"{"format":"other/9","origin":"\#(origin)","headers":[],"cookies":[]}"#.utf8), "format"),
                ("header", Data(#"{"format":"callsign-session/1","origin":"\#(origin)","headers":[{"name":"X-A","value":"evil\r\nX-Injected: 1"}],"cookies":[]}"#.utf8), "header"),
                ("cookie", Data(#"{"format":"callsign-session/1","origin":"\#(origin)","headers":[],"cookies":[{"name":"a","value":"v\r\nx","domain":"127.0.0.1","path":"/","isSecure":false,"isHostOnly":true,"created":0}]}"#.utf8), "cookie"),
                ("scheme", Data(#"{"format":"callsign-session/1","origin":"\#(origin)","authentication":{"type":"digest","secret":"auth-secret-9"},"headers":[],"cookies":[]}"#.utf8), "authentication"),
                ("sealed", Data(#"{"format":"callsign-session/1","origin":"\#(origin)","authentication":{"type":"bearer","secret":"sealed:AAAA"},"headers":[],"cookies":[]}"#.utf8), "sealed with another key"),
            ]
            for (name, contents, says) in cases {
                let file = folder.appendingPathComponent("\(name).json")
                try contents.write(to: file)
                let result = try await home.run(["get", server.url("/headers").absoluteString, "--session", file.path])
                #expect(result.status == 74, "\(name): \(result.standardError)")
                #expect(result.standardError.contains(says), "\(name): \(result.standardError)")
                #expect(result.standardError.split(separator: "\n").count == 1, "\(name)")
                #expect(!result.standardError.contains("auth-secret-9"))
            }
            #expect(!server.requests.contains { $0.header("X-Injected") != nil })
            let badName = try await home.run(["get", server.url("/headers").absoluteString, "--session", "..hidden"])
            #expect(badName.status == 65)
        }
    }

    @Test("A session's credentials and headers go to its own origin only: not to another host, not to a redirect's target")
    func originBound() async throws {
        try await serving { first in
            try await TestServer.withRunning { second in
                let home = ScratchHome()
                let path = home.folder.appendingPathComponent("shared.json").path
                _ = try await home.run(["get", first.url("/login").absoluteString, "--session", path, "--bearer", "origin-secret", "-H", "X-Team: blue"])
                let elsewhere = try await home.run(["get", second.url("/headers").absoluteString, "--session", path])
                #expect(elsewhere.status == 0, "\(elsewhere.standardError)")
                #expect(elsewhere.standardError.contains("belongs to"))
                let sent = try #require(second.requests.last)
                #expect(sent.header("Authorization") == nil)
                #expect(sent.header("X-Team") == nil)
                // (Its cookies follow the cookie rules, which ignore ports: RFC 6265 §8.5.)

                // A redirect from the session's origin to another: the credential stays behind.
                let hop = first.url("/redirect-to").absoluteString + "?url=" + second.url("/headers").absoluteString
                let redirected = try await home.run(["get", hop, "--session", path])
                #expect(redirected.status == 0, "\(redirected.standardError)")
                #expect(first.requests.last?.header("Authorization") == "Bearer origin-secret")
                #expect(second.requests.last?.header("Authorization") == nil)

                // A session NAME is kept per host: the same name for another host is another session.
                _ = try await home.run(["get", first.url("/headers").absoluteString, "--session", "login", "--bearer", "named-secret"])
                _ = try await home.run(["get", second.url("/headers").absoluteString, "--session", "login"])
                #expect(second.requests.last?.header("Authorization") == nil)
                #expect(home.session("login", for: first) != home.session("login", for: second))
            }
        }
    }
}
