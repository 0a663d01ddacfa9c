import Foundation

/// How a WebSocket is opened, kept alive and reconnected (``APIClient/webSocket(_:options:)``).
///
/// ```swift
/// var options = WebSocketOptions(protocols: ["chat.v2"])
/// options.pingInterval = .seconds(20)
/// options.onReconnect = { socket in
///     try await socket.send(.text("subscribe prices"))   // before anything buffered meanwhile
/// }
/// let socket = try await client.webSocket(.get("wss://chat.example.com/live"), options: options)
/// ```
///
/// The waits (pings, pong limits, back-off) are on the client's ``APIClient/Configuration/clock``:
/// with a `TestClock` that does not wait for `advance`, pings follow each other at once — set
/// ``pingInterval`` to `nil` there, or use `TestClock(waitsForAdvance: true)`.
public struct WebSocketOptions: Sendable {
    /// The subprotocols to offer, most preferred first; the server's choice is
    /// ``WebSocket/subprotocol``, and a choice that was not offered is refused.
    public var protocols: [String] = []
    /// The largest message the server may send, fragments joined. Default 16 MiB; past it the
    /// socket is closed with 1009 and reading throws ``APIError/Code/responseTooLarge``.
    public var maximumMessageSize: Int = 16 << 20
    /// The largest single frame the server may send. Default 1 MiB.
    public var maximumFrameSize: Int = 1 << 20
    /// How long a message the server began in fragments may take to be finished. Default 60 s.
    public var maximumMessageDuration: Duration = .seconds(60)
    /// Whether to offer `permessage-deflate` where the transport can (URLSession on Apple
    /// platforms negotiates it; the Linux transport sends messages uncompressed). Default `true`.
    public var compression = true
    /// How often a ping goes out to check that the connection lives; `nil` for never. Default 30 s.
    public var pingInterval: Duration? = .seconds(30)
    /// How long a pong may take: past it the connection is taken as dead, closed and — if
    /// ``reconnection`` allows — made again. Default 10 s. Any frame from the server after the
    /// ping counts as its answer, and a reader that is behind (messages waiting unread, reading
    /// from the socket paused) is never taken for a dead server.
    public var pongTimeout: Duration = .seconds(10)
    /// When a connection that broke is made again. Default ``Reconnection/standard``.
    public var reconnection: Reconnection = .standard
    /// How long ``WebSocket/close(_:)`` waits for the server's close answer — and the messages it
    /// sent before it — before cutting the connection. Default 10 s.
    public var closeTimeout: Duration = .seconds(10)
    /// How many bytes of messages ``WebSocket/send(_:)`` keeps while a connection is being made
    /// again, sent in order once it is back. Default 1 MiB; a message that does not fit is
    /// refused with ``APIError/Code/webSocketClosed`` (never dropped silently), and what is
    /// still kept when the socket closes for good is in ``WebSocket/unsentMessages``.
    public var outgoingBufferSize: Int = 1 << 20
    /// Runs after each reconnection, before the messages kept meanwhile are sent: resubscribe
    /// here. What it sends goes first. An error it throws closes the socket with that error.
    public var onReconnect: (@Sendable (WebSocket.Reconnected) async throws -> Void)? = nil

    /// Options with these subprotocols and everything else at its default.
    public init(protocols: [String] = []) {
        self.protocols = protocols
    }

    /// When a WebSocket whose connection broke is connected again.
    ///
    /// A connection that ended with close code 1001 (going away), 1005 (a close frame without a
    /// code), 1006 (broke without a close frame), 1011–1014 (server error, restart, try again later) or whose pong did not come is
    /// made again after the back-off, with a fresh handshake through the whole pipeline
    /// (expired credentials refreshed). A normal close (1000) ends the socket; any other code —
    /// a policy violation, a message too big, an application's 4000–4999 — ends it with
    /// ``APIError/Code/webSocketClosed``, since making it again would meet the same answer.
    ///
    /// ```swift
    /// options.reconnection = .upTo(10)
    /// options.reconnection = .never
    /// ```
    public struct Reconnection: Sendable, Hashable {
        /// How many attempts in a row without a connection that lasted (one that brought a
        /// message, or stayed open for the back-off's ``RetryPolicy/maximumDelay``); 0 never
        /// reconnects. A server that accepts each connection and drops it at once is given up on.
        public var maximumAttempts: Int
        /// The back-off between attempts (its ``RetryPolicy/baseDelay``, ``RetryPolicy/maximumDelay``
        /// and ``RetryPolicy/jitter``); `nil` for the client's ``APIClient/Configuration/retry``.
        public var backOff: RetryPolicy?

        /// A reconnection rule.
        public init(maximumAttempts: Int, backOff: RetryPolicy? = nil) {
            self.maximumAttempts = Swift.max(0, maximumAttempts)
            self.backOff = backOff
        }

        /// Up to 5 attempts in a row, with the client's back-off.
        public static let standard = Reconnection(maximumAttempts: 5)
        /// A connection that breaks ends the socket.
        public static let never = Reconnection(maximumAttempts: 0)
        /// Up to `attempts` attempts in a row, with the client's back-off.
        public static func upTo(_ attempts: Int) -> Reconnection { Reconnection(maximumAttempts: attempts) }

        /// Whether a connection that ended with `close` is made again.
        static func reconnects(after close: WebSocketClose) -> Bool {
            switch close.code.rawValue {
            case 1001, 1005, 1006, 1011, 1012, 1013, 1014: true
            default: false
            }
        }
    }

    /// What the transport is asked for.
    var upgrade: WebSocketUpgrade {
        WebSocketUpgrade(
            protocols: protocols, maximumFrameSize: maximumFrameSize, maximumMessageSize: maximumMessageSize,
            maximumMessageDuration: maximumMessageDuration, compression: compression, closeTimeout: closeTimeout)
    }
}
