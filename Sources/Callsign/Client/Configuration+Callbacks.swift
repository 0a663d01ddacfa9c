extension APIClient.Configuration {
    /// Callback calls (``APIClient/Configuration/callbacks``), as RFAPI had them.
    public struct Callbacks: Sendable {
        /// Where callbacks of ``APIClient/request(_:configure:)-(String,_)`` run. Default ``CallbackDelivery/mainActor``.
        public var delivery: CallbackDelivery = .mainActor
        /// Sees every failure of a callback call first (never a cancellation); return `true`
        /// to consume it, so the call's own `failure` is not called (RFAPI's central error
        /// handler). ``CallbackFailure/callHandlesFailure`` tells whether the call has a
        /// `failure` of its own; when it has none, this is where its error is reported.
        /// Default `nil`.
        ///
        /// ```swift
        /// configuration.callbacks.errorHandler = { failure in
        ///     if !failure.callHandlesFailure { await banner.show(failure.error) }
        ///     return false
        /// }
        /// ```
        public var errorHandler: (@Sendable (CallbackFailure) async -> Bool)? = nil

        /// Creates the defaults.
        public init() {}
    }
}
