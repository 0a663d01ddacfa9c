import CallsignTesting
import Foundation
import Testing

@testable import Callsign
@testable import callsign

@Suite("callsign's default-options file and its manual page", .hangGuard)
struct CLIConfigTests {
    private func write(_ text: String, to file: URL) throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: file)
    }

    @Test("The file's options apply to every command that takes them; the command line wins; --no-config skips the file")
    func applied() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let home = ScratchHome()
            try write(
                """
                # defaults
                --print=hb
                -H X-From-Config: yes
                -H X-Both: file
                  --timeout "30"

                --max-redirs 3
                """, to: home.configuration.appendingPathComponent("callsign/config"))
            let url = server.url("/headers").absoluteString
            let configured = try await home.run(["get", url, "-H", "X-Both: command line"])
            #expect(configured.status == 0, "\(configured.standardError)")
            #expect(configured.standardOutput.hasPrefix("HTTP/1.1 200 OK"))
            let sent = try #require(server.requests.last)
            #expect(sent.header("X-From-Config") == "yes")
            #expect(sent.headers.filter { $0.name.lowercased() == "x-both" }.map { $0.value } == ["command line"])

            let printed = try await home.run(["get", url, "--print", "b"])
            #expect(printed.status == 0, "\(printed.standardError)")
            #expect(printed.standardOutput.hasPrefix("{"))

            let skipped = try await home.run(["get", url, "--no-config"])
            #expect(skipped.status == 0, "\(skipped.standardError)")
            #expect(skipped.standardOutput.hasPrefix("{"))
            #expect(server.requests.last?.header("X-From-Config") == nil)

            // Options no command here takes are left out for it: `manual` and `queue list` still run.
            let manual = try await home.run(["manual"])
            #expect(manual.status == 0, "\(manual.standardError)")

            // CALLSIGN_CONFIG names another file.
            let elsewhere = home.folder.appendingPathComponent("team.conf")
            try write("-H X-Team-File: 1\n", to: elsewhere)
            _ = try await home.run(["get", url], extra: ["CALLSIGN_CONFIG": elsewhere.path])
            #expect(server.requests.last?.header("X-Team-File") == "1")
            #expect(server.requests.last?.header("X-From-Config") == nil)
            let missing = try await home.run(["get", url], extra: ["CALLSIGN_CONFIG": home.folder.appendingPathComponent("none").path])
            #expect(missing.status == 64)
            #expect(missing.standardError.contains("CALLSIGN_CONFIG"))
        }
    }

    @Test("A bad line is an error naming the file and the line, exit 64; nothing is sent")
    func badLines() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let home = ScratchHome()
            let file = home.configuration.appendingPathComponent("callsign/config")
            let cases: [(text: String, says: String)] = [
                ("--timeout 30\n# fine\nhttps://evil.example/steal\n", "config:3: not an option"),
                ("--frobnicate 1\n", "config:1: --frobnicate is not an option of any callsign command"),
                ("--verbose yes\n", "config:1: --verbose takes no value"),
                ("--timeout\n", "config:1: --timeout needs a value"),
                ("--help\n", "config:1: --help cannot be a default option"),
                ("-H a\u{1B}[31m: b\n", "config:1: a control character"),
                (String(repeating: "#", count: ConfigFile.maximumSize + 1), "larger than"),
            ]
            let before = server.requests.count
            for (text, says) in cases {
                try write(text, to: file)
                let result = try await home.run(["get", server.url("/headers").absoluteString])
                #expect(result.status == 64, "\(says): \(result.standardError)")
                #expect(result.standardError.contains(says), "\(result.standardError)")
                #expect(!result.standardError.contains("evil.example"))
            }
            #expect(server.requests.count == before)
        }
    }

    @Test("The parser: comments, quotes, = and spaces, bounds")
    func parser() throws {
        let entries = try ConfigFile.parse(Data("# c\n\n  --a 1\n--b=two words\n-H \" padded \"\r\n--flag\n".utf8), path: "f")
        #expect(entries == [
            .init(line: 3, option: "--a", value: "1"), .init(line: 4, option: "--b", value: "two words"),
            .init(line: 5, option: "-H", value: " padded "), .init(line: 6, option: "--flag", value: nil),
        ])
        #expect(throws: APIError.self) { try ConfigFile.parse(Data([0xFF, 0xFE]), path: "f") }
        #expect(throws: APIError.self) { try ConfigFile.parse(Data("--=erbose\n".utf8), path: "f") }  // found by cli-config
        #expect(throws: APIError.self) { try ConfigFile.parse(Data("-\n".utf8), path: "f") }
        #expect(throws: APIError.self) { try ConfigFile.parse(Data(String(repeating: "--a\n", count: ConfigFile.maximumEntries + 1).utf8), path: "f") }
        #expect(HeaderOptions.all(["X-A: file", "X-B: file"], commandLine: ["x-a: cli", "X-A: cli2"]) == ["X-B: file", "x-a: cli", "X-A: cli2"])
    }

    @Test("callsign manual prints a man page made from the commands: every command and option in it")
    func manual() async throws {
        try CLIRunner.requireBuilt()
        let home = ScratchHome()
        let result = try await home.run(["manual"])
        #expect(result.status == 0, "\(result.standardError)")
        let page = result.standardOutput
        #expect(page.hasPrefix(".TH CALLSIGN 1"))
        for command in CallsignCommand.configuration.subcommands {
            let name = command.configuration.commandName ?? ""
            #expect(page.contains(".SS \"callsign \(ManualPage.escape(name))\""), "\(name)")
            for sub in command.configuration.subcommands {
                #expect(page.contains(".SS \"callsign \(name) \(sub.configuration.commandName ?? "")\""), "\(name)")
            }
        }
        for option in ["--session", "--session-read-only", "--no-config", "--max-redirs", "--dry-run"] {
            #expect(page.contains("\\fB\(ManualPage.escape(option))\\fR"), "\(option)")
        }
        #expect(!page.contains("\n'") && !page.split(separator: "\n").contains { $0.hasPrefix(".") && $0.hasPrefix(".\\-") })
        // man(1) renders it without a warning, where a formatter is installed.
        guard let groff = ["/usr/bin/groff", "/usr/local/bin/groff"].first(where: FileManager.default.isExecutableFile(atPath:)) else { return }
        let rendered = try await ProcessRunner.run(groff, ["-man", "-Tutf8", "-ww", "-z"], input: Data(page.utf8))
        #expect(rendered.status == 0)
        #expect(rendered.standardError.isEmpty, "\(rendered.standardError)")
    }
}
