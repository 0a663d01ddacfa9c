@testable import Callsign
import CallsignOpenAPI
import CallsignPostgres
import Foundation
import HTTPTypes

/// One fuzz target: gets arbitrary bytes, must neither trap nor hang nor grow without bound.
/// Errors are fine; they are what bad input should produce.
struct FuzzTarget: Sendable {
    let name: String
    let run: @Sendable (Data) -> Void
}

let targets: [FuzzTarget] = [
    // HTTP dates, delta-seconds, Retry-After, the rate-limit fields, Cache-Control and Age,
    // Content-Length/-Range, and the freshness arithmetic that combines them.
    FuzzTarget(name: "http-fields") { data in
        let text = String(decoding: data, as: UTF8.self)
        _ = HTTPDate.parse(text)
        _ = HTTPDate.parse(text, now: Date(timeIntervalSince1970: 1e11))
        if let date = HTTPDate.parse(text) { _ = HTTPDate.format(date) }
        _ = DeltaSeconds.parse(text)
        _ = RetryAfter.parse(text)
        // Rate-limit fields, each line as every spelling: RateLimit, RateLimit-Policy, X-RateLimit-*.
        var rateFields = HTTPFields()
        let rateNames = ["RateLimit", "RateLimit-Policy", "RateLimit-Remaining", "RateLimit-Reset", "X-RateLimit-Remaining", "X-RateLimit-Reset"]
        for (name, line) in zip(rateNames, text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        where HTTPField.isValidValue(line) {
            if let name = HTTPField.Name(name) { rateFields[name] = line }
        }
        let reading = RateLimitFields.read(rateFields)
        precondition(reading.remaining.map { $0 >= 0 } ?? true && reading.reset.map { $0 >= .zero } ?? true)
        if let policy = reading.policy { precondition(policy.count >= 1 && policy.window >= .milliseconds(1)) }
        _ = ContentLength.digits(text)
        _ = ContentRange(text)
        let control = CacheControl(text)
        for name in ["max-age", "s-maxage", "stale-if-error", "stale-while-revalidate", "min-fresh"] {
            _ = control.seconds(name)
            _ = control.isMalformed(name)
        }
        _ = control.maxStale
        // Lines become the stored response's fields: Cache-Control, Date, Expires, Last-Modified, Age.
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var fields = HTTPFields()
        let names: [HTTPField.Name] = [.cacheControl, .date, .expires, .lastModified, .age, .contentLength]
        for (name, value) in zip(names, lines) where HTTPField.isValidValue(value) { fields[name] = value }
        _ = try? ContentLength.parse(fields)
        let entry = CachedResponse(
            url: "http://127.0.0.1/", partition: "", method: "GET", varyingHeaders: [:], status: 200, headers: fields,
            body: Data(), requestTime: Date(timeIntervalSince1970: 1_000_000), responseTime: Date(timeIntervalSince1970: 1_000_001))
        let freshness = Freshness(entry: entry, now: Date(timeIntervalSince1970: 2_000_000), heuristicLimit: .seconds(86_400))
        _ = freshness.satisfies(CacheControl(lines.last), storedControl: CacheControl(fields[.cacheControl]))
    },
    // Definitions files, and property-list response bodies: the first byte picks JSON, YAML or a property list.
    FuzzTarget(name: "definitions") { data in
        guard let first = data.first else { return }
        let format: APIDefinitions.Format = [.json, .yaml, .plist][Int(first) % 3]
        let limits = Limits { $0.maximumDefinitionNodes = 100_000 }
        _ = try? APIDefinitions(data: data.dropFirst(), format: format, limits: limits)
        // The same property-list door reads response bodies (`responseFormat: propertyList`).
        if format == .plist {
            _ = try? PropertyListReader.value(Data(data.dropFirst()), maximumDepth: 512, maximumValues: 100_000, conversion: .decodable)
        }
    },
    // Path templates, parsed and expanded with a parameter for every placeholder.
    FuzzTarget(name: "path-template") { data in
        let text = String(decoding: data, as: UTF8.self)
        guard let template = try? PathTemplate(parsing: text) else { return }
        var parameters: Parameters = [:]
        for name in template.placeholders { parameters[name] = .string(String(text.prefix(8))) }
        var query: Parameters = [:]
        _ = try? template.expand(consuming: &parameters, query: &query)
    },
    // The adaptive envelope reader, on a body as a server would send it.
    FuzzTarget(name: "envelope") { data in
        guard let value = try? JSONValue(parsing: data) else { return }
        _ = EnvelopePolicy.standard.read(value)
        _ = JSONDepth.exceeds(data, limit: 64)
    },
    // gzip and deflate bodies, through the streaming inflater with its limits; the first byte
    // picks the encoding and where the input is split into chunks.
    FuzzTarget(name: "content-decoding") { data in
        guard let first = data.first else { return }
        let encoding = first & 1 == 0 ? "gzip" : "deflate"
        let inflater = Inflater(encoding: encoding, limit: 8 << 20, maximumRatio: 100)
        let body = data.dropFirst()
        let split = body.isEmpty ? 0 : Int(first >> 1) % body.count
        do {
            _ = try inflater.inflate(Data(body.prefix(split)))
            _ = try inflater.inflate(Data(body.dropFirst(split)))
            try inflater.finish()
        } catch {}
    },
    // Proxy URLs, proxy environment variables with NO_PROXY lists (names, addresses, CIDR
    // blocks) and the hosts they are matched against, URLs through the host door, and
    // Accept-Language tags: every line is outside input (an environment,
    // a command line, a platform's locale list).
    FuzzTarget(name: "proxy-settings") { data in
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for line in lines.prefix(8) {
            if let proxy = try? Proxy(url: line) {
                // What is printed does not depend on the password: another one prints the same.
                if let credentials = proxy.credentials {
                    var other = proxy
                    other.credentials?.password = credentials.password + "-other"
                    precondition(other.description == proxy.description, "the description shows the password")
                    var dumped = "", otherDumped = ""
                    dump(proxy, to: &dumped)
                    dump(other, to: &otherDumped)
                    precondition(dumped == otherDumped, "dump shows the password")
                }
                precondition((1...65_535).contains(proxy.port))
            }
        }
        let names = ["http_proxy", "HTTPS_PROXY", "all_proxy", "NO_PROXY"]
        let environment = Dictionary(zip(names, lines), uniquingKeysWith: { first, _ in first })
        if let settings = try? ProxySettings(environment: environment) {
            for host in lines.dropFirst(4).prefix(4) {
                for scheme in ["http", "https"] {
                    _ = settings.proxy(scheme: scheme, host: host, port: host.count % 3 == 0 ? nil : host.utf8.count)
                }
            }
        }
        // The host door: whatever a URL holds, what reaches the wire is a plain ASCII name or a
        // bracketed IPv6 address.
        for line in lines.prefix(8) {
            guard let components = URLComponents(string: line),
                let host = try? HostName.wireForm(of: components, described: line)
            else { continue }
            precondition(!host.isEmpty && host.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "%") && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "@") })
            if host.hasPrefix("[") { precondition(IPAddress(String(host.dropFirst().dropLast()))?.isVersion6 == true) }
        }
        let value = AcceptLanguage(lines).headerValue ?? ""
        precondition(value.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, "Accept-Language must be a valid header value")
    },
    // PEM certificate files, pins and the messages' templates: TLS settings read from files and
    // command lines, and the localized sentences whose values come from servers.
    FuzzTarget(name: "tls-text") { data in
        let text = String(decoding: data, as: UTF8.self)
        if let certificates = try? TLSCertificate.load(pem: text) {
            precondition(!certificates.isEmpty && certificates.count <= PEMBlocks.maximumBlocks)
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if let pins = try? CertificatePins(["h": Array(lines.prefix(4))]) {
            precondition(pins.hosts["h"]?.allSatisfy { Data(base64Encoded: $0)?.count == 32 } ?? true)
        }
        _ = ConnectionOptions.hostAndPort(of: text, defaultPort: 443)
        if let spki = CertificateDER.subjectPublicKeyInfo(of: data) { precondition(spki.count <= data.count) }
        // Templates are Callsign's own; values come from servers and must never be read as placeholders.
        let values = Array(lines.dropFirst().prefix(4))
        let filled = LocalizedMessage.fill("<%@|%@|%@|%@>", with: values)
        precondition(filled == "<" + (values + Array(repeating: "", count: 4 - values.count)).joined(separator: "|") + ">")
        _ = MessageLanguage.choose(fromEnvironment: ["LANG": lines.first ?? "", "LANGUAGE": lines.last ?? ""])
        // A remote address as the system reports it, kept only when it reads as an IP address.
        if let address = IPAddressText.checked(text) {
            precondition(address.utf8.count <= 64 && !address.unicodeScalars.contains { $0.value < 0x21 || $0.value > 0x7E }, "a kept address holds a byte to escape")
        }
        // The bytes as a server's certificate chain (a DER certificate a line): refused by the one
        // trust decision unless a root vouches for it, never a crash.
        let chain = [data] + lines.prefix(3).map { Data($0.utf8) }
        let decided = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var refusal: APIError?
        Task {
            var settings = TLSSettings()
            settings.trustRoots = .only([])
            refusal = await ServerTrust.decide(chain: chain, host: "localhost", settings: settings, system: .notAsked)
            decided.signal()
        }
        decided.wait()
        precondition(refusal != nil, "a chain without a root was trusted")
    },
    // Set-Cookie fields as a hostile server sends them, and the Cookie header built back.
    FuzzTarget(name: "cookies") { data in
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let jar = CookieJar()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for host in ["https://a.example.com/x/y", "http://127.0.0.1:8080/"] {
            guard let url = URL(string: host) else { continue }
            jar.store(setCookie: Array(lines.prefix(64)), from: url, now: now)
            if let header = jar.cookieHeader(for: url, now: now) {
                precondition(HTTPField.isValidValue(header), "the Cookie header must be a valid field value")
            }
        }
        precondition(jar.all(now: now).count <= CookieJar.maximumCookiesPerDomain * 2)
    },
    // OpenAPI documents from outside, in both formats, and requests built from their operations.
    FuzzTarget(name: "openapi") { data in
        // Tight bounds as well as the defaults, so that small inputs reach the checks of $ref
        // chains, expanded depth and size, and cycles (the corpus holds deep and cyclic chains).
        let tight = Limits {
            $0.maximumReferenceDepth = 8
            $0.maximumExpandedNodes = 20_000
            $0.maximumJSONDepth = 48
        }
        // Tolerant loading repairs and leaves out; strict loading lists: both walk every schema.
        for format in [APIDefinitions.Format.yaml, .json] {
            for (limits, strict) in [(Limits.default, false), (tight, false), (tight, true)] {
                guard let operations = try? OpenAPIOperations(data: data, format: format, limits: limits, strict: strict) else { continue }
                for operation in operations.operations.prefix(8) {
                    _ = try? operations.request(operation.name, parameters: ["id": "1", "limit": "x", "tags": ["a"]])
                    // Whatever a cookie parameter's value holds, it never adds a cookie.
                    for parameter in operation.parameters.prefix(4) where parameter.location == .cookie {
                        guard let request = try? operations.request(operation.name, parameters: [parameter.name: "v; injected=1, x\r\n"]),
                            let cookie = request.headers["Cookie"]
                        else { continue }
                        precondition(!cookie.contains(" injected=1"), "a cookie parameter's value added a cookie: \(cookie)")
                    }
                }
            }
        }
    },
    // postgres:// URLs from a command line or a configuration: parsed or refused, and the
    // password, whatever it is, never in the refusal or the redacted form.
    FuzzTarget(name: "postgres-url") { data in
        let text = String(decoding: data, as: UTF8.self)
        let url = "postgres://u:PW-SECRET-9@" + text
        do throws(APIError) {
            _ = try PostgresURL.configuration(url, environment: [:])
        } catch {
            precondition(!error.message.contains("PW-SECRET-9"), "a refusal showed the password")
        }
        _ = try? PostgresURL.configuration(text, environment: ["PGPASSWORD": "x"])
        if URLComponents(string: url)?.password != nil {
            precondition(!PostgresURL.redacted(url).contains("PW-SECRET-9"), "the redacted URL showed the password")
        }
    },
    // Header fields stored by a cache or an outbox (rows are outside data).
    // Through the one field door (FieldReader): never past the count limit, never a trap.
    FuzzTarget(name: "stored-fields") { data in
        if let headers = try? StoredFields.decodeHeaders(data) {
            precondition(headers.fields.count <= Limits.default.maximumHeaderFieldCount)
        }
        guard let fields = try? StoredFields.decode(data) else { return }
        precondition(fields.count <= Limits.default.maximumHeaderFieldCount)
        precondition((try? StoredFields.decode(StoredFields.encode(fields))) == fields, "stored fields do not round-trip")
    },
    // Offline-queue rows (a database is outside data): through the storages' one row door,
    // whole and sendable or quarantined with their id (see QueueRowFuzz.swift).
    FuzzTarget(name: "queue-rows") { data in fuzzQueueRow(data) },
    // Callsign's own JSON reader and writer (bodies, definitions files, command-line items):
    // what it reads is JSON, what it writes reads back as the same value, numbers as written.
    FuzzTarget(name: "json-value") { data in
        guard let value = try? JSONValue(parsing: data) else { return }
        if !data.starts(with: [0xEF, 0xBB, 0xBF]) { precondition(JSONText.isValid(data), "read text the validator refuses") }
        for pretty in [false, true] {
            let written = value.jsonData(prettyPrinted: pretty)
            precondition((try? JSONValue(parsing: written)) == value, "written JSON does not read back as the same value")
        }
    },
    // Server-sent events (text/event-stream bodies): the same events however the bytes are
    // split between chunks, none larger than the limit, the parser never holding more.
    FuzzTarget(name: "event-stream") { data in
        let limits = Limits { $0.maximumEventSize = 4096 }
        func events(splitEvery piece: Int) -> (events: [ServerSentEvent], failed: Bool) {
            var parser = ServerSentEvent.Parser(limits: limits)
            var found: [ServerSentEvent] = []
            var start = data.startIndex
            while start < data.endIndex {
                let end = data.index(start, offsetBy: piece, limitedBy: data.endIndex) ?? data.endIndex
                guard let more = try? parser.feed(data[start..<end]) else { return (found, true) }
                found += more
                start = end
            }
            return (found, false)
        }
        let whole = events(splitEvery: Int.max / 2)
        let piece = 1 + Int(data.first ?? 0) % 7
        let split = events(splitEvery: piece)
        precondition(whole.failed == split.failed, "a split changed whether the stream was refused")
        if !whole.failed { precondition(whole.events == split.events, "a split between chunks changed the events") }
        for event in whole.events {
            precondition(event.data.utf8.count <= 4096, "an event past the limit")
            // Every id can be sent back: a reconnection never fails on what the server put in one.
            if let id = event.id {
                precondition(id.utf8.count <= ServerSentEvent.Parser.maximumIDSize && HTTPField.isValidValue(id), "an id that cannot be a Last-Event-ID")
            }
        }
    },
    // Link header fields (RFC 8288), as pagination follows rel="next": bounded counts, and the
    // same links however much whitespace follows the commas.
    FuzzTarget(name: "link-header") { data in
        let text = String(decoding: data, as: UTF8.self)
        let links = LinkField.parse(text)
        precondition(links.count <= LinkField.maximumLinks, "more links than the bound")
        for link in links {
            precondition(link.relations.count <= LinkField.maximumParameters, "more relations than the bound")
            precondition(link.target.utf8.count <= LinkField.maximumLength, "a target longer than the field")
        }
        _ = LinkField.target("next", in: text, relativeTo: URL(string: "https://api.example.com/v1/items?page=1"))
    },
    // Content-Disposition (RFC 6266, RFC 8187's filename*), as `callsign download` without -o
    // names its file: whatever the field says, the name is plain, visible and at most 255 bytes.
    FuzzTarget(name: "content-disposition") { data in
        let text = String(decoding: data, as: UTF8.self)
        let suggested = ContentDisposition.fileName(in: text)
        if let suggested { _ = ContentDisposition.safeFileName(suggested) }
        for name in [ContentDisposition.downloadName(field: text, url: nil),
                     ContentDisposition.downloadName(field: nil, url: URL(string: "https://example.com/" + text))] {
            precondition(!name.isEmpty && name.utf8.count <= ContentDisposition.maximumNameBytes, "a name out of bounds")
            precondition(!name.unicodeScalars.contains { $0 == "/" || $0 == "\\" }, "a name with a path")
            precondition(name.unicodeScalars.first != ".", "a hidden name")
            precondition(!name.unicodeScalars.contains { $0.properties.generalCategory == .control }, "a control character")
        }
    },
    // HTTP Archive files, as HAR replay reads them.
    FuzzTarget(name: "har") { data in
        _ = try? HARReplay(data: data)
    },
    // The CLI's JSON pretty-printer: it may only change whitespace between tokens, it must print
    // its own output unchanged, and colours must not change what it accepts.
    // (Foundation's parser is no oracle here: it refuses `1E999` as out of range, accepts UTF-16
    // and trailing commas; the printer follows RFC 8259 on UTF-8, checked by the unit tests.)
    FuzzTarget(name: "json-text") { data in
        let pretty = JSONText.prettyPrinted(data, indent: 2, colors: .standard)
        guard let plain = JSONText.prettyPrinted(data) else {
            precondition(pretty == nil, "colours changed whether the text is JSON")
            return
        }
        precondition(JSONText.isValid(data), "printed text the validator refuses")
        precondition(Minified.of(plain) == Minified.of(data), "the printer changed a token")
        precondition(JSONText.prettyPrinted(plain) == plain, "printing is not idempotent")
    },
    // A `--session` file as the command line reads it (callsign/SessionFile.swift, linked in CLI/):
    // any bytes give a session within its bounds, with no value that could split a header field,
    // which reads back once written — or an error.
    FuzzTarget(name: "cli-session") { data in
        guard let file = try? SessionFile.decode(data, path: "session.json") else { return }
        precondition(file.headers.count <= SessionFile.maximumHeaders && file.cookies.count <= SessionFile.maximumCookies, "a session past its bounds")
        // Cookies are judged by the jar once their values are opened: only those it admits are lent.
        let cookies = SessionFile.admitted(file.cookies)
        let values = file.headers.map(\.value) + cookies.map(\.value) + cookies.map(\.name) + [file.authentication?.secret ?? ""]
        precondition(!values.contains { $0.contains("\r") || $0.contains("\n") || $0.contains("\u{0}") }, "a value that could split a field")
        precondition((try? SessionFile.decode(file.encoded(), path: "session.json")) != nil, "a session that does not read back")
        var admittedOnly = file
        admittedOnly.cookies = cookies
        let again = try? SessionFile.decode(admittedOnly.encodedWithinBounds(), path: "session.json")
        // Dates pass through seconds since 1970 and may move by a rounding step: compared without them.
        let identity: ([Cookie]) -> Set<[String]> = { Set($0.map { [$0.name, $0.value, $0.domain, $0.path] }) }
        precondition(again.map { identity(SessionFile.admitted($0.cookies)) == identity(cookies) } ?? false, "admitted cookies that do not round-trip")
    },
    // The default-options file (callsign/ConfigFile.swift, linked in CLI/): only options come out,
    // never a URL or an item, never one the file may not set, within the bounds.
    FuzzTarget(name: "cli-config") { data in
        guard let entries = try? ConfigFile.parse(data, path: "config") else { return }
        precondition(entries.count <= ConfigFile.maximumEntries, "more options than the bound")
        precondition(entries.allSatisfy { $0.option.hasPrefix("-") && $0.option != "--" && !ConfigFile.refused.contains($0.option) }, "a positional or refused argument")
        precondition(entries.allSatisfy { entry in entry.value.map { !$0.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" } } ?? true }, "a control character in a value")
    },
    // curl's -w formats (the command line's WriteOut, linked from Sources/callsign): any format
    // reads, and what a server sent reaches the output escaped.
    FuzzTarget(name: "cli-write-out") { data in
        let format = WriteOut(String(decoding: data, as: UTF8.self))
        precondition(format.unknown.count <= data.count / 3, "more unknown variables than %{} there can be")
        var response = Response(
            request: Request.get("https://h.example/p"), status: .ok, headers: [.contentType: "text/x\u{1B}[2J"], body: Data(data.prefix(64)))
        response.timings.remoteAddress = "127.0.0.1"
        let plain = WriteOut(String(decoding: data.filter { $0 >= 0x20 && $0 != 0x5C }, as: UTF8.self))
        let output = plain.render(response: response, error: nil, total: .milliseconds(12))
        precondition(!output.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" && $0 != "\t" && $0 != "\r" }, "a value printed a control character")
        _ = format.render(response: nil, error: APIError(.transport, "refused\u{7}"), total: .zero)
    },
    // The command line's item parser (-p, -H, HTTPie's items; one argument a line), its -H pre-pass
    // and its terminal sanitizer, compiled from Sources/callsign through the links in CLI/. A
    // sanitized line must hold no control character; a body shown on a terminal, none but LF,
    // TAB and the CR of a CRLF.
    FuzzTarget(name: "cli-items") { data in
        let text = String(decoding: data, as: UTF8.self)
        let arguments = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if let items = try? AdHocItems(parsing: arguments) {
            // Query items go after the path's own query, each pair percent-encoded: a value adds no pair,
            // no space, no control character and no fragment.
            var request = Request.get("https://h.example/p?x=0")
            items.addQuery(to: &request)
            precondition(request.path.hasPrefix("https://h.example/p?x=0"), "the URL before the items changed")
            let added = request.path.dropFirst("https://h.example/p?x=0".count)
            precondition(added.split(separator: "&").count == items.query.count, "an item added or lost a pair")
            precondition(!added.unicodeScalars.contains { $0.value <= 0x20 || $0.value >= 0x7F || $0 == "#" }, "an item left a raw byte")
        }
        _ = try? ParameterArguments.parse(arguments)
        _ = try? ParameterArguments.headers(arguments)
        let (rest, headers) = HeaderOptions.extract(["get"] + arguments)
        precondition(rest.count + headers.count <= arguments.count + 1, "the -H pre-pass invented arguments")
        precondition(!TerminalText.line(text).unicodeScalars.contains(where: TerminalText.escapesInLine), "a control character passed the sanitizer")
        if case .text(let safe) = TerminalText.body(data) {
            let scalars = Array(String(decoding: safe, as: UTF8.self).unicodeScalars)
            let controls: ClosedRange<UInt32> = 0x7F...0x9F
            for (index, scalar) in scalars.enumerated() where (scalar.value < 0x20 || controls.contains(scalar.value)) && scalar != "\n" && scalar != "\t" {
                precondition(scalar == "\r" && index + 1 < scalars.count && scalars[index + 1] == "\n", "a control character passed the body sanitizer")
            }
        }
    },
]

/// JSON text without the whitespace between tokens (strings kept as they are).
enum Minified {
    static func of(_ data: Data) -> [UInt8] {
        var result: [UInt8] = []
        var inString = false
        var escaped = false
        for byte in data {
            if inString {
                result.append(byte)
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
                result.append(byte)
            } else if ![0x20, 0x09, 0x0A, 0x0D].contains(byte) {
                result.append(byte)
            }
        }
        return result
    }
}

/// The target named by `CALLSIGN_FUZZ_TARGET`, looked up once.
let selected: FuzzTarget? = {
    let name = ProcessInfo.processInfo.environment["CALLSIGN_FUZZ_TARGET"] ?? ""
    guard let target = targets.first(where: { $0.name == name }) else {
        let names = targets.map(\.name).joined(separator: ", ")
        FileHandle.standardError.write(Data("set CALLSIGN_FUZZ_TARGET to one of: \(names)\n".utf8))
        exit(64)
    }
    return target
}()

/// libFuzzer's entry point for each input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
    selected?.run(data)
    return 0
}

/// libFuzzer's driver, linked by `-sanitize=fuzzer`.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The program's entry point: SwiftPM names an executable's main `<module>_main`, which
/// replaces libFuzzer's own `main`; it hands over to libFuzzer's driver.
@_cdecl("CallsignFuzz_main")
public func callsignFuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { bytes, size in fuzzTestOneInput(bytes, size) }
}
