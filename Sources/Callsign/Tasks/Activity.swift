/// Told when calls with a loading message start, progress and end, and how many calls are active
/// (RFAPI's loading message, APE's network activity indicator).
///
/// ```swift
/// struct Spinner: ActivityObserver {
///     func activeCallCountDidChange(_ count: Int) { Task { @MainActor in indicator.isVisible = count > 0 } }
///     func callDidStart(_ call: ActivityCall) { Task { @MainActor in hud.show(call.message) } }
///     func callDidEnd(_ call: ActivityCall) { Task { @MainActor in hud.hide() } }
/// }
/// ```
///
/// Methods are called from the calls' tasks, in order for each call; all have empty defaults.
public protocol ActivityObserver: Sendable {
    /// A call with a loading message started.
    func callDidStart(_ call: ActivityCall)
    /// A call with a loading message moved bytes.
    func callDidProgress(_ call: ActivityCall, progress: TransferProgress)
    /// A call with a loading message ended (success, failure or cancellation).
    func callDidEnd(_ call: ActivityCall)
    /// The number of running calls changed.
    func activeCallCountDidChange(_ count: Int)
}

extension ActivityObserver {
    public func callDidStart(_ call: ActivityCall) {}
    public func callDidProgress(_ call: ActivityCall, progress: TransferProgress) {}
    public func callDidEnd(_ call: ActivityCall) {}
    public func activeCallCountDidChange(_ count: Int) {}
}

/// A call as an ``ActivityObserver`` sees it.
public struct ActivityCall: Sendable, Hashable {
    /// Distinguishes calls with the same message.
    public var id: UInt64
    /// The loading message.
    public var message: String
    /// The API name, when the call came from a definition.
    public var apiName: String?
}
