import ArgumentParser
import Callsign
import CallsignOpenAPI
import Foundation

/// Every option that shapes the client a command makes — credentials, time limits, retry and
/// its waits, proxy, TLS and redirects — declared, checked and applied in one place, so
/// `callsign call`, `get`/`post`/…, `download` and `queue replay` read each one the same way.
///
/// Each option is checked once, while the command line is read (``validate()``: a bad value
/// exits 64 with the same sentence from every command), and applied by two functions: the
/// client's part by ``configure(_:definitions:explicit:)``, the call's own part (its time
/// limits and attempts) by ``limit(_:configuration:says:)``.
///
/// The time limits are the call's own (``CallOptions/timeout``, ``CallOptions/deadline``)
/// rather than the client's: the client's per-attempt limit does not cover a body written to a
/// file, and `callsign download --timeout 5` means what `callsign get --timeout 5` means.
struct ClientOptions: ParsableArguments, ConnectionOptions {
    // The groups sit one level below the command's own (a debug build checks every level of
    // nested groups again for each level above it: each level deeper multiplies the time to read
    // a command line).
    @OptionGroup var credentials: CredentialOptions
    @OptionGroup var proxy: ProxyOptions
    @OptionGroup var tls: TLSOptions

    @Option(help: .localized("Time limit in seconds for one attempt, the whole body included. Past 60 s it also lets the server be silent that long (the idle limit)."))
    var timeout: Double?

    @Option(help: .localized("Attempts in all for a failing idempotent call (1 = no retry). Default: the definitions' policy, else 3."))
    var retry: Int?

    @Option(help: .localized("One time limit in seconds for the whole call, retries included."))
    var deadline: Double?

    @OptionGroup var retryWait: RetryWaitOption
    @OptionGroup var redirects: RedirectOptions

    /// The longest `--timeout` or `--deadline`: a day. Past it a limit protects nothing, and the
    /// bound keeps the milliseconds of ``duration(_:)`` far from `Int64`'s end.
    static let longestLimit = 86_400.0

    func validate() throws {
        // `!(… && …)` refuses NaN too: a comparison with NaN is false.
        if let timeout, !(timeout > 0 && timeout <= Self.longestLimit) {
            throw ValidationError(localized("--timeout takes more than 0 and at most 86400 seconds"))
        }
        if let deadline, !(deadline > 0 && deadline <= Self.longestLimit) {
            throw ValidationError(localized("--deadline takes more than 0 and at most 86400 seconds"))
        }
        if let retry, !(1...100).contains(retry) {
            throw ValidationError(localized("--retry takes 1 to 100 attempts"))
        }
    }

    /// The client's settings from the options: the connection's (``ConnectionOptions``),
    /// redirects, and the idle limit a long `--timeout` allows.
    /// - Parameter explicit: the credentials given on the command line, already resolved for the
    ///   request's origin (``CredentialOptions/authentication(sendingTo:openAPI:)``).
    func configure(_ configuration: inout APIClient.Configuration, definitions: APIDefinitions?, explicit: Authentication?) throws {
        try configureConnection(&configuration, definitions: definitions, explicit: explicit)
        configuration.redirects = redirects.policy()
        if let timeout { configuration.allowSilence(upTo: Self.duration(timeout)) }
    }

    /// The call's own limits and attempts from the options, and the retry waits held to what the
    /// user allows (said on standard error when `says`).
    /// - Returns: the waits, to explain an answer whose `Retry-After` was too long.
    func limit(_ request: inout Request, configuration: inout APIClient.Configuration, says: Bool) -> RetryWaits {
        if let timeout { request.timeout = Self.duration(timeout) }
        if let deadline { request.deadline = Self.duration(deadline) }
        if let retry { request.retry = (request.retry ?? configuration.retry).with { $0.maximumAttempts = retry } }
        let waits = RetryWaits(maximumWait: retryWait.maximumWait, deadline: deadline, says: says)
        waits.apply(to: &request, configuration: &configuration)
        return waits
    }

    /// Seconds as a duration; ``validate()`` bounds them, so the milliseconds fit.
    private static func duration(_ seconds: Double) -> Duration {
        .milliseconds(Int64((min(max(seconds, 0), longestLimit) * 1000).rounded()))
    }
}

/// What every command that reaches a server takes, `callsign queue replay` included: credentials,
/// proxy and TLS. ``ClientOptions`` takes them beside the options of a call made now; `queue
/// replay` takes them alone, since the requests it sends were shaped when they were queued. Both
/// apply them with ``configureConnection(_:definitions:explicit:)``.
protocol ConnectionOptions {
    /// `-u`, `--bearer`, `--api-key` and their kin.
    var credentials: CredentialOptions { get }
    /// `-x`, `--noproxy`, `--proxy-user`, `--proxytunnel`.
    var proxy: ProxyOptions { get }
    /// `--cacert`, `--cert`/`--key`, `--pin`, `--http1.1`.
    var tls: TLSOptions { get }
}

extension ConnectionOptions {
    /// Applies credentials (the command line's, else the definitions' `DEFAULT`), proxy and TLS.
    /// - Parameter explicit: the credentials given on the command line, resolved by the command
    ///   for where they may go.
    func configureConnection(_ configuration: inout APIClient.Configuration, definitions: APIDefinitions?, explicit: Authentication?) throws {
        configuration.authentication = try explicit ?? definitions?.authenticationSource?.authentication()
        configuration.proxy = try proxy.settings()
        configuration.tls = try tls.settings()
    }
}
