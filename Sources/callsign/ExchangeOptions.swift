import ArgumentParser
import Callsign
import CallsignOpenAPI
import CallsignPostgres
import CallsignSQLite
import Foundation
import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `-x/--proxy`, `--noproxy`, `--proxy-user` and `--proxytunnel`, named as curl names them;
/// without them the environment's `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` apply.
/// As in curl, plain `http://` goes to the proxy in absolute form and `https://` through a
/// `CONNECT` tunnel; `--proxytunnel` tunnels both.
struct ProxyOptions: ParsableArguments {
    @Option(name: [.customShort("x"), .customLong("proxy")], help: .localized("Go through this HTTP proxy: http://[USER:PASSWORD@]HOST[:PORT]. Default: $HTTPS_PROXY / $HTTP_PROXY / $ALL_PROXY, as curl reads them."))
    var proxy: String?

    @Option(name: .customLong("noproxy"), help: .localized("Hosts to reach directly, comma-separated ('*' for all). Default: $NO_PROXY."))
    var noProxy: String?

    @Option(name: .customLong("proxy-user"), help: .localized("The proxy's credentials, USER:PASSWORD (sent to the proxy only)."))
    var proxyUser: String?

    @Flag(name: .customLong("proxytunnel"), help: .localized("Send plain http:// requests through a CONNECT tunnel too, for a proxy that only tunnels (https:// always goes through one)."))
    var proxyTunnel = false

    /// The proxy settings: the options', else the environment's.
    func settings(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ProxySettings? {
        var settings: ProxySettings?
        if let proxy {
            settings = proxy.isEmpty ? nil : ProxySettings(all: try Proxy(url: proxy))
        } else {
            settings = try ProxySettings(environment: environment)
        }
        if let noProxy, settings != nil {
            settings?.bypass = noProxy.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        if let proxyUser {
            guard let colon = proxyUser.firstIndex(of: ":") else { throw ValidationError(localized("--proxy-user takes USER:PASSWORD")) }
            guard settings != nil else { throw ValidationError(localized("--proxy-user needs a proxy: give --proxy or set HTTPS_PROXY")) }
            let credentials = Proxy.Credentials(
                username: String(proxyUser[..<colon]), password: String(proxyUser[proxyUser.index(after: colon)...]))
            settings?.http?.credentials = credentials
            settings?.https?.credentials = credentials
        }
        if proxyTunnel {
            guard settings != nil else { throw ValidationError(localized("--proxytunnel needs a proxy: give --proxy or set HTTP_PROXY")) }
            settings?.http?.alwaysTunnels = true
            settings?.https?.alwaysTunnels = true
        }
        return settings
    }
}

/// The options of one exchange — the client's (``ClientOptions``: credentials, retry and time
/// limits, proxy, TLS, redirects), body, cache, offline queue, mocks, recording and output — shared by `callsign call` and the ad-hoc method
/// commands (`callsign get URL`, …), so both take the same one path through the client.
struct ExchangeOptions: ParsableArguments {
    /// What a status the API does not accept does, as in curl.
    enum FailMode: String, EnumerableFlag {
        case fail, failWithBody, noFail

        static func help(for value: FailMode) -> ArgumentHelp? {
            switch value {
            case .fail: .localized("On a status the API does not accept, print nothing and exit 22.")
            case .failWithBody: .localized("On a status the API does not accept, print the body and exit 22 (the default).")
            case .noFail: .localized("Print any answer and exit 0, whatever its status.")
            }
        }
    }

    @OptionGroup var headers: HeaderOption

    @OptionGroup var clientOptions: ClientOptions

    @Option(help: .localized("The request body: @FILE streams a file from disk, @- streams standard input; anything else is sent as text."))
    var body: String?

    @Option(help: .localized("A JSON body, sent exactly as written (Content-Type: application/json)."))
    var json: String?

    @Option(name: [.customShort("X"), .customLong("method")], help: .localized("The HTTP method, instead of the command's or the definition's."))
    var method: String?

    @Option(name: [.customShort("F"), .customLong("form")], help: .localized("A multipart form field: name=value, or name=@FILE to upload a file (streamed). Repeatable."))
    var form: [String] = []

    @Option(name: [.short, .long], help: .localized("Write the body to this file instead of standard output (exactly as received)."))
    var output: String?

    @Flag(name: [.short, .long], help: .localized("No notes on standard error beyond the one line of an error."))
    var quiet = false

    @Flag(name: [.short, .long], help: .localized("Show all four parts on stderr as curl -v does: each attempt's request head and body (> lines), response head (< lines), status and the wait before the next; stdout keeps the body."))
    var verbose = false

    @Option(help: .localized("Record the exchange to this HAR file (secrets redacted)."))
    var har: String?

    @Option(
        name: [.customShort("w"), .customLong("write-out")],
        help: .localized("Once the call is over, print this on stdout as curl -w does: %{http_code}, %{time_namelookup}, %{time_connect}, %{time_appconnect}, %{time_pretransfer}, %{time_starttransfer}, %{time_total}, %{size_download}, %{size_upload}, %{speed_download}, %{remote_ip}, %{remote_port}, %{num_redirects}, %{url_effective}, %{content_type}, %{http_version}, %{method}, %{errormsg}; \\n is a line feed.", valueName: "format"))
    var writeOut: String?

    @Option(
        name: .customLong("secret-name"),
        help: .localized("A header, query parameter or body field whose value is secret, beside the built-in rule (any name containing token, key, secret, auth, password, passwd, session, signature, credential or cookie): masked in output and HAR files, part of the cache's partition, never queued. Repeatable."))
    var secretNames: [String] = []

    @Option(help: .localized("Answer from mocks instead of the network: a HAR file to replay, or a folder of fixtures (a definition's `mock:` file, else <API name>.json)."))
    var mock: String?

    @Flag(name: [.short, .long], help: .localized("Print the status line and headers before the body (--print hb)."))
    var include = false

    @Option(
        name: .customLong("print"),
        help: .localized("What to print on stdout, in HTTPie's letters: H request head, B request body, h response head, b response body (HTTPie's -p; here -p is --param). Default: b; hb with -i or head.", valueName: "what"))
    var printed: String?

    @Flag var failMode: FailMode = .failWithBody

    @Flag(
        name: [.customShort("S"), .long],
        help: .localized(
            "Read the answer as server-sent events (text/event-stream) and print each event's data as it arrives, one event a line; a GET reconnects with Last-Event-ID when the stream breaks. An operation that only answers with events does this by itself."
        ))
    var stream = false

    @OptionGroup var display: OutputOptions

    @Option(help: .localized("Use the HTTP cache stored in this folder (created if needed), or shared in PostgreSQL (a postgres:// URL); --verbose says whether the answer was a fresh hit, revalidated (304) or from the network."))
    var cache: String?

    @Flag(name: .customLong("queue-offline"), help: .localized("If the server cannot be reached, queue the request (exit status 75) for `callsign queue replay`."))
    var queueOffline = false

    @Flag(name: .customLong("dry-run"), help: .localized("Print the request exactly as it would be sent (--print HB unless --print names request parts; secrets masked) and send nothing."))
    var dryRun = false

    @Flag(name: .customLong("offline"), help: .localized("HTTPie's --offline: the same as --dry-run, nothing is sent. (To queue a request when the server cannot be reached: --queue-offline.)"))
    var httpieOffline = false

    @OptionGroup var queue: QueueOption

    @OptionGroup var input: InputOptions
    @OptionGroup var sessions: SessionOption
    @OptionGroup var config: ConfigFileOption

    /// Sends `request` with a client made from these options and prints the answer. Credentials
    /// given on the command line go to the request's own origin too: naming both is asking for it.
    /// - Parameter openAPI: the document the request's operation comes from: its exploded query
    ///   arrays repeat their key (`id=1&id=2`), and its security schemes send `--api-key`.
    /// - Parameter typedOrigins: origins typed on the command line besides the request's own
    ///   (`--base-url`): credentials given on the command line may go there too.
    /// - Parameter files: file items (`name@FILE`, with `-f`), sent as a multipart form.
    /// - Parameter itemHeaders: the headers given as items (`Name:value`), which a session keeps like `-H`.
    func perform(
        _ request: Request, definitions: APIDefinitions, openAPI: OpenAPIOperations? = nil, typedOrigins: [URL] = [],
        files: [(name: String, path: String)] = [], itemHeaders: Headers = Headers()
    ) async throws {
        var request = request
        var explicit = try clientOptions.credentials.authentication(sendingTo: request.path, openAPI: openAPI)
        explicit?.additionalOrigins += typedOrigins
        var configuration = try makeConfiguration(definitions: definitions, explicit: explicit)
        if openAPI != nil { configuration.encoders.queryEncoder.arrayStyle = .repeatedKey }
        let givenHeaders = try headers.given()
        request.headers = request.headers.adding(commandLine: givenHeaders, besideItems: itemHeaders)
        if explicit != nil { request.needsAuthorization = true }
        // A session lends its headers, credentials and cookies, through the client's own stages.
        let session = try sessions.open(
            for: SessionPlace.target(of: request, definitions: definitions), credentials: clientOptions.credentials,
            headers: Headers(itemHeaders.fields + givenHeaders.fields))
        let jar = session?.lend(to: &request, configuration: &configuration, credentialsGiven: explicit != nil, quiet: quiet)
        try adjust(&request)
        let waits = clientOptions.limit(&request, configuration: &configuration, says: !quiet && !verbose)
        try await input.shape(&request, files: files, multipartFields: form, explicitBody: body != nil || json != nil || !form.isEmpty)
        if stream, request.headers["Accept"] == nil { request.headers["Accept"] = "text/event-stream" }
        if sendsNothing {
            if httpieOffline, !dryRun, !quiet {
                Terminal.error(localized("callsign: --offline prints the request and sends nothing, as in HTTPie; to queue a request when the server cannot be reached, use --queue-offline"))
            }
            try await DryRun.run(request, client: APIClient(definitions: definitions, configuration: configuration))
            return
        }
        if stream || EventPrinter.asksForEvents(request) {
            guard !queueOffline, cache == nil else { throw ValidationError(localized("an event stream is neither cached nor queued: leave out --queue-offline and --cache")) }
            let client = APIClient(definitions: definitions, configuration: configuration)
            try await EventPrinter(verbose: verbose, output: display).show(client.events(request))
            return
        }
        if try flowsBody() {
            try await flow(request, client: APIClient(definitions: definitions, configuration: configuration), limit: configuration.limits.maximumResponseBodySize, session: session, jar: jar, waits: waits)
            return
        }
        let started = ContinuousClock.now
        let response: Response
        do {
            response = try await send(request, definitions: definitions, configuration: configuration, session: session, jar: jar)
        } catch {
            writeOut(response: nil, error: error, since: started)
            throw error
        }
        waits.explain(response, quiet: quiet)
        if verbose, cache != nil { Terminal.error(localized("cache: \(CacheReport.describe(response.source))")) }
        if try selection().responseHead { ResponsePrinter.printHead(response, colors: display.headColors(on: STDOUT_FILENO)) }
        do {
            try show(response)
        } catch {
            writeOut(response: response, error: error, since: started)
            throw error
        }
        writeOut(response: response, error: nil, since: started)
    }

    /// `-w`: the format filled in from the call, on standard output; `downloaded` is the size of
    /// a body that went to the output as it arrived.
    func writeOut(response: Response?, error: (any Error)?, since started: ContinuousClock.Instant, downloaded: Int? = nil) {
        guard let writeOut else { return }
        let format = WriteOut(writeOut)
        for name in format.unknown { Terminal.error(localized("callsign: unknown --write-out variable: '\(name)'")) }
        let text = format.render(response: response, error: error as? APIError, total: started.duration(to: .now), downloaded: downloaded)
        Terminal.write(Data(text.utf8))
    }

    /// Sends the request through a client made for it, with the queue and the cache the options
    /// name; a session keeps the cookies the answer set.
    private func send(
        _ request: Request, definitions: APIDefinitions, configuration: APIClient.Configuration, session: ActiveSession?, jar: CookieJar?
    ) async throws -> Response {
        var configuration = configuration
        return try await withStorages { queueStorage, cacheStorage in
            if let queueStorage { configuration.offline.queue = queueStorage }
            // One call, then the process ends: the queue is drained by `callsign queue replay` or
            // `callsign queue watch`, never behind this call's back.
            configuration.offline.drain = .manual
            if let cacheStorage { configuration.cache = HTTPCache(storage: cacheStorage) }
            let client = APIClient(definitions: definitions, configuration: configuration)
            do {
                let response = try await client.send(request)
                if let session, let jar { try await session.save(cookies: jar) }
                return response
            } catch let error as APIError {
                guard error.code == .queuedOffline else { throw error }
                Terminal.error("callsign: \(error.message)")
                if !quiet { Terminal.error(localized("callsign: queue: \(queue.location); send it with: callsign queue replay")) }
                throw ExitCode(75)
            }
        }
    }

    /// Runs `body` with the offline queue (`--queue-offline`) and the cache (`--cache`) open; a
    /// PostgreSQL pool runs for as long as `body` does.
    private func withStorages<T: Sendable>(
        _ body: (_ queue: (any OfflineQueueStorage)?, _ cache: (any HTTPCacheStorage)?) async throws -> T
    ) async throws -> T {
        try await withCacheStorage { cacheStorage in
            guard queueOffline else { return try await body(nil, cacheStorage) }
            return try await queue.withStorage { try await body($0, cacheStorage) }
        }
    }

    /// Runs `body` with the `--cache` storage open, if any.
    private func withCacheStorage<T: Sendable>(_ body: ((any HTTPCacheStorage)?) async throws -> T) async throws -> T {
        guard let cache else { return try await body(nil) }
        guard PostgresURL.isPostgres(cache) else { return try await body(SQLiteCacheStorage(directory: URL(fileURLWithPath: cache))) }
        let key = try CacheKey.shared()
        return try await PostgresArgument.withClient(cache) { client in try await body(PostgresCacheStorage(client: client, partitionKey: key)) }
    }

    /// The client's settings from the options.
    private func makeConfiguration(definitions: APIDefinitions, explicit: Authentication?) throws -> APIClient.Configuration {
        var configuration = APIClient.Configuration()
        try clientOptions.configure(&configuration, definitions: definitions, explicit: explicit)
        configuration.observability.redaction.addSecretNames(secretNames)
        let selection = sendsNothing ? try dryRunSelection() : try selection()
        if selection.printsRequest {
            configuration.insert(
                ExchangePrinter(parts: selection, destination: .standardOutput, colors: display.headColors(on: STDOUT_FILENO)), after: .signing)
        }
        // Below the printer and above the mocks and the transport: the request is complete —
        // credentials added, signed — and goes no further.
        if sendsNothing { configuration.insert(DryRun(), after: .signing) }
        if verbose {
            AttemptPrinter.install(in: &configuration)
            configuration.insert(ExchangePrinter(parts: .all, destination: .standardError, colors: display.headColors(on: STDERR_FILENO)), after: .signing)
        }
        if let har { configuration.observability.recorder = HARRecorder(fileURL: URL(fileURLWithPath: har)) }
        if let mock { configuration.mocks = try MockArgument.mocks(mock, definitions: definitions) }
        return configuration
    }

    /// The request as the options change it: method, offline store, redirects accepted, body.
    private func adjust(_ request: inout Request) throws {
        if let method {
            guard let parsed = HTTPRequest.Method(method.uppercased()) else { throw ValidationError(localized("-X: \(method) is not an HTTP method")) }
            request.method = parsed
        }
        if queueOffline { request.storePolicy = .offline }
        clientOptions.redirects.accept(in: &request)
        if let explicitBody = try BodyArguments.body(body, json: json, form: form) { request.body = explicitBody }
    }

    func validate() throws {
        _ = try selection()
        if sendsNothing, queueOffline {
            throw ValidationError(localized("a dry run sends nothing, so nothing is queued: leave out --queue-offline"))
        }
        if sendsNothing, cache != nil {
            throw ValidationError(localized("a dry run shows the request, not an answer from the cache: leave out --cache"))
        }
    }

    /// `--dry-run`, or HTTPie's `--offline`: the request is printed and nothing is sent.
    var sendsNothing: Bool { dryRun || httpieOffline }

    /// What a dry run prints: the request parts `--print` names, else the head and the body.
    func dryRunSelection() throws -> PrintSelection {
        let chosen = try selection()
        return chosen.printsRequest && printed != nil ? chosen : PrintSelection(requestHead: true, requestBody: true)
    }

    /// What stdout shows: `--print`'s letters, else the head and body with `-i`, else the body.
    func selection() throws -> PrintSelection {
        if let printed { return try PrintSelection(letters: printed) }
        return include ? .response : .body
    }

    /// The body to `--output`, exactly as received, or to standard output when `--print` asks for it.
    private func emit(_ response: Response) throws(APIError) {
        guard let output else {
            if (try? selection())?.responseBody ?? true { ResponsePrinter.printBody(response, output: display) }
            return
        }
        // The one writer: a device or FIFO is written into, a regular file replaced in one
        // rename, a link written through; its errors name the path.
        try FileWriter.write(response.body, to: URL(fileURLWithPath: output))
    }

    /// Prints the body as the validation and `--fail` choices say, and throws what the exit
    /// status reports.
    func show(_ response: Response) throws(APIError) {
        let verdict = verdict(on: response)
        if verdict.printsBody { try emit(response) }
        if let failure = verdict.failure { throw failure }
    }

    /// What the validation and `--fail` choices make of an answer: whether its body is printed,
    /// and the failure the exit status reports.
    func verdict(on response: Response) -> (printsBody: Bool, failure: APIError?) {
        do {
            try response.validate()
            return (true, nil)
        } catch {
            let statusFailure = error.code == .unacceptableStatus || error.code == .envelope
            switch (statusFailure, failMode) {
            case (true, .noFail): return (true, nil)
            case (true, .failWithBody): return (true, error)
            case (true, .fail): return (false, error)
            // Not what the API declares: shown only when the head is asked for (-i, --print h).
            case (false, _): return ((try? selection())?.responseHead ?? include, error)
            }
        }
    }
}

extension APIClient.Configuration {
    /// `--timeout`: a user who gives an attempt longer than the idle limit (60 s) accepts a
    /// server that is silent that long too — one that thinks for two minutes before it answers.
    mutating func allowSilence(upTo limit: Duration?) {
        guard let limit, let idle = timeouts.idle, limit > idle else { return }
        timeouts.idle = limit
    }
}
