import Foundation

/// What a WebSocket handshake asks of the transport (``WireRequest/webSocket``): the
/// subprotocols to offer and the bounds on what the server may send.
///
/// ``APIClient/webSocket(_:options:)`` fills it from ``WebSocketOptions``; a transport reads it.
///
/// ```swift
/// var request = WireRequest(head: head)
/// request.webSocket = WebSocketUpgrade(protocols: ["chat.v2"])
/// let response = try await transport.send(request)   // 101, with response.webSocket open
/// ```
public struct WebSocketUpgrade: Sendable, Hashable {
    /// The subprotocols offered in `Sec-WebSocket-Protocol`, most preferred first; a server that
    /// picks another one is refused.
    public var protocols: [String]
    /// The largest frame the server may send, in bytes. Default 1 MiB.
    public var maximumFrameSize: Int
    /// The largest message the server may send, fragments joined, in bytes. Default 16 MiB.
    public var maximumMessageSize: Int
    /// How long a message the server has begun in fragments may take to be finished. Default 60 s.
    public var maximumMessageDuration: Duration
    /// Whether to offer `permessage-deflate`, where the transport can (URLSession negotiates it
    /// itself; the Linux transport does not offer it). Default `true`.
    public var compression: Bool
    /// How long a close waits for the server's close answer (and the messages before it) before
    /// the connection is cut. Default 10 s.
    public var closeTimeout: Duration

    /// Creates upgrade settings.
    public init(
        protocols: [String] = [], maximumFrameSize: Int = 1 << 20, maximumMessageSize: Int = 16 << 20,
        maximumMessageDuration: Duration = .seconds(60), compression: Bool = true, closeTimeout: Duration = .seconds(10)
    ) {
        self.protocols = protocols
        self.maximumFrameSize = Swift.max(125, maximumFrameSize)
        self.maximumMessageSize = Swift.max(125, maximumMessageSize)
        self.maximumMessageDuration = Swift.max(.milliseconds(1), maximumMessageDuration)
        self.compression = compression
        self.closeTimeout = Swift.max(.zero, closeTimeout)
    }
}

/// An open WebSocket connection, as a ``Transport`` hands it over in
/// ``TransportResponse/webSocket`` after a `101 Switching Protocols` answer to a request whose
/// ``WireRequest/webSocket`` was set.
///
/// ``WebSocket`` (what ``APIClient/webSocket(_:options:)`` gives you) is built on it: keep-alive,
/// reconnection and the outgoing buffer live there, once, for every transport. A connection only
/// moves whole messages, within its ``WebSocketUpgrade`` bounds, and answers the server's pings.
///
/// One task receives; any task may send. Every method returns at once when the connection is
/// closed.
public protocol WebSocketConnection: AnyObject, Sendable {
    /// The subprotocol the server chose (`Sec-WebSocket-Protocol`), if any.
    var subprotocol: String? { get }

    /// Waits for the server's next message; `nil` once the connection has closed, and then
    /// ``closeReason`` says how.
    ///
    /// - Throws: ``APIError`` when the server broke a bound or the protocol — a message past
    ///   ``WebSocketUpgrade/maximumMessageSize`` (``APIError/Code/responseTooLarge``), a text
    ///   message that is not UTF-8, a fragmented message never finished
    ///   (``APIError/Code/webSocketClosed``); the connection is closed with the matching code
    ///   first. Cancellation throws too, and leaves the connection open.
    func receive() async throws -> WebSocketMessage?

    /// Sends one message.
    func send(_ message: WebSocketMessage) async throws

    /// Sends a ping and returns once the server shows it is alive (or throws once the connection
    /// is closed): its pong, or — for a connection that reads frames in order — any other frame
    /// that arrives after the ping, since a server busy sending answers behind what it sent first.
    /// A connection that stops reading while its reader is behind returns at once: what the
    /// server sent is waiting, and its pong would wait behind it. The keep-alive
    /// (``WebSocketOptions/pongTimeout``) is built on this. (URLSession reads pongs apart from
    /// messages, so on Apple platforms the pong alone answers.)
    func ping() async throws

    /// Sends a close frame (when the connection is still open), waits for the server's (at most
    /// ``WebSocketUpgrade/closeTimeout``), and closes the connection. What the server sent before its close answer is
    /// still handed out by ``receive()``, then `nil`.
    func close(_ close: WebSocketClose) async

    /// How the connection closed: the server's close frame, the close this side sent, or
    /// ``WebSocketClose/Code/abnormalClosure`` when the connection broke without one; `nil`
    /// while it is open.
    var closeReason: WebSocketClose? { get }
}

extension WebSocketUpgrade {
    /// How much of the body of an answer that refused the handshake (a 401, a problem document)
    /// is kept for the error: what says why, never a flood.
    static let refusalBodyLimit = 64 << 10
}

extension APIError {
    /// The error for a connection whose server broke the protocol or a bound: the close this side
    /// sends, and why.
    static func webSocket(_ close: WebSocketClose, _ message: LocalizedMessage, code: Code = .webSocketClosed) -> APIError {
        var error = APIError(code, localized: message)
        error.webSocketClose = close
        return error
    }
}
