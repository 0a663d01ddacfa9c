import Callsign
import Foundation

/// Prints server-sent events as they arrive: each event's data and a line feed on standard
/// output (made safe on a terminal, byte-exact to a pipe), its type and ID on standard error
/// with `--verbose`.
struct EventPrinter {
    let verbose: Bool
    let output: OutputOptions

    /// Whether the request asks for an event stream and nothing else (`Accept: text/event-stream`).
    static func asksForEvents(_ request: Request) -> Bool {
        request.headers["Accept"].map { Response.mediaType(of: $0[...]) == "text/event-stream" } ?? false
    }

    func show(_ events: ServerSentEvents) async throws(APIError) {
        for try await event in events {
            if verbose {
                // Terminal.error escapes what the server chose (type and ID) like any line.
                let id = event.id.map { localized(", id \($0)") } ?? ""
                Terminal.error(localized("event: \(event.type)\(id)"))
            }
            var data = Data((event.data + "\n").utf8)
            if output.showsOnTerminal {
                switch TerminalText.body(data) {
                case .text(let safe): data = safe
                case .binary(let count):
                    Terminal.out(localized("[binary event of \(count) bytes not shown on a terminal: use a pipe, or --raw]"))
                    continue
                }
            }
            Terminal.write(data)
        }
    }
}
