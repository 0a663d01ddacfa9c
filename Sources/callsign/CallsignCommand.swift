import ArgumentParser
import Callsign

/// `callsign`: call HTTP APIs described in a definitions file, without writing Swift.
@main
struct CallsignCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "callsign",
        abstract: localized("Call HTTP APIs by rules: definitions in, decoded answers out."),
        discussion: localized("""
            Start with `callsign demo`: it runs a demo API on 127.0.0.1 and walks through the features.

            \(ExitStatus.table)
            """),
        version: APIClient.version,
        subcommands: [
            CallCommand.self, MethodCommand<GetMethod>.self, MethodCommand<PostMethod>.self, MethodCommand<PutMethod>.self,
            MethodCommand<PatchMethod>.self, MethodCommand<DeleteMethod>.self, MethodCommand<HeadMethod>.self, DownloadCommand.self, ListCommand.self, DescribeCommand.self, QueueCommand.self, CacheCommand.self, WebSocketCommand.self, DemoCommand.self,
            ManualCommand.self,
        ]
    )

    /// Reads the command line without its `-H` options, which ``HeaderOptions`` took out first
    /// (thousands of them cost linear time, not ArgumentParser's quadratic time), after the
    /// per-user default options (``DefaultOptions``).
    static func main() async {
        let arguments: [String]
        do {
            arguments = try DefaultOptions.apply(to: HeaderOptions.process.rest)
        } catch {
            Terminal.error("callsign: \(error.message)")
            Self.exit(withError: ExitCode(64))
        }
        await main(arguments)
    }
}
