public import Foundation

/// One whole message of a WebSocket, text or binary: a message sent in fragments arrives joined.
///
/// ```swift
/// try await socket.send(.text("subscribe prices"))
/// try await socket.send(try .json(Subscribe(channel: "prices")))
/// for try await message in socket.messages {
///     let tick = try message.decode(Tick.self)
/// }
/// ```
public enum WebSocketMessage: Sendable, Hashable {
    /// A text message (its bytes are UTF-8; a server's text that is not ends the connection with
    /// ``WebSocketClose/Code/invalidData``).
    case text(String)
    /// A binary message.
    case binary(Data)

    /// The message's bytes: UTF-8 for a text message.
    public var data: Data {
        switch self {
        case .text(let text): Data(text.utf8)
        case .binary(let data): data
        }
    }

    /// The text of a text message; `nil` for a binary one.
    public var text: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    /// The message's size in bytes.
    public var count: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let data): data.count
        }
    }

    /// Decodes the message's bytes (text or binary) as JSON, within the JSON depth limit.
    ///
    /// ```swift
    /// let tick = try message.decode(Tick.self)
    /// ```
    /// - Throws: ``APIError`` with ``APIError/Code/decoding``.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder(), limits: Limits = .default) throws(APIError) -> T {
        try JSONDepth.decode(T.self, from: data, decoder: decoder, limit: limits.maximumJSONDepth) { type, reason, error in
            APIError(.decoding, localized: "the WebSocket message could not be decoded as \(type): \(reason)", underlyingError: error)
        }
    }

    /// A text message holding `value` as JSON.
    ///
    /// ```swift
    /// try await socket.send(try .json(["op": "subscribe", "channel": "prices"]))
    /// ```
    /// - Throws: ``APIError`` with ``APIError/Code/encoding``.
    public static func json<T: Encodable>(_ value: T, encoder: JSONEncoder = JSONEncoder()) throws(APIError) -> WebSocketMessage {
        do {
            return .text(String(decoding: try encoder.encode(value), as: UTF8.self))
        } catch {
            throw APIError(.encoding, localized: "the WebSocket message could not be encoded as JSON: \(error)", underlyingError: error)
        }
    }
}

/// How and why a WebSocket closed: the close code and the reason (RFC 6455 §7.4), as sent in a
/// close frame or as Callsign tells it (``Code/abnormalClosure`` when the connection broke
/// without one).
///
/// ```swift
/// await socket.close(WebSocketClose(.goingAway, reason: "logging out"))
/// if let close = error.webSocketClose, close.code == .policyViolation { … }
/// ```
public struct WebSocketClose: Sendable, Hashable, CustomStringConvertible {
    /// A close code (RFC 6455 §7.4.1; 3000–4999 for applications and libraries).
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: UInt16
        /// A close code by its number.
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        /// A close code by its number: `WebSocketClose.Code(4001)`.
        public init(_ rawValue: UInt16) { self.rawValue = rawValue }

        /// 1000: the purpose of the connection is fulfilled.
        public static let normalClosure = Code(1000)
        /// 1001: the endpoint is going away (a server shutting down, a page left).
        public static let goingAway = Code(1001)
        /// 1002: the other side broke the protocol.
        public static let protocolError = Code(1002)
        /// 1003: a kind of message the endpoint cannot accept.
        public static let unsupportedData = Code(1003)
        /// 1005: a close frame with no code (never sent).
        public static let noStatusReceived = Code(1005)
        /// 1006: the connection ended without a close frame (never sent).
        public static let abnormalClosure = Code(1006)
        /// 1007: a message's bytes do not match its type (a text message that is not UTF-8).
        public static let invalidData = Code(1007)
        /// 1008: a message broke the endpoint's policy.
        public static let policyViolation = Code(1008)
        /// 1009: a message too large to take.
        public static let messageTooBig = Code(1009)
        /// 1010: the server did not agree to an extension the client needs.
        public static let mandatoryExtension = Code(1010)
        /// 1011: the server met an unexpected condition.
        public static let internalError = Code(1011)

        /// Whether an endpoint may send this code in a close frame (RFC 6455 §7.4: 1000–1003,
        /// 1007–1011 and 3000–4999).
        public var maySend: Bool {
            switch rawValue {
            case 1000...1003, 1007...1011, 3000...4999: true
            default: false
            }
        }

        public var description: String { String(rawValue) }
    }

    /// The close code.
    public var code: Code
    /// The reason given with it, if any (at most 123 UTF-8 bytes are sent).
    public var reason: String

    /// A close with this code and reason.
    public init(_ code: Code, reason: String = "") {
        self.code = code
        self.reason = reason
    }

    /// Whether this close ends the conversation as planned (``Code/normalClosure``).
    public var isNormal: Bool { code == .normalClosure }

    /// The reason as sent on the wire: at most 123 bytes of UTF-8, cut at a character boundary.
    var wireReason: String {
        guard reason.utf8.count > 123 else { return reason }
        var cut = ""
        for character in reason {
            guard cut.utf8.count + character.utf8.count <= 123 else { break }
            cut.append(character)
        }
        return cut
    }

    public var description: String { reason.isEmpty ? "\(code)" : "\(code) \(reason)" }
}
