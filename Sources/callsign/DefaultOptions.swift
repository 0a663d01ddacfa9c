import ArgumentParser
import Callsign
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `--no-config`: every command takes it, and then reads no default-options file.
struct ConfigFileOption: ParsableArguments {
    @Flag(
        name: .customLong("no-config"),
        help: .localized("Ignore the default-options file ($CALLSIGN_CONFIG, else $XDG_CONFIG_HOME/callsign/config or ~/.config/callsign/config)."))
    var noConfig = false
}

/// The per-user default options: the file's options go before the command's own, so the command
/// line wins (the last value of an option counts; a `-H` on the command line replaces the file's
/// header of that name). An option goes to the commands that take it: `--timeout 30` applies to
/// `get` and `call`, not to `list`.
enum DefaultOptions {
    /// The file to read: `$CALLSIGN_CONFIG` (which must exist), else `config` in
    /// `$XDG_CONFIG_HOME/callsign` (else `~/.config/callsign`) when there is one.
    static func file(environment: [String: String] = ProcessInfo.processInfo.environment) throws(APIError) -> URL? {
        if let named = environment["CALLSIGN_CONFIG"], !named.isEmpty {
            guard FileManager.default.fileExists(atPath: named) else {
                throw cliError(.invalidRequest, "CALLSIGN_CONFIG names \(named), which does not exist")
            }
            return URL(fileURLWithPath: named)
        }
        guard let folder = try? SessionPlace.configurationFolder(environment: environment) else { return nil }
        let file = folder.appendingPathComponent("config")
        return FileManager.default.fileExists(atPath: file.path) ? file : nil
    }

    /// `arguments` (without the program's name) with the file's options inserted after the command's name.
    static func apply(to arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws(APIError) -> [String] {
        let beforeTerminator = arguments.prefix { $0 != "--" }
        guard !beforeTerminator.contains("--no-config"), let file = try file(environment: environment) else { return arguments }
        let entries = try ConfigFile.parse(try read(file), path: file.path)
        guard !entries.isEmpty else { return arguments }
        let tree = try CommandTree.root()
        // The command named: the longest run of subcommand names at the start.
        var command = tree
        var depth = 0
        while depth < arguments.count, let next = command.subcommands?.first(where: { $0.commandName == arguments[depth] }) {
            command = next
            depth += 1
        }
        var inserted: [String] = []
        for entry in entries {
            guard let argument = command.argument(named: entry.option) else {
                guard tree.anyCommandTakes(entry.option) else {
                    throw cliError(.invalidRequest, "\(file.path):\(entry.line): \(entry.option) is not an option of any callsign command")
                }
                continue
            }
            switch (argument.kind, entry.value) {
            case ("flag", .some):
                throw cliError(.invalidRequest, "\(file.path):\(entry.line): \(entry.option) takes no value")
            case ("option", nil):
                throw cliError(.invalidRequest, "\(file.path):\(entry.line): \(entry.option) needs a value")
            default:
                inserted += entry.arguments
            }
        }
        // Only with a command: `callsign --help` and `callsign --version` stay as they are.
        guard depth > 0 else { return arguments }
        return Array(arguments[..<depth]) + inserted + arguments[depth...]
    }

    /// The file's bytes: a regular file (a link to one is followed, as dotfiles often are), at
    /// most ``ConfigFile/maximumSize`` bytes.
    private static func read(_ file: URL) throws(APIError) -> Data {
        var info = stat()
        guard stat(file.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw cliError(.invalidRequest, "\(file.path): not a regular file; the default-options file is a text file")
        }
        return try FileReader.read(file, limit: ConfigFile.maximumSize) { error in
            cliError(.invalidRequest, "\(file.path) cannot be read", underlyingError: error)
        } tooLarge: { _ in
            ConfigFile.tooLarge(file.path)
        }
    }
}

/// The commands and their options as ArgumentParser describes them (its tool-info JSON), read by
/// the default options and the manual page: one source, the commands' own definitions.
struct CommandTree: Decodable {
    var commandName: String
    var abstract: String?
    var discussion: String?
    var shouldDisplay: Bool?
    var subcommands: [CommandTree]?
    var arguments: [Argument]?

    struct Argument: Decodable {
        var kind: String
        var shouldDisplay: Bool?
        var isOptional: Bool?
        var isRepeating: Bool?
        var names: [Name]?
        var valueName: String?
        var defaultValue: String?
        var abstract: String?
        var discussion: String?

        struct Name: Decodable {
            var kind: String
            var name: String

            /// As typed: `--name`, `-n`.
            var spelled: String { kind == "long" ? "--" + name : "-" + name }
        }
    }

    private struct ToolInfo: Decodable {
        var command: CommandTree
    }

    /// The `callsign` command and everything under it.
    static func root() throws(APIError) -> CommandTree {
        do {
            return try JSONDecoder().decode(ToolInfo.self, from: Data(CallsignCommand._dumpHelp().utf8)).command
        } catch {
            throw cliError(.invalidRequest, "the commands' own description cannot be read", underlyingError: error)
        }
    }

    /// This command's argument spelled `option`, if it takes one.
    func argument(named option: String) -> Argument? {
        arguments?.first { $0.kind != "positional" && ($0.names ?? []).contains { $0.spelled == option } }
    }

    /// Whether this command or one under it takes `option`.
    func anyCommandTakes(_ option: String) -> Bool {
        argument(named: option) != nil || (subcommands ?? []).contains { $0.anyCommandTakes(option) }
    }
}
