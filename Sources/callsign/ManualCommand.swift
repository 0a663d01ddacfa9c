import ArgumentParser
import Callsign
import Foundation

/// `callsign manual`: the manual page, made from the commands' own definitions each time, so it
/// can never fall behind them.
struct ManualCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "manual",
        abstract: localized("Print the manual page (man(1) format), made from these commands' own definitions."),
        discussion: localized("""
            Examples:
              callsign manual | man -l -
              callsign manual > ~/.local/share/man/man1/callsign.1

            Every command, option and default is described as `--help` describes it, with the files \
            Callsign reads and the exit statuses.
            """))

    @OptionGroup var config: ConfigFileOption

    func run() async throws {
        try await reportingErrors {
            for line in ManualPage.render(try CommandTree.root()).split(separator: "\n", omittingEmptySubsequences: false) {
                Terminal.out(String(line))
            }
        }
    }
}

/// A man(7) page for the command tree.
enum ManualPage {
    static func render(_ root: CommandTree, version: String = APIClient.version) -> String {
        var page: [String] = [
            ".TH CALLSIGN 1 \"\" \"callsign \(escape(version))\" \"User Commands\"",
            ".SH NAME",
            "callsign \\- \(escape(root.abstract ?? ""))",
            ".SH SYNOPSIS",
            ".B callsign",
            ".I command",
            "[\\fIoptions\\fR] [\\fIarguments\\fR]",
            ".SH DESCRIPTION",
        ]
        page += paragraphs(root.discussion)
        page.append(".SH COMMANDS")
        for command in root.subcommands ?? [] where command.shouldDisplay ?? true && command.commandName != "help" {
            page += section(command, path: ["callsign"])
        }
        page += [
            ".SH FILES",
            ".TP", "\\fI$CALLSIGN_CONFIG\\fR, else \\fI$XDG_CONFIG_HOME/callsign/config\\fR or \\fI~/.config/callsign/config\\fR",
            escape(localized("Default options, one a line (--name value); the command line wins. --no-config skips the file.")),
            ".TP", "\\fI$XDG_CONFIG_HOME/callsign/sessions/HOST/NAME.json\\fR",
            escape(localized("Sessions (--session NAME): cookies, credentials and headers for one host, owner-only (0600), secrets sealed with session.key beside them.")),
            ".TP", "\\fI$XDG_CACHE_HOME/callsign/descriptions/\\fR, else \\fI~/.cache/callsign/descriptions/\\fR",
            escape(localized("OpenAPI documents as loaded, keyed by their bytes, owner-only (0600): `callsign cache` shows them, `callsign cache clear` removes them.")),
            ".SH SEE ALSO",
            ".BR curl (1),",
            ".BR http (1)",
        ]
        return page.joined(separator: "\n") + "\n"
    }

    /// One command and its options, then the commands under it.
    private static func section(_ command: CommandTree, path: [String]) -> [String] {
        let path = path + [command.commandName]
        var lines = [".SS \"\(escape(path.joined(separator: " ")))\""]
        if let abstract = command.abstract { lines.append(escape(abstract)) }
        lines += paragraphs(command.discussion)
        for argument in command.arguments ?? [] where argument.shouldDisplay ?? true {
            lines.append(".TP")
            lines.append(synopsis(argument))
            var text = argument.abstract ?? ""
            if let discussion = argument.discussion, !discussion.isEmpty { text += " " + discussion }
            if let value = argument.defaultValue, !value.isEmpty { text += " (default: \(value))" }
            lines.append(escape(text))
        }
        for sub in command.subcommands ?? [] where sub.shouldDisplay ?? true && sub.commandName != "help" {
            lines += section(sub, path: path)
        }
        return lines
    }

    /// `\fB--name\fR, \fB-n\fR \fIvalue\fR`, or `\fIurl\fR` for a positional argument.
    private static func synopsis(_ argument: CommandTree.Argument) -> String {
        let value = argument.valueName.map { "\\fI<\(escape($0))>\\fR" }
        switch argument.kind {
        case "positional":
            return (value ?? "") + (argument.isRepeating == true ? " ..." : "")
        default:
            let names = (argument.names ?? []).map { "\\fB\(escape($0.spelled))\\fR" }.joined(separator: ", ")
            return argument.kind == "option" ? names + " " + (value ?? "") : names
        }
    }

    /// Text as roff paragraphs: indented lines (examples) kept as they are, in no-fill mode.
    private static func paragraphs(_ text: String?) -> [String] {
        guard let text, !text.isEmpty else { return [] }
        var lines: [String] = []
        var literal = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let indented = line.hasPrefix(" ")
            if indented != literal {
                lines.append(indented ? ".nf" : ".fi")
                literal = indented
            }
            lines.append(line.isEmpty ? ".PP" : escape(String(line)))
        }
        if literal { lines.append(".fi") }
        return lines
    }

    /// Text safe in roff: backslashes escaped, a leading `.` or `'` not read as a request, `-` as
    /// a minus, anything past ASCII as its code point (`\[u2014]`), which every formatter reads.
    static func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\e"
            case "-": escaped += "\\-"
            case _ where scalar.isASCII: escaped.unicodeScalars.append(scalar)
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                escaped += "\\[u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
            }
        }
        if escaped.hasPrefix(".") || escaped.hasPrefix("'") { escaped = "\\&" + escaped }
        return escaped
    }
}
