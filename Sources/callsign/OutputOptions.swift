import ArgumentParser
import Callsign
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a body is shown: as received, or pretty-printed (and coloured) for a person.
struct OutputOptions: ParsableArguments {
    enum ColorChoice: String, ExpressibleByArgument, CaseIterable {
        case auto, always, never
    }

    @Option(help: .localized("Colours: auto (on a terminal, unless NO_COLOR is set), always or never."))
    var color: ColorChoice = .auto

    @Flag(help: .localized("Pretty-print JSON even when stdout is not a terminal (key order, numbers and escapes unchanged). JSON to re-indent is read whole; any other body is written as it arrives."))
    var pretty = false

    @Flag(help: .localized("Print the body exactly as received even on a terminal (control characters included: only for a server you trust)."))
    var raw = false

    /// Whether JSON bodies are re-indented: on a terminal, unless `--raw`; elsewhere only with `--pretty`.
    var prettyPrints: Bool {
        if raw { return false }
        return pretty || ResponsePrinter.isTerminal(STDOUT_FILENO)
    }

    /// Whether the body goes to a terminal as text for a person: control characters escaped,
    /// binary content not shown (``TerminalText/body(_:)``). `--raw` prints the bytes exactly,
    /// controls included, as `cat` would.
    var showsOnTerminal: Bool {
        !raw && ResponsePrinter.isTerminal(STDOUT_FILENO)
    }

    /// The colours to use, if any: never when the output is not pretty-printed.
    var colors: JSONText.Colors? {
        prettyPrints && usesColor(on: STDOUT_FILENO) ? .standard : nil
    }

    /// Whether what is written to `descriptor` is coloured: with `--color always`, never with
    /// `--color never`, else on a terminal unless `NO_COLOR` is set (https://no-color.org).
    func usesColor(on descriptor: Int32) -> Bool {
        switch color {
        case .always: return true
        case .never: return false
        case .auto:
            let noColor = ProcessInfo.processInfo.environment["NO_COLOR"].map { !$0.isEmpty } ?? false
            return !noColor && ResponsePrinter.isTerminal(descriptor)
        }
    }

    func validate() throws {
        if pretty && raw { throw ValidationError(localized("--pretty and --raw cannot be used together")) }
    }
}

/// The exit statuses scripts can tell apart, modelled on curl's codes and the BSD sysexits.
enum ExitStatus {
    /// The table shown by `callsign --help` and the README.
    static let table = localized("""
        Exit status:
          0   success
          1   any other failure
          7   could not connect: refused, unreachable, or the host name did not resolve
          22  the status is not one the API accepts (curl's --fail; see --no-fail)
          28  a timeout or deadline passed
          35  TLS failed: an untrusted, expired, wrong-host or unpinned certificate,
              or the handshake
          47  too many redirects, or a redirect Callsign refuses
          56  the connection broke after the request was sent
          63  the response is larger than the limit
          64  invalid command-line usage
          65  invalid input: definitions file, parameter, header, unknown API name
          73  download without -o: a file already has the name (see --force)
          74  the offline queue, the cache or a session cannot be read or written
          75  queued offline (--queue-offline): the server could not be reached
          76  the response is not what the API declares: malformed, wrong content
              type or shape, or it does not decode
          130 interrupted (Ctrl-C)
        """)

    /// The status for an error.
    static func code(for error: APIError) -> Int32 {
        switch error.code {
        case .transport: error.requestSent ? 56 : 7
        case .unacceptableStatus, .envelope: 22
        case .timedOut: 28
        case .tls, .certificateUntrusted, .certificateExpired, .certificateHostMismatch, .certificatePinMismatch: 35
        case .redirect: 47
        case .responseTooLarge: 63
        case .invalidDefinition, .invalidRequest, .unknownAPI, .encoding: 65
        case .storage: 74
        case .queuedOffline: 75
        case .invalidResponse, .unacceptableContentType, .decoding: 76
        case .cancelled: 130
        default: 1
        }
    }
}
