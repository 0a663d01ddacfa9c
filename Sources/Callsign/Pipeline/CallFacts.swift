import Foundation
import Logging

/// What the built-in stages know about one call beyond its ``Request``: where it came from, how
/// its body is read, and the limits and progress that apply. It travels down the chain in the
/// ``MiddlewareContext``; a stage that changes a fact passes its changed copy on.
struct CallFacts: Sendable {
    /// How a call reads its response body.
    enum BodyConsumer: Sendable {
        /// Whole, in memory, up to the client's limit.
        case memory
        /// Chunk by chunk, by the caller (``APIClient/stream(_:)``).
        case stream
        /// Into a file, continuing a partial one when `resuming`.
        case file(URL, resuming: Bool)

        var isFile: Bool {
            if case .file = self { return true }
            return false
        }
    }

    /// The client's configuration.
    let shared: SharedConfiguration
    /// The API name, when the call came from a definition.
    var apiName: String?
    /// Where the call came from: its endpoint value, body consumer, replay flag, progress sink.
    var origin: CallOrigin
    /// The request's own logger, if it has one.
    var logger: Logger?
    /// When the call's overall deadline passes, if it has one.
    var deadline: ContinuousClock.Instant?
    /// When this attempt must be over (set by the timeout stage for transports that enforce it).
    var attemptDeadline: ContinuousClock.Instant?
    /// The attempt's idle watch (set by the timeout stage), restarted by every byte the transport
    /// stage sees move.
    var idleWatch: IdleWatch?
    /// The parameter names the common-parameters stage added, which leave on a hop to another origin.
    var commonParameterNames: Set<String> = []
    /// The resolved target of the request's path, so the encoding stage does not resolve it again.
    var resolvedTarget: RequestFactory.Target?
    /// The request in wire form (set by the encoding stage).
    var wire: PreparedRequest?

    init(request: Request, origin: CallOrigin, shared: SharedConfiguration) {
        self.shared = shared
        apiName = request.apiName
        logger = request.logger
        self.origin = origin
    }
}
