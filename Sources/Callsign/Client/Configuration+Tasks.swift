extension APIClient.Configuration {
    /// How calls run side by side (``APIClient/Configuration/tasks``).
    public struct Tasks: Sendable {
        /// How many calls run at once, client-wide. Default ``ConcurrencyLimit/unlimited``.
        public var concurrency: ConcurrencyLimit = .unlimited
        /// How many calls of one tag run at once. Default none.
        public var tagConcurrency: [String: ConcurrencyLimit] = [:]
        /// What happens when a call starts with the identifier of a running one. Default
        /// ``IdentifierConflict/cancelPrevious``.
        public var identifierConflict: IdentifierConflict = .cancelPrevious
        /// Whether identical in-flight GET/HEAD requests share one transport request. Default `false`.
        public var deduplicatesRequests: Bool = false
        /// Whether the tasks the client starts itself — ``APIClient/start(_:)``,
        /// ``APIClient/request(_:configure:)-(String,_)`` and calls shared by identifier, group or
        /// de-duplication — run on the transport's ``Transport/preferredTaskExecutor``.
        /// Default `false`: your code (middlewares, decoders, callbacks) never runs on an event
        /// loop unless you opt in.
        ///
        /// What it buys: with AsyncHTTPClient, a response resumes the waiting task on the event
        /// loop where it arrived, with no hop to another thread (a few percent more requests
        /// per second in the benchmarks). What it risks: while your code runs there, that loop
        /// serves no other connection of the client — a middleware that reads a file, a keychain
        /// lookup or a slow decode stalls every call sharing the loop. Opt in only when the code
        /// in your calls never blocks.
        public var usesTransportExecutor: Bool = false

        /// Creates the defaults.
        public init() {}
    }
}
