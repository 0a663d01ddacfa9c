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

    @Test("Every cookie the jar takes is saved and read back: a 300-byte name, a whole 4,096-byte cookie, a quoted path")
    func jarBoundsRoundTrip() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let longName = String(repeating: "n", count: 300)
            let bigValue = String(repeating: "v", count: CookieJar.maximumCookieSize - 3)
            server.route("/big") { _ in
                .json(["ok": true], headers: [
                    ("Set-Cookie", "\(longName)=1; Path=/"), ("Set-Cookie", "big=\(bigValue); Path=/"),
                    ("Set-Cookie", "quoted=q; Path=/a\"b\\c"),
                ])
            }
            let home = ScratchHome()
            let set = try await home.run(["get", server.url("/big").absoluteString, "--session", "wide"])
            #expect(set.status == 0, "\(set.standardError)")
            let next = try await home.run(["get", server.url("/headers").absoluteString, "--session", "wide"])
            #expect(next.status == 0, "\(next.standardError)")
            #expect(next.standardError.isEmpty, "\(next.standardError)")
            let cookie = server.requests.last?.header("Cookie") ?? ""
            #expect(cookie.contains("\(longName)=1") && cookie.contains("big=\(bigValue)"))
            let text = try String(contentsOf: home.session("wide", for: server), encoding: .utf8)
            #expect(text.contains("quoted") && !text.contains(bigValue))
        }
    }

    @Test("Whatever the jar accepts from Set-Cookie round-trips through the session file's writer and reader")
    func jarAcceptsSessionKeeps() throws {
        var random = SeededGenerator(seed: 48)
        let tokenCharacters = Array("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        let valueCharacters = Array("abcXYZ019!#$%&'()*+,-./:<=>?@[]^_`{|}~\\\"é漢😀") + [" "]
        let jar = CookieJar()
        for index in 0..<300 {
            let nameLength = [1, 40, 300, 1_000, 3_000].randomElement(using: &random) ?? 1
            let name = "c\(index)-" + String((0..<nameLength).map { _ in tokenCharacters.randomElement(using: &random) ?? "a" })
            let room = max(0, CookieJar.maximumCookieSize - name.utf8.count - 4) / 4
            let value = "v" + String((0..<Int.random(in: 0...room, using: &random)).map { _ in valueCharacters.randomElement(using: &random) ?? "x" }) + "v"
            let path = "/" + String((0..<Int.random(in: 0...200, using: &random)).map { _ in valueCharacters.randomElement(using: &random) ?? "x" })
                .replacingOccurrences(of: ";", with: "")
            let secure = Bool.random(using: &random) ? "; Secure" : ""
            let age = Bool.random(using: &random) ? "; Max-Age=\(Int.random(in: 60...100_000, using: &random))" : ""
            // Ten hosts, thirty cookies each: within the jar's 50 per domain.
            let url = try #require(URL(string: "https://h\(index % 10).example.test/p/q"))
            jar.store(setCookie: ["\(name)=\(value); Path=\(path)\(secure)\(age)"], from: url)
        }
        let kept = jar.all()
        #expect(kept.count > 250, "the jar took \(kept.count) of 300")
        var session = SessionFile(origin: "https://h.example.test:443", cookies: kept)
        let data = session.encodedWithinBounds()
        let read = try SessionFile.decode(data, path: "session.json")
        let identity: ([Cookie]) -> Set<[String]> = { Set($0.map { [$0.name, $0.value, $0.domain, $0.path, "\($0.isSecure)", "\($0.expires != nil)"] }) }
        #expect(identity(SessionFile.admitted(read.cookies)) == identity(kept))
    }

    @Test("A session file with unreadable cookies keeps its credentials: each such cookie is left out with a note")
    func unreadableCookieDropped() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let home = ScratchHome()
            let origin = server.baseURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            func cookie(_ name: String, _ value: String) -> String {
                #"{"name":"\#(name)","value":"\#(value)","domain":"127.0.0.1","path":"/","isSecure":false,"isHostOnly":true,"created":0}"#
            }
            let cookies = [cookie("ok", "1"), cookie("split", #"v\r\nX-Injected: 1"#), cookie("moved", "sealed:AAAA"), cookie("bad name", "x")]
            let file = home.folder.appendingPathComponent("kept.json")
            try Data(#"{"format":"callsign-session/1","origin":"\#(origin)","authentication":{"type":"bearer","secret":"auth-secret-9"},"headers":[],"cookies":[\#(cookies.joined(separator: ","))]}"#.utf8)
                .write(to: file)
            let result = try await home.run(["get", server.url("/headers").absoluteString, "--session", file.path])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardError.contains("the cookie moved was sealed with another key or altered; it is left out"), "\(result.standardError)")
            #expect(result.standardError.contains("2 cookie(s) left out"), "\(result.standardError)")
            #expect(!result.standardError.contains("auth-secret-9"))
            let sent = try #require(server.requests.last)
            #expect(sent.header("Authorization") == "Bearer auth-secret-9")
            #expect(sent.header("Cookie") == "ok=1")
            #expect(sent.header("X-Injected") == nil)
            // Written back without them, the credential sealed.
            let text = try String(contentsOf: file, encoding: .utf8)
            #expect(!text.contains("moved") && !text.contains("split") && !text.contains("auth-secret-9"))
            let again = try await home.run(["get", server.url("/headers").absoluteString, "--session", file.path])
            #expect(again.status == 0 && again.standardError.isEmpty, "\(again.standardError)")
        }
    }

    @Test("Two commands with one session at once: the one that finishes last merges under the lock, and both cookies survive")
    func concurrentSaves() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let (arrivals, arrived) = AsyncStream<Void>.makeStream()
            let (releases, release) = AsyncStream<Void>.makeStream()
            server.route("/slow") { _ in
                arrived.yield()
                for await _ in releases { break }
                return .json(["ok": true], headers: [("Set-Cookie", "slow=a; Path=/; Max-Age=3600")])
            }
            server.route("/quick") { _ in .json(["ok": true], headers: [("Set-Cookie", "quick=b; Path=/; Max-Age=3600")]) }
            let home = ScratchHome()
            // A cookie set before both: neither command touches it, and it stays.
            _ = try await home.run(["get", server.url("/quick").absoluteString, "--session", "both"])
            server.route("/quick") { _ in .json(["ok": true], headers: [("Set-Cookie", "quick2=c; Path=/")]) }

            // The slow command waits for the quick one, a whole process, however long a busy
            // machine takes to run it: its limit (and so its idle limit) is ten minutes, not the
            // default minute of silence.
            async let slow = home.run(["get", server.url("/slow").absoluteString, "--session", "both", "--timeout", "600"])
            var waiting = arrivals.makeAsyncIterator()
            await waiting.next()  // the slow command has read the session and is waiting for its answer
            let quick = try await home.run(["get", server.url("/quick").absoluteString, "--session", "both"])
            #expect(quick.status == 0, "\(quick.standardError)")
            release.yield()
            let slowResult = try await slow
            #expect(slowResult.status == 0, "\(slowResult.standardError)")

            let check = try await home.run(["get", server.url("/headers").absoluteString, "--session", "both"])
            #expect(check.status == 0, "\(check.standardError)")
            let cookie = server.requests.last?.header("Cookie") ?? ""
            #expect(cookie.contains("slow=a") && cookie.contains("quick=b") && cookie.contains("quick2=c"), "\(cookie)")

            let session = home.session("both", for: server)
            let lock = session.deletingLastPathComponent().appendingPathComponent(".both.json.lock")
            #expect(try ScratchHome.mode(lock) & 0o777 == 0o600)
            // A link planted at the lock's name is refused, never followed.
            try FileManager.default.removeItem(at: lock)
            let target = home.folder.appendingPathComponent("lure")
            try FileManager.default.createSymbolicLink(at: lock, withDestinationURL: target)
            let planted = try await home.run(["get", server.url("/quick").absoluteString, "--session", "both"])
            #expect(planted.status == 74, "\(planted.standardError)")
            #expect(planted.standardError.contains("symbolic link"))
            #expect(!FileManager.default.fileExists(atPath: target.path))
        }
    }
}

/// A small deterministic generator (SplitMix64), so a property test draws the same cases each run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
