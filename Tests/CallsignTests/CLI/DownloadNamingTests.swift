import CallsignTesting
import Foundation
import Testing

@testable import Callsign

@Suite("callsign download without -o: the name from Content-Disposition or the URL", .hangGuard)
struct DownloadNamingTests {
    /// Serves `body` with `field` as its Content-Disposition under /cd/<key>.
    private static let fields: [String: String] = [
        "star": "attachment; filename*=UTF-8''%e2%82%ac%20rates.txt; filename=\"plain.txt\"",
        "plain": "attachment; filename=\"say \\\"hi\\\".txt\"",
        "traversal": "attachment; filename=\"../../etc/passwd\"",
        "slash": "attachment; filename=\"a/b\"",
        "backslash": "attachment; filename=\"..\\\\..\\\\win.ini\"",
        "control": "attachment; filename*=UTF-8''bad%1b%5b31m%0aname.txt",
        "hidden": "attachment; filename=\".bashrc\"",
        "empty": "attachment; filename=\"\"",
        "dots": "attachment; filename=\"..\"",
        "long": "attachment; filename=\"" + String(repeating: "é", count: 300) + ".txt\"",
        "tilde": "attachment; filename=\"~\"",
        "tilde-user": "attachment; filename=\"~root\"",
        "tilde-path": "attachment; filename=\"~/.ssh/authorized_keys\"",
        "tilde-star": "attachment; filename*=UTF-8''%7E",
        "tilde-dots": "attachment; filename=\"~/..\"",
    ]

    private func run(_ key: String, in folder: URL, server: TestServer, extra: [String] = []) async throws -> CLIRunner.Result {
        try await CLIRunner.run(["download", server.url("/cd/\(key)").absoluteString, "-q"] + extra, directory: folder)
    }

    private func serving(_ body: @escaping @Sendable (TestServer) async throws -> Void) async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            server.route("/cd/") { request in
                let key = request.pathSegments.last ?? ""
                let headers = Self.fields[key].map { [(name: "Content-Disposition", value: $0)] } ?? []
                return .text("body of \(key)", headers: headers)
            }
            try await body(server)
        }
    }

    private func names(_ folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    @Test("filename* wins over filename, filename's quoted-string escapes are read, and the body lands under the name")
    func serverNames() async throws {
        try await serving { server in
            for (key, expected) in [("star", "€ rates.txt"), ("plain", "say \"hi\".txt")] {
                let folder = Scratch.folder()
                let result = try await run(key, in: folder, server: server)
                #expect(result.status == 0, "\(result.standardError)")
                #expect(try names(folder) == [expected])
                #expect(try String(contentsOf: folder.appendingPathComponent(expected), encoding: .utf8) == "body of \(key)")
                #expect(result.standardOutput.contains("Saved \(expected)"))
            }
        }
    }

    @Test("Hostile names stay plain files in the current folder: no path, no control character, not hidden, at most 255 bytes")
    func hostileNames() async throws {
        try await serving { server in
            let expected = [
                "traversal": "passwd", "slash": "b", "backslash": "win.ini", "control": "bad_[31m_name.txt",
                "hidden": "bashrc", "empty": "empty", "dots": "dots",
            ]
            for (key, name) in expected {
                let folder = Scratch.folder()
                let result = try await run(key, in: folder, server: server)
                #expect(result.status == 0, "\(key): \(result.standardError)")
                #expect(try names(folder) == [name], "\(key)")
            }
            let folder = Scratch.folder()
            let result = try await run("long", in: folder, server: server)
            #expect(result.status == 0, "\(result.standardError)")
            let long = try names(folder)
            #expect(long.count == 1)
            #expect(long.first.map { $0.utf8.count <= 255 && $0.hasSuffix(".txt") && $0.hasPrefix("éé") } == true)
        }
    }

    @Test("Without Content-Disposition the URL's last segment names the file, percent-decoded; with none, 'download'")
    func urlFallback() async throws {
        try await serving { server in
            let folder = Scratch.folder()
            let result = try await CLIRunner.run(["download", server.url("/cd/q%20report.csv").absoluteString, "-q"], directory: folder)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try names(folder) == ["q report.csv"])
            let root = Scratch.folder()
            let bare = try await CLIRunner.run(["download", server.url("/").absoluteString, "-q"], directory: root)
            #expect(bare.status == 0, "\(bare.standardError)")
            #expect(try names(root) == ["download"])
        }
    }

    @Test("An existing file is kept without --force (exit 73, nothing left behind); --force replaces it")
    func overwrite() async throws {
        try await serving { server in
            let folder = Scratch.folder()
            let file = folder.appendingPathComponent("passwd")
            try Data("mine".utf8).write(to: file)
            let refused = try await run("traversal", in: folder, server: server)
            #expect(refused.status == 73)
            #expect(refused.standardError.contains("passwd exists"))
            #expect(try String(contentsOf: file, encoding: .utf8) == "mine")
            #expect(try names(folder) == ["passwd"])
            let forced = try await run("traversal", in: folder, server: server, extra: ["--force"])
            #expect(forced.status == 0, "\(forced.standardError)")
            #expect(try String(contentsOf: file, encoding: .utf8) == "body of traversal")
            #expect(try names(folder) == ["passwd"])
            let resumed = try await run("traversal", in: folder, server: server, extra: ["--continue"])
            #expect(resumed.status == 64)
        }
    }

    @Test("A server's ~ is never expanded: ~ and ~root stay literal names in the current folder, as with curl -OJ and wget")
    func tildeNames() async throws {
        try await serving { server in
            let expected = [
                "tilde": "~", "tilde-user": "~root", "tilde-path": "authorized_keys", "tilde-star": "~", "tilde-dots": "tilde-dots",
                // No Content-Disposition: the URL's last segment, percent-decoded, is read the same way.
                "~": "~", "%7Eroot": "~root",
            ]
            for (key, name) in expected {
                let folder = Scratch.folder()
                let result = try await run(key, in: folder, server: server)
                #expect(result.status == 0, "\(key): \(result.standardError)")
                #expect(try names(folder) == [name], "\(key)")
                #expect(try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8) .hasPrefix("body of "))
                #expect(result.standardOutput.contains("Saved \(name)"), "\(key): \(result.standardOutput)")
            }
        }
        for name in ["~", "~root", "~user.txt"] { #expect(ContentDisposition.safeFileName(name) == name) }
        #expect(ContentDisposition.safeFileName("~/x") == "x")
        #expect(ContentDisposition.safeFileName("..") == nil)
    }

    @Test("The field reader: RFC 8187 charsets, bad escapes, bounds")
    func reader() {
        #expect(ContentDisposition.fileName(in: "attachment; filename*=iso-8859-1'en'%A3%20rates") == "£ rates")
        #expect(ContentDisposition.fileName(in: "attachment; filename*=UTF-8''bad%zz; filename=ok.txt") == "ok.txt")
        #expect(ContentDisposition.fileName(in: "attachment; filename*=KOI8-R''x; filename=ok.txt") == "ok.txt")
        #expect(ContentDisposition.fileName(in: "attachment; filename=\"" + String(repeating: "a", count: 9000) + "\"") == nil)
        let many = "attachment" + String(repeating: "; x=1", count: 40) + "; filename=late.txt"
        #expect(ContentDisposition.fileName(in: many) == nil)
        #expect(ContentDisposition.safeFileName("\u{202E}txt.exe") == "_txt.exe")
        #expect(ContentDisposition.safeFileName(". . .bashrc") == "bashrc")
    }
}
