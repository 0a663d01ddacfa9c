public import Foundation
import Synchronization

/// Whether each origin can be reached now, learned from three kinds of evidence: the device's
/// network path (on Apple platforms, from the system's path monitor), the calls the client makes
/// (an answer from an origin: reachable; a connection refused, a name that does not resolve, a
/// connect that timed out: unreachable), and — while offline requests wait for an origin — a
/// probe of it (``APIClient/Configuration/Offline/probe``).
///
/// The offline drain (``APIClient/Configuration/Offline/drain``) reads it to send queued requests
/// as soon as their origin is back. An app reads it too, to show an offline banner without
/// guessing:
///
/// ```swift
/// Task { @MainActor in
///     for await change in client.reachability.changes where change.origin == "https://api.example.com:443" {
///         offlineBanner.isHidden = change.status != .unreachable
///     }
/// }
/// ```
///
/// One `Reachability` may serve several clients (``APIClient/Configuration/Offline/reachability``):
/// they then share what each learns.
public final class Reachability: Sendable {
    /// What is known of an origin.
    public enum Status: String, Sendable, Hashable, CustomStringConvertible {
        /// Nothing yet, or what was known went stale when the network changed.
        case unknown
        /// The last call or probe got an answer (any status: a 503 is an answer).
        case reachable
        /// The last call or probe could not connect, or the device has no network.
        case unreachable

        /// The status's name: `unknown`, `reachable` or `unreachable`.
        public var description: String { rawValue }
    }

    /// The device's network path, as the system reports it.
    public struct NetworkPath: Sendable, Hashable, CustomStringConvertible {
        /// Whether the device has a usable network at all.
        public var isSatisfied: Bool
        /// Whether it is one the system marks as costly (cellular, a personal hotspot).
        public var isExpensive: Bool
        /// Whether the user asked to save data on it (Low Data Mode).
        public var isConstrained: Bool

        /// Creates a path.
        public init(isSatisfied: Bool, isExpensive: Bool = false, isConstrained: Bool = false) {
            self.isSatisfied = isSatisfied
            self.isExpensive = isExpensive
            self.isConstrained = isConstrained
        }

        /// What is assumed where no monitor runs (Linux, or `monitorsSystemPath: false`): a
        /// network, neither expensive nor constrained.
        public static let assumed = NetworkPath(isSatisfied: true)

        /// `no network`, `network`, or what makes it costly: `expensive`, `constrained`.
        public var description: String {
            guard isSatisfied else { return "no network" }
            return [isExpensive ? "expensive" : nil, isConstrained ? "constrained" : nil].compactMap { $0 }.joined(separator: ", ")
                .nonEmpty ?? "network"
        }
    }

    /// One change: an origin's status, or the device's path.
    public struct Change: Sendable, Hashable {
        /// The origin, as `scheme://host:port`; `nil` when the device's network path changed.
        public let origin: String?
        /// The origin's new status; for a path change, `.reachable` when the path became usable
        /// and `.unreachable` when it was lost.
        public let status: Status
        /// The device's path at the time.
        public let path: NetworkPath
    }

    private struct Known {
        var status: Status
        /// The ``Evidence`` number of the record that said it.
        var seen: UInt64
    }

    private struct State {
        /// Each origin's status and which record said it.
        var origins: [Origin: Known] = [:]
        var path = NetworkPath.assumed
    }

    /// Where an attempt stands among the records of every origin: taken when it starts, it
    /// tells afterwards whether an origin was seen answering since. A counter, not a clock: what
    /// matters is which came first, and an attempt pays one atomic load for it.
    struct Evidence: Sendable {
        fileprivate let number: UInt64
    }

    private let state = Mutex(State())
    /// The number of the last record, of any origin.
    private let records = Atomic<UInt64>(0)
    private let watchers = Broadcast<Change>()
    private let monitor: SystemPathMonitor?
    /// Origins remembered at most: past it, the reachable ones are forgotten first.
    static let maximumOrigins = 1024

    /// Creates a reachability.
    ///
    /// - Parameter monitorsSystemPath: on Apple platforms, whether to follow the system's
    ///   network path (`NWPathMonitor`). Default `true`. Where there is no such monitor (Linux),
    ///   the path is ``NetworkPath/assumed`` unless you tell it with ``update(path:)``.
    public init(monitorsSystemPath: Bool = true) {
        monitor = monitorsSystemPath ? SystemPathMonitor.start() : nil
        monitor?.onChange { [weak self] path in self?.update(path: path) }
    }

    /// What is known of the origin of `url`; ``Status/unreachable`` for every origin while the
    /// device has no network.
    ///
    /// ```swift
    /// if client.reachability.status(of: apiBaseURL) == .unreachable { showOffline() }
    /// ```
    public func status(of url: URL) -> Status {
        guard let origin = Origin(url) else { return .unknown }
        return status(of: origin)
    }

    /// The device's network path now.
    public var path: NetworkPath { state.withLock { $0.path } }

    /// Every change from now on, as it happens. Each use is a stream of its own, ended when its
    /// task is cancelled; a reader that falls 100 changes behind loses the oldest.
    public var changes: AsyncStream<Change> { watchers.stream() }

    /// Tells what the app learned itself (a push that arrived, its own monitor): the origin of
    /// `url` is now `status`. Always told to the readers of ``changes``, even when it was known:
    /// the app's word that an origin is back sends what waits for it at once.
    public func record(_ status: Status, for url: URL) {
        guard let origin = Origin(url) else { return }
        record(status, origin: origin, always: true)
    }

    /// Tells the device's network path, for an app that watches it itself (or a test). A path
    /// that became usable again makes every origin ``Status/unknown``: what was learned on the
    /// old network says nothing of the new one, so waiting requests are tried at once.
    ///
    /// ```swift
    /// client.reachability.update(path: .init(isSatisfied: false))   // airplane mode
    /// ```
    public func update(path: NetworkPath) {
        let change = state.withLock { state -> Change? in
            let old = state.path
            guard old != path else { return nil }
            state.path = path
            if path.isSatisfied, !old.isSatisfied {
                for (origin, known) in state.origins where known.status == .unreachable { state.origins[origin]?.status = .unknown }
            }
            return Change(origin: nil, status: path.isSatisfied ? .reachable : .unreachable, path: path)
        }
        if let change { watchers.send(change) }
    }

    func status(of origin: Origin) -> Status {
        state.withLock { state in
            state.path.isSatisfied ? state.origins[origin]?.status ?? .unknown : .unreachable
        }
    }

    /// Records what a call or a probe of `origin` showed; tells the readers when it changed (or
    /// `always`). A failure of an attempt that started before the origin was last seen reachable
    /// is stale and changes nothing: the answer came after it.
    func record(_ status: Status, origin: Origin, always: Bool = false, attemptStarted: Evidence? = nil) {
        let change = state.withLock { state -> Change? in
            if let attemptStarted, status == .unreachable, let known = state.origins[origin], known.status == .reachable,
                known.seen > attemptStarted.number
            {
                return nil
            }
            // Numbered under the lock, so the numbers follow the records' order. One look-up, as
            // every answer comes here.
            let seen = records.wrappingAdd(1, ordering: .relaxed).newValue
            let known = state.origins.updateValue(Known(status: status, seen: seen), forKey: origin)
            guard always || known?.status != status else { return nil }
            if state.origins.count > Self.maximumOrigins {
                let forgotten = state.origins.first { $0.key != origin && $0.value.status != .unreachable }?.key
                    ?? state.origins.first { $0.key != origin }?.key
                if let forgotten { state.origins[forgotten] = nil }
            }
            return Change(origin: origin.description, status: status, path: state.path)
        }
        if let change { watchers.send(change) }
    }

    /// Where an attempt starting now stands: an attempt's failure recorded with it is stale if its
    /// origin was seen answering after it.
    func evidenceNow() -> Evidence {
        Evidence(number: records.load(ordering: .relaxed))
    }

    /// What a call's outcome says of its origin: an answer, reachable; a failure that never
    /// reached the server (refused, unresolvable, a connect timed out), unreachable; anything
    /// else (cancelled, a refusal before sending) nothing.
    func observe(_ error: APIError?, origin: Origin?, attemptStarted: Evidence) {
        guard let origin else { return }
        guard let error else { return record(.reachable, origin: origin) }
        if error.response != nil || error.responseStarted { return record(.reachable, origin: origin) }
        if [.transport, .timedOut].contains(error.code), !error.requestSent {
            record(.unreachable, origin: origin, attemptStarted: attemptStarted)
        }
    }
}

extension String {
    fileprivate var nonEmpty: String? { isEmpty ? nil : self }
}
