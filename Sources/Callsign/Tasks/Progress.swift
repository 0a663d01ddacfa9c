import Synchronization

/// How far a transfer has come.
///
/// ```swift
/// let task = client.start(.get("/bytes/1000000"))
/// for await progress in task.progress {
///     print(progress.direction, progress.fraction ?? 0, progress.completedBytes)
/// }
/// ```
///
/// Each attempt starts again from zero (a retry resets progress); within an attempt the bytes
/// only grow, and the last update of a successful download has a fraction of exactly 1.
public struct TransferProgress: Sendable, Hashable {
    /// Which way the bytes go.
    public enum Direction: Sendable, Hashable {
        case upload, download
    }

    /// Which way the bytes go.
    public var direction: Direction
    /// Bytes transferred so far in this attempt.
    public var completedBytes: Int64
    /// Bytes expected, when known.
    public var totalBytes: Int64?

    /// The fraction done (0…1), when the total is known.
    public var fraction: Double? {
        guard let totalBytes else { return nil }
        guard totalBytes > 0 else { return 1 }
        return min(1, Double(completedBytes) / Double(totalBytes))
    }
}

/// Where a call's stages report its transfer progress: a ``CallTask``'s stream, the client's
/// ``CallObserver``s, or a handler of your own (see ``MiddlewareContext/Fields/progress``). A reporter
/// passes every report on to its parent, so a middleware can watch a call's progress without
/// taking it from anyone else:
///
/// ```swift
/// struct Meter: Middleware {
///     func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
///         var context = context
///         context.progress = ProgressReporter(parent: context.progress) { progress in
///             if progress.direction == .download { meter.add(progress.completedBytes) }
///         }
///         return try await next(request, context: context)
///     }
/// }
/// ```
public final class ProgressReporter: Sendable {
    private let buffer: LatestProgress?
    private let observer: (@Sendable (TransferProgress) -> Void)?
    private let parent: ProgressReporter?

    /// A reporter that hands every report to `handler`, then to `parent`.
    public init(parent: ProgressReporter? = nil, _ handler: @escaping @Sendable (TransferProgress) -> Void) {
        buffer = nil
        observer = handler
        self.parent = parent
    }

    init(
        buffer: LatestProgress?, observer: (@Sendable (TransferProgress) -> Void)? = nil,
        parent: ProgressReporter? = nil
    ) {
        self.buffer = buffer
        self.observer = observer
        self.parent = parent
    }

    /// Reports how far a transfer has come.
    public func report(_ progress: TransferProgress) {
        buffer?.report(progress)
        observer?(progress)
        parent?.report(progress)
    }

    func finish() { buffer?.finish() }
}

/// What a ``CallTask``'s progress stream has not handed out yet: the latest report of each
/// direction, in the order the directions first reported. A slow reader skips to the newest
/// figure, and never loses an upload's last report behind the download reports that follow it.
final class LatestProgress: Sendable {
    private struct State {
        /// At most one report per direction.
        var pending: [TransferProgress] = []
        /// The reader, waiting while nothing is pending.
        var reader: CheckedContinuation<TransferProgress?, Never>?
        var finished = false
    }

    private let state = Mutex(State())

    /// The stream a ``CallTask`` hands out: one reader.
    func stream() -> AsyncStream<TransferProgress> {
        AsyncStream(unfolding: { await self.next() })
    }

    func report(_ progress: TransferProgress) {
        let reader = state.withLock { state -> CheckedContinuation<TransferProgress?, Never>? in
            guard !state.finished else { return nil }
            if let reader = state.reader {
                state.reader = nil
                return reader
            }
            if let index = state.pending.firstIndex(where: { $0.direction == progress.direction }) {
                state.pending[index] = progress
            } else {
                state.pending.append(progress)
            }
            return nil
        }
        reader?.resume(returning: progress)
    }

    /// No more reports; the reader gets what is pending, then the end.
    func finish() {
        let reader = state.withLock { state -> CheckedContinuation<TransferProgress?, Never>? in
            state.finished = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }

    /// The next report, or `nil` once the call has ended (or the reader's task is cancelled).
    private func next() async -> TransferProgress? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (reader: CheckedContinuation<TransferProgress?, Never>) in
                let answer = state.withLock { state -> TransferProgress?? in
                    if !state.pending.isEmpty { return .some(state.pending.removeFirst()) }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.reader = reader
                    return .none
                }
                if let answer { reader.resume(returning: answer) }
            }
        } onCancel: {
            let reader = state.withLock { state -> CheckedContinuation<TransferProgress?, Never>? in
                defer { state.reader = nil }
                return state.reader
            }
            reader?.resume(returning: nil)
        }
    }
}
