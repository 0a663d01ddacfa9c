/// One deadline spent over several calls — a walk of pages, an event stream's connections: it
/// starts with the first call (the request's ``CallOptions/deadline``, else the client's), and
/// each call is given what is left of it as its own deadline.
///
/// ```swift
/// var deadline = WalkDeadline(client.configuration)
/// if let left = deadline.left(for: request) {
///     guard left > .zero else { throw timedOut }   // the deadline has passed
///     request.deadline = left                      // this call gets what is left of it
/// }
/// let response = try await client.send(request)
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

    /// What is left of the walk's deadline for the call `request` makes, the first call starting
    /// it (`.zero` once it has passed); `nil` for a walk without a deadline.
    mutating func left(for request: Request) -> Duration? {
        let now = clock.now
        if end == nil, let deadline = timeouts.deadline(for: request) { end = now + deadline }
        return end.map { Swift.max($0 - now, .zero) }
    }

    /// Whether the deadline passes within `wait` from now (with `.zero`: whether it has passed);
    /// `false` for a walk without one.
    func passes(within wait: Duration = .zero) -> Bool {
        guard let end else { return false }
        return clock.now + wait >= end
    }
}
