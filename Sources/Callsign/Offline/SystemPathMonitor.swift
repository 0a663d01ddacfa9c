import Dispatch
import Synchronization

#if canImport(Network)
import Network
#endif

/// The system's network path monitor, where the platform has one (`NWPathMonitor` on Apple
/// platforms): it tells ``Reachability`` each new path. ``start()`` returns `nil` elsewhere.
final class SystemPathMonitor: Sendable {
    private struct Listening {
        var handler: (@Sendable (Reachability.NetworkPath) -> Void)?
        /// The last path reported, for a handler set after it came.
        var latest: Reachability.NetworkPath?
    }

    private let listening = Mutex(Listening())
    private let stop: @Sendable () -> Void

    private init(stop: @escaping @Sendable () -> Void) {
        self.stop = stop
    }

    deinit { stop() }

    /// Sets who hears each path, the current one included once the monitor reports it.
    func onChange(_ handler: @escaping @Sendable (Reachability.NetworkPath) -> Void) {
        let latest = listening.withLock { listening in
            listening.handler = handler
            return listening.latest
        }
        if let latest { handler(latest) }
    }

    private func deliver(_ path: Reachability.NetworkPath) {
        let handler = listening.withLock { listening in
            listening.latest = path
            return listening.handler
        }
        handler?(path)
    }

    /// A running monitor, or `nil` where the platform has none.
    static func start() -> SystemPathMonitor? {
        #if canImport(Network)
        let box = MonitorBox()
        let monitor = SystemPathMonitor(stop: { box.monitor.cancel() })
        box.monitor.pathUpdateHandler = { [weak monitor] path in
            monitor?.deliver(
                Reachability.NetworkPath(
                    isSatisfied: path.status == .satisfied, isExpensive: path.isExpensive, isConstrained: path.isConstrained))
        }
        box.monitor.start(queue: DispatchQueue(label: "callsign.network-path"))
        return monitor
        #else
        return nil
        #endif
    }

    #if canImport(Network)
    /// Holds the system's monitor for the stop closure. Safe to share: the monitor is set up
    /// once in ``start()`` before the box is shared, and afterwards only `cancel()` — which the
    /// Network framework allows from any thread — is called on it.
    private final class MonitorBox: @unchecked Sendable {
        let monitor = NWPathMonitor()
    }
    #endif
}
