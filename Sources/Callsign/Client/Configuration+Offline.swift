extension APIClient.Configuration {
    /// Where offline requests wait (``APIClient/Configuration/offline``).
    public struct Offline: Sendable {
        /// Where requests with ``StorePolicy/offline`` wait while the server cannot be reached.
        /// Default `nil`: each client keeps its own ``MemoryOfflineQueue`` (lost when the process
        /// ends); `SQLiteOfflineQueue` from `CallsignSQLite` keeps them on disk.
        ///
        /// ```swift
        /// configuration.offline.queue = try SQLiteOfflineQueue(url: queueFile)   // CallsignSQLite
        /// ```
        public var queue: (any OfflineQueueStorage)? = nil

        /// Creates the default: a memory queue per client.
        public init(queue: (any OfflineQueueStorage)? = nil) { self.queue = queue }
    }
}
