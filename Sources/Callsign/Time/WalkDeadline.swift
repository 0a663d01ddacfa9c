/// One deadline spent over several calls — a walk of pages, an event stream's connections: it
/// starts with the first call (the request's ``CallOptions/deadline``, else the client's), and
/// each call is given what is left of it as its own deadline.
///
/// ```swift
/// var deadline = WalkDeadline(client.configuration)
/// guard deadline.limit(&request) else { throw timedOut }   // the deadline has passed
/// let response = try await client.send(request)            // within what is left of it
/// ```
struct WalkDeadline {
    private let clock: any CallClock
    private let timeouts: APIClient.Configuration.Timeouts
    /// When the walk must be over; `nil` until the first call, and for a walk without a deadline.
    private var end: ContinuousClock.Instant?

    /// A walk on the client's clock under its time limits.
    init(_ configuration: APIClient.Configuration) {
        clock = configuration.clock
        timeouts = configuration.timeouts
    }

    /// Gives `request` what is left of the walk's deadline, which its first call starts (none
    /// left: a deadline of zero, which the call then reports); `false` once the deadline has
    /// passed, for a walk that says so in words of its own.
    @discardableResult
    mutating func limit(_ request: inout Request) -> Bool {
        let now = clock.now
        if end == nil, let deadline = timeouts.deadline(for: request) { end = now + deadline }
        guard let end else { return true }
        request.deadline = Swift.max(end - now, .zero)
        return now < end
    }

    /// Whether the deadline passes within `wait` from now (with `.zero`: whether it has passed);
    /// `false` for a walk without one.
    func passes(within wait: Duration = .zero) -> Bool {
        guard let end else { return false }
        return clock.now + wait >= end
    }
}
