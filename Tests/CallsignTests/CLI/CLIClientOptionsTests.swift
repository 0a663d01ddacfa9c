import ArgumentParser
import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

@testable import callsign

/// The options that shape the client (``ClientOptions``): declared once, so every command that
/// makes a client takes each one, refuses a bad value with the same words and exit status, and
/// applies it the same way — `download` as `get`.
@Suite("callsign client options: one declaration for every command that makes a client", .hangGuard)
struct CLIClientOptionsTests {
    /// Every command that makes a client from ``ClientOptions``, with what it needs besides.
    private static let commands: [[String]] = [
        ["call", "Users"], ["get", "http://127.0.0.1:9/x"], ["post", "http://127.0.0.1:9/x"], ["put", "http://127.0.0.1:9/x"],
        ["patch", "http://127.0.0.1:9/x"], ["delete", "http://127.0.0.1:9/x"], ["head", "http://127.0.0.1:9/x"],
        ["download", "http://127.0.0.1:9/x"],
    ]

    /// Every shared option, each with a good value.
    private static let shared = [
        "--timeout", "5", "--deadline", "9", "--retry", "2", "--retry-max-wait", "4", "--max-redirs", "3",
        "-x", "http://127.0.0.1:9", "--noproxy", "internal.example", "--proxy-user", "me:pw", "--proxytunnel",
        "--bearer", "t0ken", "--http1.1", "-H", "X-Team: payments",
    ]

    /// The client options of a parsed command, whichever command it is.
    private static func clientOptions(of command: any ParsableCommand) throws -> ClientOptions {
        switch command {
        case let call as CallCommand: return call.exchange.clientOptions
        case let download as DownloadCommand: return download.clientOptions
        case let get as MethodCommand<GetMethod>: return get.exchange.clientOptions
        case let post as MethodCommand<PostMethod>: return post.exchange.clientOptions
        case let put as MethodCommand<PutMethod>: return put.exchange.clientOptions
        case let patch as MethodCommand<PatchMethod>: return patch.exchange.clientOptions
        case let delete as MethodCommand<DeleteMethod>: return delete.exchange.clientOptions
        case let head as MethodCommand<HeadMethod>: return head.exchange.clientOptions
        default: throw ValidationError("\(type(of: command)) makes no client from ClientOptions")
        }
    }

    @Test("every command that makes a client takes each shared option and applies it the same way")
    func everyCommandTakesEveryOption() async throws {
        // Reading the command tree takes seconds in a debug build: on a thread of its own, never
        // one of the cooperative pool's two.
        let wrong = try await onOwnThread { () throws -> [String] in
            var wrong: [String] = []
            for command in Self.commands {
                let parsed = try CallsignCommand.parseAsRoot(command + Self.shared)
                let options = try Self.clientOptions(of: parsed)
                var configuration = APIClient.Configuration()
                try options.configure(&configuration, definitions: nil, explicit: options.credentials.authentication())
                var request = Request.get("http://127.0.0.1:9/x")
                _ = options.limit(&request, configuration: &configuration, says: false)
                let checks: [(String, Bool)] = [
                    ("timeout", request.timeout == .seconds(5)),
                    ("deadline", request.deadline == .seconds(9)),
                    ("retry", request.retry?.maximumAttempts == 2),
                    ("retry-max-wait", request.retry?.maximumRetryAfter == .seconds(4)),
                    ("max-redirs", configuration.redirects.maximumHops == 3),
                    ("proxytunnel", configuration.proxy?.http?.alwaysTunnels == true),
                    ("proxy-user", configuration.proxy?.https?.credentials?.username == "me"),
                    ("noproxy", configuration.proxy?.bypass == ["internal.example"]),
                    ("credentials", configuration.authentication != nil),
                    ("http1.1", configuration.tls.allowsHTTP2 == false),
                ]
                wrong += checks.filter { !$0.1 }.map { "\(command[0]): \($0.0)" }
            }
            return wrong
        }
        #expect(wrong.isEmpty, "\(wrong)")
        // queue replay and queue watch send requests shaped when they were queued: they take the
        // connection's part.
        for command in ["replay", "watch"] {
            let replayed = try await onOwnThread { () throws -> (proxied: Bool, http2: Bool)? in
                let parsed = try CallsignCommand.parseAsRoot(["queue", command, "-x", "http://127.0.0.1:9", "--http1.1"])
                guard let sending = (parsed as? QueueReplayCommand)?.sending ?? (parsed as? QueueWatchCommand)?.sending else { return nil }
                var configuration = APIClient.Configuration()
                try sending.configureConnection(&configuration, definitions: nil, explicit: nil)
                return (configuration.proxy?.https != nil, configuration.tls.allowsHTTP2)
            }
            #expect(replayed?.proxied == true, "\(command)")
            #expect(replayed?.http2 == false, "\(command)")
        }
    }

    /// Bad values of the shared options, and the sentence each is refused with.
    private static let refusals: [(arguments: [String], message: String)] = [
        (["--timeout", "0"], "--timeout takes more than 0 and at most 86400 seconds"),
        (["--timeout", "nan"], "--timeout takes more than 0 and at most 86400 seconds"),
        (["--timeout", "86401"], "--timeout takes more than 0 and at most 86400 seconds"),
        (["--deadline=-1"], "--deadline takes more than 0 and at most 86400 seconds"),
        (["--deadline", "inf"], "--deadline takes more than 0 and at most 86400 seconds"),
        (["--retry", "0"], "--retry takes 1 to 100 attempts"),
        (["--retry", "101"], "--retry takes 1 to 100 attempts"),
        (["--retry-max-wait=-1"], "--retry-max-wait takes 0 to 86400 seconds"),
        (["--max-redirs", "51"], "--max-redirs takes 0 to 50"),
    ]

    @Test("a bad value of a shared option is refused by every command with exit 64 and the same sentence")
    func badValuesRefusedAlike() async throws {
        // Each refusal from one command in turn, so every command refuses at least one option
        // (reading a refused command line is slow in a debug build: not all 72 pairs), on a
        // thread of its own, never one of the cooperative pool's two. The options' type is one
        // (``everyCommandTakesEveryOption``), so one command's refusal is every command's.
        let outcomes = try await onOwnThread { () -> [(arguments: [String], expected: String, code: Int32?, message: String?)] in
            var outcomes: [(arguments: [String], expected: String, code: Int32?, message: String?)] = []
            for (index, refusal) in Self.refusals.enumerated() {
                for command in [Self.commands[index % Self.commands.count]] {
                    let arguments = command + refusal.arguments
                    do {
                        _ = try CallsignCommand.parseAsRoot(arguments)
                        outcomes.append((arguments, refusal.message, nil, nil))
                    } catch {
                        outcomes.append((arguments, refusal.message, CallsignCommand.exitCode(for: error).rawValue, CallsignCommand.message(for: error)))
                    }
                }
            }
            return outcomes
        }
        for outcome in outcomes {
            #expect(outcome.code == 64, "\(outcome.arguments)")
            #expect(outcome.message == outcome.expected, "\(outcome.arguments)")
        }
    }

    @Test("the built command refuses --timeout 0 from call, get and download alike: exit 64, the same sentence")
    func badValueRefusedByTheProcess() async throws {
        try CLIRunner.requireBuilt()
        for command in [["call", "Users"], ["get", "http://127.0.0.1:9/x"], ["download", "http://127.0.0.1:9/x"]] {
            let result = try await CLIRunner.run(command + ["--timeout", "0"])
            #expect(result.status == 64, "\(command[0]): \(result.standardError)")
            #expect(result.standardError.contains("--timeout takes more than 0 and at most 86400 seconds"), "\(command[0]): \(result.standardError)")
        }
    }

    @Test("download takes --retry as get does: --retry 1 makes one attempt at a 503, the default retries it")
    func downloadRetries() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let seen = Mutex<Set<String>>([])
            server.route("/flaky/") { request in
                let first = seen.withLock { $0.insert(request.rawPath).inserted }
                return first ? .json(["error": "busy"], status: 503, headers: [("Retry-After", "0")]) : .json(["ok": true])
            }
            try await withTemporaryFolder("cli-client-retry") { folder in
                for command in ["get", "download"] {
                    let once = "/flaky/\(command)-once"
                    let output = ["-o", folder.appendingPathComponent("\(command)-once").path, "-q"]
                    let single = try await CLIRunner.run([command, server.url(once).absoluteString, "--retry", "1"] + output)
                    #expect(single.status == 22, "\(command): \(single.standardError)")
                    #expect(server.hits(once) == 1, "\(command)")

                    let again = "/flaky/\(command)-again"
                    let retried = try await CLIRunner.run(
                        [command, server.url(again).absoluteString, "-o", folder.appendingPathComponent("\(command)-again").path, "-q"])
                    #expect(retried.status == 0, "\(command): \(retried.standardError)")
                    #expect(server.hits(again) == 2, "\(command)")
                }
            }
        }
    }

    @Test("no command nests option groups more than three deep: a debug build reads a command line in seconds, not minutes")
    func optionGroupsStayShallow() {
        // A debug build of the argument parser checks every nested group again for each level
        // above it, so each level deeper multiplies the time to read a command line (five levels
        // took 18 s for `callsign get --help`; three take about one).
        func depth(_ type: any ParsableArguments.Type) -> Int {
            let groups = Mirror(reflecting: type.init()).children.compactMap { ($0.value as? any NestedOptionGroup)?.groupType }
            return 1 + (groups.map(depth).max() ?? 0)
        }
        func commands(_ command: any ParsableCommand.Type) -> [any ParsableCommand.Type] {
            [command] + command.configuration.subcommands.flatMap(commands)
        }
        let all = commands(CallsignCommand.self)
        #expect(all.count > 10)
        #expect(depth(CallCommand.self) - 1 == 3, "the walk sees call → exchange → client options → credentials")
        for command in all {
            #expect(depth(command) - 1 <= 3, "\(command): \(depth(command) - 1) levels of option groups")
        }
    }
}

/// An `@OptionGroup`, seen through reflection: the type of the group it holds.
private protocol NestedOptionGroup { var groupType: any ParsableArguments.Type { get } }
extension OptionGroup: NestedOptionGroup { var groupType: any ParsableArguments.Type { Value.self } }
