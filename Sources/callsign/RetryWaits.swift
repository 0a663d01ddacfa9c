import ArgumentParser
import Callsign
import Foundation
import HTTPTypes
import Synchronization

/// `--retry-max-wait SECONDS`: the longest wait before another attempt that a server may ask
/// for with `Retry-After`, for the commands that retry (`call`, `get`, …, `download`).
struct RetryWaitOption: ParsableArguments {
    @Option(
        name: .customLong("retry-max-wait"),
        help: .localized("The longest wait before another attempt a server may ask for with Retry-After (default 30, or --deadline when given); a longer one ends the retries at once, with the server's answer and a note naming its delay.", valueName: "seconds"))
    var maximumWait: Double?

    func validate() throws {
        if let maximumWait, !(maximumWait >= 0 && maximumWait <= 86_400) {
            throw ValidationError(localized("--retry-max-wait takes 0 to 86400 seconds"))
        }
    }
}

/// What a command does about the waits between attempts: each is said on standard error, and a
/// server cannot make the command wait longer than the user let it.
///
/// The retry policy stays the library's (``RetryPolicy``, one retry loop); this only sets its
/// ``RetryPolicy/maximumRetryAfter`` and listens through the client's ``CallObserver`` seam.
/// The library's default (5 minutes) suits an app that retries in the background; a person who
/// typed `callsign get` at a terminal did not agree to a silent five minutes. So, unasked, a
/// server's `Retry-After` is held to 30 s, the longest back-off Callsign chooses itself
/// (``RetryPolicy/maximumDelay``'s default): a longer one ends the retries at once and the note
/// names the delay (RFC 9110 §10.2.3 lets a client decide not to wait). `--retry-max-wait`
/// sets the limit; a `--deadline` the user gave governs when `--retry-max-wait` is not given —
/// a wait that would end past the deadline fails at once, naming the wait (the retry stage's rule).
struct RetryWaits: Sendable {
    /// The longest `Retry-After` honoured when the user gave neither `--retry-max-wait` nor `--deadline`.
    static let unaskedLimit: Duration = .seconds(30)

    /// The longest `Retry-After` honoured (`nil`: the unasked limit, or the policy's if lower).
    let askedLimit: Duration?
    /// Whether each wait is said on standard error (not with `--quiet`; `--verbose` says it its own way).
    let says: Bool
    /// The retries the client announced, counted to tell "no attempt left" from "too long a wait".
    private let retries = Counter()

    /// - Parameters:
    ///   - maximumWait: `--retry-max-wait`, in seconds (validated).
    ///   - deadline: `--deadline`, in seconds (validated).
    init(maximumWait: Double?, deadline: Double?, says: Bool) {
        askedLimit = (maximumWait ?? deadline).map { .milliseconds(Int64(($0 * 1000).rounded())) }
        self.says = says
    }

    /// Holds the request's retry policy (its own, else the client's) to the limit, and listens
    /// for its retries.
    func apply(to request: inout Request, configuration: inout APIClient.Configuration) {
        let policy = request.retry ?? configuration.retry
        let limit = askedLimit ?? min(policy.maximumRetryAfter, Self.unaskedLimit)
        request.retry = policy.with { $0.maximumRetryAfter = limit }
        let says = says
        let retries = retries
        configuration.observability.observers.append(RetryPrinter { report in
            retries.add()
            guard says else { return }
            let next = report.attempt + 1
            Terminal.error(localized(
                "callsign: attempt \(report.attempt) failed (\(report.outcome)); attempt \(next) of \(policy.maximumAttempts) in \(APIClientDemoFormat.seconds(report.wait))"))
        })
    }

    /// Says why an answer that asked for another attempt came back instead: the server's
    /// `Retry-After` was longer than the limit while attempts were left.
    func explain(_ response: Response, quiet: Bool) {
        guard !quiet, let policy = response.request.retry, policy.retryableStatusCodes.contains(response.status.code),
            retries.value < policy.maximumAttempts - 1,
            response.request.isIdempotent || policy.addsIdempotencyKey || response.request.headers.contains("Idempotency-Key"),
            let field = response.headers[.retryAfter], let asked = RetryAfter.parse(field), asked > policy.maximumRetryAfter
        else { return }
        let seconds = asked.components.seconds + (asked.components.attoseconds > 0 ? 1 : 0)
        Terminal.error(localized(
            "callsign: the server asked to wait \(APIClientDemoFormat.seconds(asked)) before another attempt (Retry-After), longer than the \(APIClientDemoFormat.seconds(policy.maximumRetryAfter)) this command waits; give --retry-max-wait \(seconds) (or a --deadline past it) to wait for it"))
    }

    /// A count shared by the observer and the command.
    private final class Counter: Sendable {
        private let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func add() { count.withLock { $0 += 1 } }
    }
}
