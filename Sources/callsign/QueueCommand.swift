import ArgumentParser
import Callsign
import CallsignPostgres
import CallsignSQLite
import Foundation

/// `--queue FILE|postgres://…`: the offline queue, by default a SQLite file in the per-user data folder.
struct QueueOption: ParsableArguments {
    @Option(
        name: .customLong("queue"),
        help: .localized("The offline queue: a SQLite file, or a postgres:// URL (password from the URL, PGPASSWORD or ?passwordFile=). Default: offline-queue.sqlite in the per-user data folder."))
    var path: String?

    /// Where the queue is, for people: the file's path, or the URL without its password.
    var location: String {
        guard let path else { return SQLiteOfflineQueue.defaultURL.path }
        return PostgresURL.isPostgres(path) ? PostgresURL.redacted(path) : path
    }

    /// Runs `body` with the queue open: a PostgreSQL pool runs for as long as `body` does.
    func withStorage<T: Sendable>(_ body: (any OfflineQueueStorage) async throws -> T) async throws -> T {
        guard let path, PostgresURL.isPostgres(path) else {
            return try await body(SQLiteOfflineQueue(url: path.map { URL(fileURLWithPath: $0) } ?? SQLiteOfflineQueue.defaultURL))
        }
        return try await PostgresArgument.withClient(path) { client in try await body(PostgresOfflineQueue(client: client)) }
    }
}

/// Words for ``ResponseSource`` in `--verbose` output.
enum CacheReport {
    static func describe(_ source: ResponseSource) -> String {
        switch source {
        case .cache: localized("fresh hit from the cache, no request sent")
        case .revalidated: localized("revalidated: the server said 304 Not Modified")
        case .staleCache: localized("stale copy from the cache (the server could not be reached)")
        case .staleWhileRevalidating: localized("stale copy from the cache, within stale-while-revalidate; revalidated in the background")
        default: localized("from the network")
        }
    }
}

struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: localized("List, replay, retry or drop requests queued by `callsign call --queue-offline`."),
        subcommands: [
            QueueListCommand.self, QueueReplayCommand.self, QueueWatchCommand.self, QueueRetryCommand.self, QueueDropCommand.self, QueueMigrateCommand.self,
        ],
        defaultSubcommand: QueueListCommand.self
    )
}

struct QueueListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: localized("List queued requests, oldest first."))

    @OptionGroup var queue: QueueOption
    @OptionGroup var config: ConfigFileOption

    @Flag(help: .localized("List the dead-letter list (requests that failed permanently) instead."))
    var dead = false

    func run() async throws {
        try await reportingErrors {
            let entries = try await queue.withStorage { storage in
                try await APIClient(configuration: .init { $0.offline.queue = storage; $0.offline.drain = .manual }).queuedRequests(dead ? .deadLetter : .pending)
            }
            if entries.isEmpty {
                Terminal.out(localized(dead ? "The dead-letter list is empty." : "The queue is empty."))
                return
            }
            // Every line goes through Terminal.out, which escapes control characters: a row's URL,
            // names, last error and quarantine reason are outside text.
            for entry in entries {
                if let reason = entry.quarantineReason {
                    Terminal.out("#\(entry.id)  " + localized("cannot be read, set aside: \(reason)"))
                    continue
                }
                var line = "#\(entry.id)  \(entry.method) \(Redaction.redact(entry.url))"
                if let apiName = entry.apiName { line += "  [\(apiName)]" }
                line += "  " + localized("queued \(entry.enqueuedAt.formatted(.iso8601))")
                if entry.attempts > 0 { line += "  " + localized("attempts \(entry.attempts)") }
                if let error = entry.lastError { line += "  " + localized("last error: \(error)") }
                Terminal.out(line)
            }
        }
    }
}

/// What `callsign queue replay` and `callsign queue watch` send with: the queue, credentials
/// (through a definitions file only), proxy and TLS.
struct QueueSendingOptions: ParsableArguments, ConnectionOptions {
    @OptionGroup var queue: QueueOption
    @OptionGroup var config: ConfigFileOption
    @OptionGroup var credentials: CredentialOptions
    @OptionGroup var proxy: ProxyOptions
    @OptionGroup var tls: TLSOptions

    @Option(name: [.customShort("D"), .long], help: .localized("A definitions file whose DEFAULT authentication applies to the replayed requests."))
    var definitions: String?

    /// Runs `body` with a client on the queue, its drain set to `drain`.
    func withClient<T: Sendable>(drain: APIClient.Configuration.Offline.DrainPolicy, _ body: (APIClient) async throws -> T) async throws -> T {
        if definitions == nil, credentials.given {
            throw ValidationError(
                localized("--user, --bearer and --api-key need --definitions: without a definitions file no origin is trusted to receive credentials, and every request would be refused"))
        }
        let file = try definitions.map { path throws(APIError) in try DefinitionsArgument.loaded(path, baseURL: nil) }
        let loaded = file?.definitions
        var configuration = APIClient.Configuration()
        try configureConnection(&configuration, definitions: loaded, explicit: credentials.authentication(openAPI: file?.openAPI))
        configuration.offline.drain = drain
        return try await queue.withStorage { [configuration] storage in
            var configuration = configuration
            configuration.offline.queue = storage
            return try await body(APIClient(definitions: loaded ?? APIDefinitions(), configuration: configuration))
        }
    }

    /// One line for a request a replay or the drain tried.
    static func line(for item: OfflineReplayReport.Item) -> String {
        // A row that cannot be read has no method or URL to show: its id and the reason do.
        let target = item.request.quarantineReason == nil
            ? "#\(item.request.id) \(item.request.method) \(Redaction.redact(item.request.url))" : "#\(item.request.id)"
        return switch item.outcome {
        case .sent(let response): localized("sent         \(target) → \(response.status.code)")
        case .deadLettered(let error): localized("dead-letter  \(target): \(error.message)")
        case .keptForLater(let error): localized("kept         \(target): \(error.message)")
        }
    }
}

struct QueueReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: localized("Send queued requests, oldest first; stop at the first that fails for now."),
        discussion: localized("""
            A request leaves the queue only on a 2xx from its own URL; redirects are not followed. A 3xx or a
            401 keeps it queued with a report; another 4xx (not 408 or 429) moves it to the dead-letter list
            (see `callsign queue list --dead` and `callsign queue retry ID`). Credentials are attached now,
            and only to the origins a definitions file names: give --definitions, with --user or --bearer or
            a DEFAULT that names them. Without --definitions no origin is trusted, so --user and --bearer are
            refused.
            Exit status: 0 when the queue is empty afterwards, 1 when requests remain or on an error.
            """)
    )

    @OptionGroup var sending: QueueSendingOptions

    @Option(help: .localized("Seconds a claim on a queued request lasts without renewal (renewed while a send is in flight). Default 300."))
    var lease: Double = 300

    func run() async throws {
        try await reportingErrors {
            guard lease.isFinite, lease >= 0.1, lease <= 86_400 else { throw ValidationError(localized("--lease takes 0.1 to 86400 seconds")) }
            let report = try await sending.withClient(drain: .manual) { client in
                try await client.replay(lease: .milliseconds(Int64((lease * 1000).rounded())))
            }
            for item in report.items { Terminal.out(QueueSendingOptions.line(for: item)) }
            Terminal.out(localized("\(report.sent) sent, \(report.deadLettered) dead-lettered, \(report.remaining) still queued"))
            if report.remaining > 0 { throw ExitCode.failure }
        }
    }
}

struct QueueWatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: localized("Send queued requests as their servers come back, until Ctrl-C."),
        discussion: localized("""
            Watches the queue and sends each request, oldest first, once its server answers: the server is
            probed while requests wait for it (after 1 second, then twice as long each time, at most a minute
            apart), and requests queued meanwhile by other processes are picked up. The same rules as
            `callsign queue replay` decide what leaves the queue, and the same claims keep two watchers (or a
            watcher and a replay) from sending one request twice. Ctrl-C stops it after the request in flight.
            Exit status: 0 when stopped with Ctrl-C, 1 on an error.
            """)
    )

    @OptionGroup var sending: QueueSendingOptions

    func run() async throws {
        try await reportingErrors(interruptIsTheEnd: true) {
            try await sending.withClient(drain: .automatic) { client in
                let events = client.drainEvents
                let waiting = try await client.queuedRequests().count
                Terminal.out(localized("watching \(sending.queue.location): \(waiting) queued; Ctrl-C to stop"))
                for await event in events {
                    switch event {
                    case .item(let item): Terminal.out(QueueSendingOptions.line(for: item))
                    case .waiting(let origin, let retryIn):
                        Terminal.out(localized("waiting      \(origin) does not answer; next try in \(retryIn.components.seconds) s"))
                    case .drained: Terminal.out(localized("nothing to send now; watching"))
                    case .paused, .resumed: continue
                    }
                    try Task.checkCancellation()
                }
            }
        }
    }
}

struct QueueRetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry", abstract: localized("Move a request from the dead-letter list back into the queue, at its place in line."))

    @OptionGroup var target: QueuedRequestOption

    func run() async throws {
        try await target.act(missing: { localized("there is no dead letter #\($0)") }) { client, number throws(APIError) in
            guard try await client.retryDeadLetter(number) else { return nil }
            return localized("#\(number) is back in the queue; `callsign queue replay` sends it.")
        }
    }
}

struct QueueDropCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "drop", abstract: localized("Remove a request from the queue or the dead-letter list."))

    @OptionGroup var target: QueuedRequestOption

    func run() async throws {
        try await target.act(missing: { localized("there is no queued request #\($0)") }) { client, number throws(APIError) in
            try await client.removeQueuedRequest(number) ? localized("Dropped #\(number).") : nil
        }
    }
}

/// One request in a queue, as `retry` and `drop` name it: the queue, and the id as people type
/// it (`12` or `#12`).
struct QueuedRequestOption: ParsableArguments {
    @OptionGroup var queue: QueueOption
    @OptionGroup var config: ConfigFileOption

    @Argument(help: .localized("The request's id, as `callsign queue list` (or `list --dead`) shows it (#12 or 12)."))
    var id: String

    static func parse(_ text: String) throws -> Int64 {
        guard let number = Int64(text.hasPrefix("#") ? String(text.dropFirst()) : text), number > 0 else {
            throw ValidationError(localized("the id is a number such as 12, not \(text)"))
        }
        return number
    }

    /// Runs `action` on the request, printing what it returns; `nil` from the action means there
    /// is no such request (`missing #N`, exit 1).
    func act(
        missing: @escaping @Sendable (Int64) -> String,
        _ action: @escaping @Sendable (APIClient, Int64) async throws(APIError) -> String?
    ) async throws {
        try await reportingErrors {
            let number = try Self.parse(id)
            let done = try await queue.withStorage { storage in
                try await action(APIClient(configuration: .init { $0.offline.queue = storage; $0.offline.drain = .manual }), number)
            }
            guard let done else { throw cliError(.invalidRequest, LocalizedMessage(sentence: missing(number))) }
            Terminal.out(done)
        }
    }
}
