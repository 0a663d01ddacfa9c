import Callsign
import Foundation

/// curl's `-w/--write-out`: a format whose `%{variable}`s are filled in from the exchange and
/// written to standard output once it is over — after the body, and also when the call failed
/// (then `%{http_code}` is `000`), as curl does. Scripts that time requests with curl work
/// unchanged:
///
/// ```
/// callsign get URL -w '%{http_code} %{time_connect} %{time_total}\n'
/// ```
///
/// Times are seconds with six decimals, measured from the start of the exchange that brought
/// the answer, as curl's are; `time_total` is the whole call, redirects and retries included. A
/// phase the transport cannot see (name lookup, connect and TLS on AsyncHTTPClient) or that did
/// not happen prints `0.000000`, as curl prints a phase it skipped. `\n`, `\r`, `\t` and `\\`
/// are read as curl reads them, `%%` is a `%`; an unknown variable is named on standard error
/// and left out. Every value that comes from the server is printed with its control characters
/// escaped.
struct WriteOut: Equatable {
    /// The variables, by curl's names.
    enum Variable: String, CaseIterable {
        case httpCode = "http_code"
        case responseCode = "response_code"
        case timeNameLookup = "time_namelookup"
        case timeConnect = "time_connect"
        case timeAppConnect = "time_appconnect"
        case timePreTransfer = "time_pretransfer"
        case timeStartTransfer = "time_starttransfer"
        case timeTotal = "time_total"
        case sizeDownload = "size_download"
        case sizeUpload = "size_upload"
        case speedDownload = "speed_download"
        case remoteIP = "remote_ip"
        case remotePort = "remote_port"
        case numRedirects = "num_redirects"
        case urlEffective = "url_effective"
        case contentType = "content_type"
        case httpVersion = "http_version"
        case method
        case errorMessage = "errormsg"
    }

    enum Piece: Equatable {
        case text(String)
        case variable(Variable)
    }

    let pieces: [Piece]
    /// The variables the format names that do not exist, in the order they appear.
    let unknown: [String]

    /// Reads a format. Nothing in it can fail: what is not a known variable or escape is text.
    init(_ format: String) {
        var pieces: [Piece] = []
        var unknown: [String] = []
        var text = ""
        var rest = format[...]
        while let character = rest.first {
            rest = rest.dropFirst()
            switch character {
            case "\\":
                guard let next = rest.first else {
                    text.append("\\")
                    continue
                }
                switch next {
                case "n": text.append("\n")
                case "r": text.append("\r")
                case "t": text.append("\t")
                case "\\": text.append("\\")
                default: text.append("\\\(next)")
                }
                rest = rest.dropFirst()
            case "%":
                if rest.first == "%" {
                    text.append("%")
                    rest = rest.dropFirst()
                } else if rest.first == "{", let close = rest.firstIndex(of: "}") {
                    let name = String(rest[rest.index(after: rest.startIndex)..<close])
                    rest = rest[rest.index(after: close)...]
                    if let variable = Variable(rawValue: name) {
                        if !text.isEmpty { pieces.append(.text(text)) }
                        text = ""
                        pieces.append(.variable(variable))
                    } else {
                        unknown.append(name)
                    }
                } else {
                    text.append("%")
                }
            default:
                text.append(character)
            }
        }
        if !text.isEmpty { pieces.append(.text(text)) }
        self.pieces = pieces
        self.unknown = unknown
    }

    /// What the format prints for one call: its answer (if one came, also inside a failure), its
    /// failure, and how long it took in all; `downloaded` is the size of a body that was written
    /// out as it arrived (the answer then holds none).
    func render(response: Response?, error: APIError?, total: Duration, downloaded: Int? = nil) -> String {
        let response = response ?? error?.response
        var output = ""
        for piece in pieces {
            switch piece {
            case .text(let text): output += text
            case .variable(let variable): output += value(of: variable, response: response, error: error, total: total, downloaded: downloaded)
            }
        }
        return output
    }

    private func value(of variable: Variable, response: Response?, error: APIError?, total: Duration, downloaded: Int?) -> String {
        let timings = response?.timings ?? PhaseTimings()
        let received = downloaded ?? response?.body.count
        switch variable {
        case .httpCode, .responseCode:
            let code = response?.status.code ?? 0
            return (0...999).contains(code) ? String(format: "%03d", code) : "000"
        case .timeNameLookup: return Self.seconds(timings.nameLookup)
        case .timeConnect: return Self.seconds(timings.connect)
        case .timeAppConnect: return Self.seconds(timings.secureConnect)
        case .timePreTransfer: return Self.seconds(timings.connectionReady)
        case .timeStartTransfer: return Self.seconds(timings.firstByte)
        case .timeTotal: return Self.seconds(total)
        case .sizeDownload: return String(received ?? 0)
        case .sizeUpload: return String(response?.request.body?.content.count ?? 0)
        case .speedDownload:
            // Bytes per second of the whole call, whole, as curl prints it.
            let seconds = Double(total.components.seconds) + Double(total.components.attoseconds) / 1e18
            guard let count = received, seconds > 0 else { return "0" }
            let rate = (Double(count) / seconds).rounded(.down)
            return rate < 9e18 ? String(Int64(rate)) : String(Int64.max)
        case .remoteIP: return TerminalText.line(timings.remoteAddress ?? "")
        case .remotePort: return timings.remotePort.map(String.init) ?? ""
        case .numRedirects: return String(response?.redirects ?? 0)
        case .urlEffective:
            let url = response?.request.url?.absoluteString ?? error?.request?.url?.absoluteString ?? ""
            return TerminalText.line(Redaction.default.redact(url: url))
        case .contentType: return TerminalText.line(response?.headers[.contentType] ?? "")
        case .httpVersion:
            guard let version = response?.httpVersion, version.hasPrefix("HTTP/") else { return "0" }
            return TerminalText.line(String(version.dropFirst(5)))
        case .method: return response?.request.method.rawValue ?? error?.request?.method.rawValue ?? ""
        case .errorMessage: return TerminalText.line(error?.message ?? "")
        }
    }

    /// Seconds with six decimals, as curl prints them; an unknown time is `0.000000`.
    static func seconds(_ duration: Duration?) -> String {
        let (seconds, attoseconds) = (duration ?? .zero).components
        guard seconds >= 0, attoseconds >= 0 else { return "0.000000" }
        let micro = attoseconds / 1_000_000_000_000
        return "\(seconds)." + String(repeating: "0", count: 6 - String(micro).count) + String(micro)
    }
}
