public import Logging
public import Metrics
public import Tracing

extension APIClient.Configuration {
    /// Logs, metrics, traces, recordings and observers (``APIClient/Configuration/observability``).
    ///
    /// ```swift
    /// configuration.observability.logger = Logger(label: "api")
    /// configuration.observability.recorder = HARRecorder(fileURL: URL(fileURLWithPath: "session.har"))
    /// ```
    public struct Observability: Sendable {
        /// Where Callsign logs: `debug` and `trace` only, one line per call and two per attempt,
        /// secrets masked. Errors are thrown, never logged at `error`. A request's own
        /// ``Request/Fields/logger`` wins. Default `nil`: silent.
        public var logger: Logger? = nil
        /// What is hidden in logs, cURL lines, error descriptions and HAR files. Default ``Redaction/default``.
        public var redaction: Redaction = .default
        /// Where metrics go. Default `nil`: the factory bootstrapped in `MetricsSystem` (none: no-op).
        /// Bootstrap `MetricsSystem` before creating clients, as swift-metrics asks: a client that
        /// found no metrics backend, no tracer and no logger when it was created leaves its
        /// observability stages out of the chain, at no cost per call.
        public var metricsFactory: (any MetricsFactory)? = nil
        /// Who traces calls. Default `nil`: the tracer bootstrapped in `InstrumentationSystem`
        /// (none: no spans, no `traceparent`), read when the client is created.
        public var tracer: (any Tracer)? = nil
        /// The longest body shown by `trace`-level logs. Default 4 KiB.
        public var maximumLoggedBodySize: Int = 4096
        /// Records every attempt into an HTTP Archive, at the ``MiddlewareStage/recording``
        /// stage. Default `nil`.
        public var recorder: HARRecorder? = nil
        /// Told when calls start, move bytes, are retried and end, and how many are running
        /// (a network activity indicator, a loading HUD, `callsign call --verbose`). Default none.
        ///
        /// ```swift
        /// configuration.observability.observers = [Spinner()]
        /// ```
        public var observers: [any CallObserver] = []

        /// Creates the defaults: silent.
        public init() {}
    }
}
