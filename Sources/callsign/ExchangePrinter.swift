import ArgumentParser
import Callsign
import Foundation
import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What of an exchange is printed, in HTTPie's letters: `H` the request head, `B` the request
/// body, `h` the response head, `b` the response body (`--print hb`, as HTTPie's `--print hb`;
/// `-p` is `call`'s `--param` here, so only the long form exists).
struct PrintSelection: Hashable, Sendable {
    var requestHead = false
    var requestBody = false
    var responseHead = false
    var responseBody = false

    /// All four: what `-v` shows.
    static let all = PrintSelection(requestHead: true, requestBody: true, responseHead: true, responseBody: true)
    /// The response body only: the default.
    static let body = PrintSelection(responseBody: true)
    /// The response head and body: `-i`.
    static let response = PrintSelection(responseHead: true, responseBody: true)

    init(requestHead: Bool = false, requestBody: Bool = false, responseHead: Bool = false, responseBody: Bool = false) {
        (self.requestHead, self.requestBody, self.responseHead, self.responseBody) = (requestHead, requestBody, responseHead, responseBody)
    }

    /// The letters of `--print`: any of `H`, `B`, `h`, `b`, at least one, in any order.
    init(letters: String) throws {
        guard !letters.isEmpty, letters.count <= 16 else { throw ValidationError(localized("--print takes letters: H request head, B request body, h response head, b response body")) }
        for letter in letters {
            switch letter {
            case "H": requestHead = true
            case "B": requestBody = true
            case "h": responseHead = true
            case "b": responseBody = true
            default:
                throw ValidationError(localized("--print: \(String(letter)) is not one of H (request head), B (request body), h (response head), b (response body)"))
            }
        }
    }

    /// Whether a part of the request is printed.
    var printsRequest: Bool { requestHead || requestBody }
}

/// Prints each request as it leaves — every attempt and redirect hop, exactly as sent, secrets
/// masked as everywhere Callsign shows a request (``Redaction``) — and, on standard error, each
/// response head as it arrives. A wire middleware: it sees the head after the authentication
/// stage added credentials and the signing stage signed, so what it prints is what goes out.
///
/// On standard output (`--print H`, `--print B`) the head reads as HTTPie prints it; on standard
/// error (`-v`) every line starts with `> ` (sent) or `< ` (received), as curl prints them, so
/// standard output keeps the body alone for a pipe.
struct ExchangePrinter: WireMiddleware {
    enum Destination: Sendable {
        case standardOutput, standardError
    }

    /// The parts to print: the request's, and (on standard error) the response head.
    let parts: PrintSelection
    let destination: Destination
    /// The head's colours, on a terminal.
    let colors: HeadColors?

    /// The most of a request body printed; past it, a note of the rest's size.
    static let bodyLimit = 1024 * 1024

    func intercept(_ request: WireRequest, context: MiddlewareContext, next: WireNext) async throws -> TransportResponse {
        await printRequest(request, redaction: context.redaction)
        let answer = try await next(request)
        if destination == .standardError, parts.responseHead {
            let fields = answer.head.headerFields.map { (name: $0.name.rawName, value: context.redaction.redact(header: $0.name.rawName, value: $0.value)) }
            let start = ResponsePrinter.statusLine(version: answer.httpVersion, status: answer.head.status)
            for line in ResponsePrinter.headLines(start: start, fields: fields, colors: colors, prefix: "< ") { Terminal.error(line) }
        }
        return answer
    }

    /// Prints the request's head and body as `parts` says.
    func printRequest(_ request: WireRequest, redaction: Redaction) async {
        let prefix = destination == .standardError ? "> " : ""
        if parts.requestHead {
            for line in ResponsePrinter.headLines(start: Self.requestLine(request, redaction: redaction), fields: Self.fields(request, redaction: redaction), colors: colors, prefix: prefix) {
                write(line)
            }
        }
        if parts.requestBody, let body = request.body {
            let type = request.head.headerFields[.contentType]
            await printBody(body, contentType: type, redaction: redaction, prefix: prefix)
        }
    }

    /// `GET /path?query`: the target as sent, secret query values masked. The protocol version is
    /// known only once the server answers, so the line does not guess one.
    static func requestLine(_ request: WireRequest, redaction: Redaction) -> String {
        var target = request.head.path ?? "/"
        if let url = request.url, let shown = URLComponents(string: redaction.redact(url: url.absoluteString)) {
            target = (shown.percentEncodedPath.isEmpty ? "/" : shown.percentEncodedPath) + (shown.percentEncodedQuery.map { "?" + $0 } ?? "")
        }
        return "\(request.head.method.rawValue) \(target)"
    }

    /// `Host` first (HTTP/2's `:authority`, HTTP/1.1's `Host`), then the fields as sent, secret values masked.
    static func fields(_ request: WireRequest, redaction: Redaction) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        if let authority = request.head.authority { fields.append(("Host", authority)) }
        for field in request.head.headerFields {
            fields.append((field.name.rawName, redaction.redact(header: field.name.rawName, value: field.value)))
        }
        return fields
    }

    /// The body as text, secret JSON and form fields masked; a body that is not text, or is
    /// streamed (read once, or larger than ``bodyLimit``), is named by its size, never read here.
    private func printBody(_ body: TransportBody, contentType: String?, redaction: Redaction, prefix: String) async {
        var data = body.inMemoryData
        if data == nil, body.isReplayable, let count = body.count, count <= Self.bodyLimit {
            data = try? await body.collect()
        }
        guard let data else {
            let size = body.count.map { ByteCount.text(Int64($0)) } ?? localized("unknown size")
            write(StyledLine(prefix + localized("[streamed body (\(size)) not shown]")))
            return
        }
        let shown = redaction.redact(body: data.prefix(Self.bodyLimit), contentType: contentType)
        switch destination {
        case .standardOutput:
            var bytes = shown
            if ResponsePrinter.isTerminal(STDOUT_FILENO) {
                switch TerminalText.body(shown) {
                case .text(let safe): bytes = safe
                case .binary(let count):
                    Terminal.out(localized("[binary body of \(count) bytes not shown on a terminal: use a pipe]"))
                    Terminal.out("")
                    return
                }
            }
            Terminal.write(bytes)
            Terminal.write(Data((bytes.last == UInt8(ascii: "\n") ? "\n" : "\n\n").utf8))
        case .standardError:
            switch TerminalText.body(shown) {
            case .text(let safe):
                var lines = String(decoding: safe, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
                if lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
                for line in lines {
                    Terminal.error(prefix + line)
                }
            case .binary(let count):
                Terminal.error(prefix + localized("[binary body of \(count) bytes not shown]"))
            }
        }
        if data.count > Self.bodyLimit {
            write(StyledLine(prefix + localized("[\(data.count - Self.bodyLimit) more bytes not shown]")))
        }
    }

    private func write(_ line: StyledLine) {
        switch destination {
        case .standardOutput: Terminal.out(line)
        case .standardError: Terminal.error(line)
        }
    }
}

extension OutputOptions {
    /// The colours of HTTP heads written to `descriptor`, when it is coloured (``usesColor(on:)``).
    func headColors(on descriptor: Int32) -> HeadColors? {
        usesColor(on: descriptor) ? .standard : nil
    }
}

/// `--dry-run` (HTTPie's `--offline`): the last wire middleware a request meets. It stops the
/// request once it is complete — credentials added, signed, printed by the ``ExchangePrinter``
/// above it — so the one pipeline builds exactly what it would send, and nothing is sent.
struct DryRun: WireMiddleware {
    /// What the stop carries, so the command tells it from a real cancellation.
    struct Stopped: Error {}

    func intercept(_ request: WireRequest, context: MiddlewareContext, next: WireNext) async throws -> TransportResponse {
        // Cancelled, so that no stage retries it, queues it or counts it against the origin.
        throw cliError(.cancelled, "dry run: the request was printed and not sent", underlyingError: Stopped())
    }

    /// Builds `request` through `client`'s pipeline and stops it before it is sent.
    static func run(_ request: Request, client: APIClient) async throws {
        do {
            _ = try await client.send(request)
        } catch where error.underlyingError is Stopped {
            return
        }
        // Only a stage that answers without the network (a mock) gets here: nothing was sent either way.
    }
}
