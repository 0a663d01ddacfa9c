public import Foundation
import Synchronization

/// A circuit breaker per origin (``APIClient/Configuration/circuitBreaker``, the
/// ``MiddlewareStage/circuitBreaker`` stage): after enough failures the circuit **opens**, and
/// calls to that origin fail at once with ``APIError/Code/circuitOpen`` instead of waiting on a
/// backend that is down — or, when their ``StorePolicy`` allows it, go straight to the offline
/// queue. After ``coolDown`` one probe call is let through (**half-open**); its success closes
/// the circuit, its failure opens it again.
///
/// A failure is a transport error, a time limit, or a status in ``failureStatuses``; an answer
/// from the cache, a cancellation and any other status count for nothing. The circuit opens
/// after ``consecutiveFailures`` failures in a row, or — when ``failureRatio`` is set — once that
/// share of the last ``window`` outcomes failed (and at least ``minimumCalls`` were seen).
///
/// ```swift
/// let breaker = CircuitBreaker(consecutiveFailures: 5, coolDown: .seconds(30))
/// let client = APIClient(configuration: .init { $0.circuitBreaker = breaker })
/// Task {
///     for await change in breaker.transitions {
///         banner.isVisible = change.to == .open   // "service unavailable", without guessing
///     }
/// }
/// ```
///
/// Times are read on the client's ``APIClient/Configuration/clock``. One breaker may serve
/// several clients: they then share its circuits.
public final class CircuitBreaker: Sendable {
    /// Where a circuit stands.
    public enum State: String, Sendable, Hashable, CustomStringConvertible {
        /// Calls go through.
        case closed
        /// Calls fail at once (or are queued offline) until the cool-down ends.
        case open
        /// One probe call is through; the others fail at once until it answers.
        case halfOpen

        public var description: String { rawValue }
    }

    /// A circuit changed state.
    public struct Transition: Sendable, Hashable {
        /// The origin, as `scheme://host:port`.
        public let origin: String
        /// The state before.
        public let from: State
        /// The state after.
        public let to: State
        /// When, on the client's clock.
        public let at: ContinuousClock.Instant
    }

    /// Failures in a row that open a circuit. Default 5.
    public let consecutiveFailures: Int
    /// The share of failures among the last ``window`` outcomes that opens a circuit, from 0 to 1;
    /// `nil` (the default) to count only failures in a row.
    public let failureRatio: Double?
    /// How many recent outcomes ``failureRatio`` looks at. Default 20 (at most 1,000).
    public let window: Int
    /// The fewest outcomes before ``failureRatio`` may open a circuit. Default 10.
    public let minimumCalls: Int
    /// How long a circuit stays open before a probe is let through. Default 30 seconds.
    public let coolDown: Duration
    /// Statuses that count as failures. Default 500, 502, 503 and 504.
    public let failureStatuses: Set<Int>

    /// One origin's circuit.
    private struct Circuit {
        var state: State = .closed
        var failuresInARow = 0
        /// The last outcomes, `true` for a failure (at most `window`).
        var recent: [Bool] = []
        var openUntil: ContinuousClock.Instant?
        var probeInFlight = false

        var isIdle: Bool { state == .closed && failuresInARow == 0 && !recent.contains(true) }
    }

    private struct Shared {
        var circuits: [Origin: Circuit] = [:]
    }

    private let shared = Mutex(Shared())
    private let watchers = Broadcast<Transition>()
    /// Circuits kept at most: past it, closed circuits with nothing to remember are forgotten.
    static let maximumCircuits = 1024

    /// Creates a circuit breaker.
    ///
    /// - Parameters:
    ///   - consecutiveFailures: failures in a row that open a circuit. Default 5.
    ///   - failureRatio: the share of failures among recent outcomes that opens one; `nil` (the default) for none.
    ///   - window: how many recent outcomes the ratio looks at. Default 20.
    ///   - minimumCalls: the fewest outcomes before the ratio counts. Default 10.
    ///   - coolDown: how long a circuit stays open before a probe. Default 30 seconds.
    ///   - failureStatuses: statuses that count as failures. Default 500, 502, 503, 504.
    public init(
        consecutiveFailures: Int = 5, failureRatio: Double? = nil, window: Int = 20, minimumCalls: Int = 10,
        coolDown: Duration = .seconds(30), failureStatuses: Set<Int> = [500, 502, 503, 504]
    ) {
        self.consecutiveFailures = max(1, consecutiveFailures)
        self.failureRatio = failureRatio.map { $0.isNaN ? 1 : min(max($0, 0), 1) }
        self.window = min(max(1, window), 1000)
        self.minimumCalls = max(1, minimumCalls)
        self.coolDown = max(.zero, coolDown)
        self.failureStatuses = failureStatuses
    }

    /// The state of the circuit of this URL's origin.
    ///
    /// ```swift
    /// if breaker.state(of: apiBaseURL) == .open { showUnavailable() }
    /// ```
    public func state(of url: URL) -> State {
        guard let origin = Origin(url) else { return .closed }
        return shared.withLock { $0.circuits[origin]?.state ?? .closed }
    }

    /// Every transition of every circuit from now on, as they happen. Each use is a stream of
    /// its own, ended when its task is cancelled; a reader that falls 100 transitions behind
    /// loses the oldest.
    public var transitions: AsyncStream<Transition> { watchers.stream() }

    /// What a call is told.
    enum Admission: Equatable {
        /// Go; `probe` when it is the half-open circuit's one probe.
        case go(probe: Bool)
        /// Fail at once: open until the instant (`nil`: half-open, a probe in flight).
        case reject(until: ContinuousClock.Instant?)
    }

    /// How a call ended, for its circuit.
    enum Outcome {
        case success, failure, neutral
    }

    /// Admits a call to `origin` at `now`.
    func admit(_ origin: Origin, now: ContinuousClock.Instant) -> (Admission, Transition?) {
        let (admission, transition) = shared.withLock { shared -> (Admission, Transition?) in
            var circuit = shared.circuits[origin] ?? Circuit()
            defer { store(circuit, at: origin, in: &shared) }
            switch circuit.state {
            case .closed:
                return (.go(probe: false), nil)
            case .open:
                if let until = circuit.openUntil, now < until { return (.reject(until: until), nil) }
                circuit.state = .halfOpen
                circuit.probeInFlight = true
                return (.go(probe: true), announce(origin, from: .open, to: .halfOpen, at: now))
            case .halfOpen:
                guard !circuit.probeInFlight else { return (.reject(until: nil), nil) }
                circuit.probeInFlight = true
                return (.go(probe: true), nil)
            }
        }
        publish(transition)
        return (admission, transition)
    }

    /// Records how a call to `origin` ended.
    func record(_ outcome: Outcome, origin: Origin, probe: Bool, now: ContinuousClock.Instant) -> Transition? {
        let transition = shared.withLock { shared -> Transition? in
            var circuit = shared.circuits[origin] ?? Circuit()
            defer { store(circuit, at: origin, in: &shared) }
            if probe { circuit.probeInFlight = false }
            switch outcome {
            case .neutral:
                return nil
            case .success:
                circuit.failuresInARow = 0
                remember(false, in: &circuit)
                guard circuit.state != .closed else { return nil }
                let from = circuit.state
                circuit = Circuit()
                return announce(origin, from: from, to: .closed, at: now)
            case .failure:
                circuit.failuresInARow += 1
                remember(true, in: &circuit)
                let from = circuit.state
                switch from {
                case .open:
                    return nil  // a call admitted before the circuit opened
                case .halfOpen:
                    guard probe else { return nil }
                case .closed:
                    guard tripped(circuit) else { return nil }
                }
                circuit.state = .open
                circuit.openUntil = now + coolDown
                return announce(origin, from: from, to: .open, at: now)
            }
        }
        publish(transition)
        return transition
    }

    /// Whether a closed circuit has seen enough failures to open.
    private func tripped(_ circuit: Circuit) -> Bool {
        if circuit.failuresInARow >= consecutiveFailures { return true }
        guard let failureRatio, circuit.recent.count >= minimumCalls else { return false }
        return Double(circuit.recent.filter { $0 }.count) >= failureRatio * Double(circuit.recent.count)
    }

    private func remember(_ failed: Bool, in circuit: inout Circuit) {
        circuit.recent.append(failed)
        if circuit.recent.count > window { circuit.recent.removeFirst(circuit.recent.count - window) }
    }

    private func announce(_ origin: Origin, from: State, to: State, at now: ContinuousClock.Instant) -> Transition {
        Transition(origin: origin.description, from: from, to: to, at: now)
    }

    /// Tells every reader of ``transitions``, outside the lock (a stream's termination handler takes it).
    private func publish(_ transition: Transition?) {
        if let transition { watchers.send(transition) }
    }

    /// Stores a circuit, forgetting idle ones once there are too many.
    private func store(_ circuit: Circuit, at origin: Origin, in shared: inout Shared) {
        shared.circuits[origin] = circuit
        guard shared.circuits.count > Self.maximumCircuits else { return }
        shared.circuits = shared.circuits.filter { $0.key == origin || !$0.value.isIdle }
        while shared.circuits.count > Self.maximumCircuits, let other = shared.circuits.keys.first(where: { $0 != origin }) {
            shared.circuits[other] = nil
        }
    }
}
