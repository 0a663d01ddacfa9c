import Foundation
import HTTPTypes
import Metrics
import Tracing

/// Metrics and tracing for calls: a request counter, a duration timer and a failure counter
/// (swift-metrics), and a client span per call and per attempt with W3C trace context injected
/// into the request (swift-distributed-tracing). Silent unless a backend or tracer is bootstrapped
/// or configured.
struct Telemetry: Sendable {
    let metricsFactory: (any MetricsFactory)?
    let tracer: (any Tracer)?

    private var factory: any MetricsFactory { metricsFactory ?? MetricsSystem.factory }
    var activeTracer: any Tracer { tracer ?? InstrumentationSystem.tracer }

    /// A client span under the current context, or `nil` with the no-op tracer: then no name is
    /// formatted and there is nothing to record or propagate.
    func startSpan(_ name: @autoclosure () -> String) -> (any Span)? {
        // Nothing bootstrapped and no `withTracer` scope, the common case: comparing the
        // instrument's type is far cheaper than the protocol search behind
        // `InstrumentationSystem.tracer`, which finds no tracer in a `NoOpInstrument` either.
        if tracer == nil, InstrumentationSystem.instrument is NoOpInstrument { return nil }
        let tracer = activeTracer
        guard !(tracer is NoOpTracer) else { return nil }
        return tracer.startSpan(name(), context: ServiceContext.current ?? .topLevel, ofKind: .client)
    }

    /// Labels stay low-cardinality: the API name (never a URL with ids), the method, the status class.
    private func dimensions(_ request: Request) -> [(String, String)] {
        [("api", request.apiName ?? "-"), ("method", request.method.rawValue)]
    }

    /// Whether metrics go anywhere: with the no-op factory, building labels would be wasted work.
    private var recordsMetrics: Bool { !(factory is NOOPMetricsHandler) }

    /// Whether calls are traced or measured at all: a client that neither traces nor measures
    /// (nothing configured, nothing bootstrapped when it was created) leaves the observability
    /// stages out of its chain.
    var isActive: Bool {
        recordsMetrics || tracer != nil || !(InstrumentationSystem.instrument is NoOpInstrument)
    }

    func recordSuccess(_ response: Response) {
        guard recordsMetrics else { return }
        let request = response.request
        let statusClass = "\(response.status.code / 100)xx"
        Counter(label: "callsign_requests_total", dimensions: dimensions(request) + [("status_class", statusClass)], factory: factory)
            .increment()
        Metrics.Timer(label: "callsign_request_duration_seconds", dimensions: dimensions(request), factory: factory)
            .recordNanoseconds(response.duration.nanoseconds)
        // The answer's own exchange, phase by phase (HAR's names): where the time went.
        for (phase, duration) in response.timings.phases {
            Metrics.Timer(label: "callsign_request_phase_seconds", dimensions: dimensions(request) + [("phase", phase)], factory: factory)
                .recordNanoseconds(duration.nanoseconds)
        }
    }

    func recordFailure(_ error: APIError, request: Request, duration: Duration) {
        guard recordsMetrics else { return }
        Counter(
            label: "callsign_requests_total", dimensions: dimensions(request) + [("status_class", error.statusCode.map { "\($0 / 100)xx" } ?? "none")],
            factory: factory
        ).increment()
        Counter(label: "callsign_request_failures_total", dimensions: dimensions(request) + [("code", error.code.shortDescription)], factory: factory)
            .increment()
        Metrics.Timer(label: "callsign_request_duration_seconds", dimensions: dimensions(request), factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }

    /// A circuit changed state (``MiddlewareStage/circuitBreaker``).
    func recordCircuitTransition(_ transition: CircuitBreaker.Transition) {
        guard recordsMetrics else { return }
        Counter(label: "callsign_circuit_transitions_total", dimensions: [("to", transition.to.rawValue)], factory: factory).increment()
    }

    /// A request failed at once because its origin's circuit is open.
    func recordCircuitRejection(_ request: Request) {
        guard recordsMetrics else { return }
        Counter(label: "callsign_circuit_rejections_total", dimensions: dimensions(request), factory: factory).increment()
    }

    /// A hedge was sent because no answer head had arrived in time (``MiddlewareStage/hedging``).
    func recordHedgeStarted(_ request: Request) {
        guard recordsMetrics else { return }
        Counter(label: "callsign_hedges_started_total", dimensions: dimensions(request), factory: factory).increment()
    }

    /// A hedge answered first, and the other attempts were cancelled.
    func recordHedgeWon(_ request: Request) {
        guard recordsMetrics else { return }
        Counter(label: "callsign_hedges_won_total", dimensions: dimensions(request), factory: factory).increment()
    }

    /// A request waited at its rate-limit gate (``MiddlewareStage/rateLimit``).
    func recordRateLimitWait(_ request: Request, duration: Duration) {
        guard recordsMetrics else { return }
        Metrics.Timer(label: "callsign_rate_limit_wait_seconds", dimensions: dimensions(request), factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }
}

/// Writes trace context into request header fields.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPFields) {
        guard let name = HTTPField.Name(key), HTTPField.isValidValue(value) else { return }
        carrier[name] = value
    }
}

extension Span {
    /// Records the outcome of an exchange on the span.
    func record(status code: Int?) {
        if let code, !(self is NoOpTracer.NoOpSpan) {
            attributes["http.response.status_code"] = code
            if code >= 500 { setStatus(SpanStatus(code: .error)) }
        }
    }

    /// An attempt's phases as events at the instants they ended (offsets from `start`, the
    /// attempt's beginning), and its connection as OpenTelemetry's `network.*` attributes.
    func record(_ timings: PhaseTimings, httpVersion: String, from start: DefaultTracerClock.Instant) {
        guard !(self is NoOpTracer.NoOpSpan) else { return }
        let milestones: [(String, Duration?)] = [
            ("dns", timings.nameLookup), ("connect", timings.connect), ("tls", timings.secureConnect),
            ("request_sent", timings.requestSent), ("first_byte", timings.firstByte), ("complete", timings.complete),
        ]
        for case let (name, offset?) in milestones {
            let nanoseconds = UInt64(clamping: max(0, offset.nanoseconds))
            let (at, overflow) = start.nanosecondsSinceEpoch.addingReportingOverflow(nanoseconds)
            addEvent(SpanEvent(name: name, at: TracingInstant(nanosecondsSinceEpoch: overflow ? .max : at)))
        }
        if let reused = timings.reusedConnection { attributes["callsign.connection.reused"] = reused }
        if let address = timings.remoteAddress { attributes["network.peer.address"] = address }
        if let port = timings.remotePort { attributes["network.peer.port"] = port }
        if httpVersion.hasPrefix("HTTP/") { attributes["network.protocol.version"] = String(httpVersion.dropFirst(5)) }
    }

    func record(failure error: APIError) {
        guard !(self is NoOpTracer.NoOpSpan) else { return }
        attributes["error.type"] = error.code.shortDescription
        setStatus(SpanStatus(code: .error, message: error.code.shortDescription))
    }
}

/// An instant for a span event, as nanoseconds since 1970.
struct TracingInstant: TracerInstant {
    var nanosecondsSinceEpoch: UInt64

    static func < (lhs: TracingInstant, rhs: TracingInstant) -> Bool { lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch }
}
