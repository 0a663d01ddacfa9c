extension APIClient.Configuration {
    /// Time limits (``APIClient/Configuration/timeouts``).
    ///
    /// ```swift
    /// configuration.timeouts = .init(attempt: .seconds(10), deadline: .seconds(30))
    /// ```
    public struct Timeouts: Sendable, Hashable {
        /// The time limit for one attempt: sending, waiting, and reading a body into memory.
        /// A request's own ``CallOptions/timeout`` wins. Streams are limited up to their head only;
        /// downloads to a file only by a request's own timeout. Default 60 seconds.
        public var attempt: Duration = .seconds(60)
        /// One time limit for each whole call — attempts, retry waits, redirects and body —
        /// (APE's abort-after). A request's own ``CallOptions/deadline`` wins. Default `nil`: none.
        public var deadline: Duration? = nil
        /// How long any call — a body read into memory, a stream, a download to a file — may go
        /// without a byte from the server: waiting for the head, and between two chunks of the
        /// body (AsyncHTTPClient's read timeout). Past it the call ends with
        /// ``APIError/Code/timedOut``. It holds where the other limits do not reach: a stream's
        /// body, and a download without a timeout or deadline of its own. A stream's body is
        /// idle only while its reader waits for the next chunk. Default 60 seconds; `nil` for none.
        ///
        /// ```swift
        /// configuration.timeouts.idle = .seconds(15)   // a silent server is given up after 15 s
        /// ```
        public var idle: Duration? = .seconds(60)

        /// Creates time limits; the defaults are 60 seconds per attempt, no deadline, and an idle
        /// limit of 60 seconds.
        public init(attempt: Duration = .seconds(60), deadline: Duration? = nil, idle: Duration? = .seconds(60)) {
            self.attempt = attempt
            self.deadline = deadline
            self.idle = idle
        }
    }
}
