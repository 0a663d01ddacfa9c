extension APIClient.Configuration {
    /// Where offline requests wait, and how they go out again (``APIClient/Configuration/offline``).
    public struct Offline: Sendable {
        /// Where requests with ``StorePolicy/offline`` wait while the server cannot be reached.
        /// Default `nil`: each client keeps its own ``MemoryOfflineQueue`` (lost when the process
        /// ends); `SQLiteOfflineQueue` from `CallsignSQLite` keeps them on disk.
        ///
        /// ```swift
        /// configuration.offline.queue = try SQLiteOfflineQueue(url: queueFile)   // CallsignSQLite
        /// ```
        public var queue: (any OfflineQueueStorage)? = nil

        /// When queued requests go out without a call to ``APIClient/replay(lease:)``. Default
        /// ``DrainPolicy/automatic``.
        ///
        /// ```swift
        /// configuration.offline.drain = .automaticOnUnmeteredNetworks   // not over cellular or in Low Data Mode
        /// ```
        public var drain: DrainPolicy = .automatic

        /// How often an origin that is down is probed while requests wait for it. Default: after
        /// 1 second, then twice as long each time, at most a minute apart.
        public var probe = ProbeSchedule()

        /// Where the client learns and publishes which origins can be reached. Default `nil`: each
        /// client has its own (``APIClient/reachability``); give several clients one to share what
        /// each learns.
        public var reachability: Reachability? = nil

        /// Creates the default: a memory queue per client, drained automatically.
        public init(queue: (any OfflineQueueStorage)? = nil, drain: DrainPolicy = .automatic) {
            self.queue = queue
            self.drain = drain
        }

        /// When queued requests go out by themselves.
        public enum DrainPolicy: Sendable, Hashable {
            /// As soon as their origin can be reached: a call gets an answer from it, its probe
            /// does, or the device's network comes back.
            case automatic
            /// As ``automatic``, but only while the device's network is neither expensive
            /// (cellular, a hotspot) nor constrained (Low Data Mode).
            case automaticOnUnmeteredNetworks
            /// Only when the app calls ``APIClient/replay(lease:)`` (or `callsign queue replay`).
            case manual

            /// Whether the drain may send over `path`.
            func allows(_ path: Reachability.NetworkPath) -> Bool {
                switch self {
                case .automatic: path.isSatisfied
                case .automaticOnUnmeteredNetworks: path.isSatisfied && !path.isExpensive && !path.isConstrained
                case .manual: false
                }
            }
        }

        /// The waits between probes of an origin that is down (and between tries of a request
        /// the server kept refusing): `first`, then `multiplier` times the last, never more than
        /// `maximum`. No jitter: the probe is one small `HEAD` per client.
        public struct ProbeSchedule: Sendable, Hashable {
            /// The first wait. Default 1 second.
            public var first: Duration
            /// The longest wait. Default 60 seconds.
            public var maximum: Duration
            /// How much longer each wait is than the last. Default 2.
            public var multiplier: Int

            /// Creates a schedule. Waits are kept between 10 milliseconds and a day, the
            /// multiplier between 1 and 1,000.
            public init(first: Duration = .seconds(1), maximum: Duration = .seconds(60), multiplier: Int = 2) {
                let day = Duration.seconds(86_400)
                self.first = min(max(first, .milliseconds(10)), day)
                self.maximum = min(max(maximum, self.first), day)
                self.multiplier = min(max(1, multiplier), 1000)
            }

            /// The wait after `failures` failed tries in a row (`0`: the first wait).
            func delay(afterFailures failures: Int) -> Duration {
                var delay = first
                for _ in 0..<max(0, min(failures, 64)) {
                    guard delay < maximum else { break }
                    delay = delay * multiplier
                }
                return min(delay, maximum)
            }
        }
    }
}
