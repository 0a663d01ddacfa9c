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
/// ``CallObserver``s, or a handler of your own (see ``MiddlewareContext/progress``). A reporter
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
    private let continuation: AsyncStream<TransferProgress>.Continuation?
    private let observer: (@Sendable (TransferProgress) -> Void)?
    private let parent: ProgressReporter?

    /// A reporter that hands every report to `handler`, then to `parent`.
    public init(parent: ProgressReporter? = nil, _ handler: @escaping @Sendable (TransferProgress) -> Void) {
        continuation = nil
        observer = handler
        self.parent = parent
    }

    init(
        continuation: AsyncStream<TransferProgress>.Continuation?, observer: (@Sendable (TransferProgress) -> Void)? = nil,
        parent: ProgressReporter? = nil
    ) {
        self.continuation = continuation
        self.observer = observer
        self.parent = parent
    }

    /// Reports how far a transfer has come.
    public func report(_ progress: TransferProgress) {
        continuation?.yield(progress)
        observer?(progress)
        parent?.report(progress)
    }

    func finish() { continuation?.finish() }
}
