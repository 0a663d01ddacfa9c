/// Told how a client's calls go: when each starts, moves bytes, is about to be retried, and
/// ends, and how many are running — for a network activity indicator, a loading HUD with
/// RFAPI's loading message, or a `--verbose` line per retry.
///
/// ```swift
/// struct Spinner: CallObserver {
///     func activeCallCountDidChange(_ count: Int) { Task { @MainActor in indicator.isVisible = count > 0 } }
///     func callDidStart(_ call: ObservedCall) {
///         if let message = call.loadMessage { Task { @MainActor in hud.show(message) } }
///     }
///     func callDidEnd(_ call: ObservedCall) { Task { @MainActor in hud.hide() } }
/// }
/// let client = APIClient(configuration: .init { $0.observability.observers = [Spinner()] })
/// ```
///
/// Methods are called from the calls' tasks, in order for each call, and must return quickly;
/// all have empty defaults. A client without observers does none of this work.
public protocol CallObserver: Sendable {
    /// A call got its turn and started.
    func callDidStart(_ call: ObservedCall)
    /// A call moved bytes (uploads and downloads).
    func callDidProgress(_ call: ObservedCall, progress: TransferProgress)
    /// An attempt of a call failed and the retry policy will try again after the report's wait.
    func callWillRetry(_ call: ObservedCall, after report: AttemptReport)
    /// An exchange of a call got its answer (each attempt and each redirect has its own), with
    /// when each of its phases ended: told once its body has been read, or at its head for a
    /// streamed body.
    ///
    /// ```swift
    /// func callDidMeasure(_ call: ObservedCall, timings: PhaseTimings) {
    ///     if let firstByte = timings.firstByte { histogram.record(firstByte, for: call.apiName) }
    /// }
    /// ```
    func callDidMeasure(_ call: ObservedCall, timings: PhaseTimings)
    /// A call ended: success, failure or cancellation.
    func callDidEnd(_ call: ObservedCall)
    /// The number of running calls changed.
    func activeCallCountDidChange(_ count: Int)
}

extension CallObserver {
    public func callDidStart(_ call: ObservedCall) {}
    public func callDidProgress(_ call: ObservedCall, progress: TransferProgress) {}
    public func callWillRetry(_ call: ObservedCall, after report: AttemptReport) {}
    public func callDidMeasure(_ call: ObservedCall, timings: PhaseTimings) {}
    public func callDidEnd(_ call: ObservedCall) {}
    public func activeCallCountDidChange(_ count: Int) {}
}

/// A call as a ``CallObserver`` sees it.
public struct ObservedCall: Sendable, Hashable {
    /// Tells calls apart, in the order they started.
    public var id: UInt64
    /// The API name, when the call came from a definition.
    public var apiName: String?
    /// The request's loading message (RFAPI's), if it has one.
    public var loadMessage: String?
}

/// What the retry policy did after one attempt (``CallObserver/callWillRetry(_:after:)``).
public struct AttemptReport: Sendable {
    /// The attempt that failed (1-based).
    public var attempt: Int
    /// What happened: a status or an error message, in the client's language.
    public var outcome: String
    /// The wait before the next attempt.
    public var wait: Duration
}

/// A client's observers as one: what the client and its stages tell, each told in turn.
struct CallObservers: Sendable {
    let observers: [any CallObserver]

    var isEmpty: Bool { observers.isEmpty }

    func started(_ call: ObservedCall) { for observer in observers { observer.callDidStart(call) } }
    func progressed(_ call: ObservedCall, _ progress: TransferProgress) {
        for observer in observers { observer.callDidProgress(call, progress: progress) }
    }
    func willRetry(_ call: ObservedCall, _ report: AttemptReport) { for observer in observers { observer.callWillRetry(call, after: report) } }
    func measured(_ call: ObservedCall, _ timings: PhaseTimings) { for observer in observers { observer.callDidMeasure(call, timings: timings) } }
    func ended(_ call: ObservedCall) { for observer in observers { observer.callDidEnd(call) } }
    func countChanged(_ count: Int) { for observer in observers { observer.activeCallCountDidChange(count) } }
}
