public import Foundation
import HTTPTypes

/// One event of a `text/event-stream` response: the server-sent events of the WHATWG HTML
/// standard, as streaming APIs (completions, live feeds) send them.
///
/// ```swift
/// for try await event in client.events(.get("feed")) {
///     if event.type == "price" { let price = try event.decode(Price.self) }
/// }
/// ```
public struct ServerSentEvent: Sendable, Hashable {
    /// The event's type: its `event:` field, or `"message"` when it has none.
    public var type: String
    /// Its `data:` lines, joined with line feeds.
    public var data: String
    /// The last event ID in force when it arrived (its own `id:` or an earlier one's), or `nil`.
    /// After a reconnection it is sent back as `Last-Event-ID`.
    public var id: String?

    /// Creates an event.
    public init(type: String = "message", data: String, id: String? = nil) {
        self.type = type
        self.data = data
        self.id = id
    }

    /// Decodes the event's data as JSON, bounded as response bodies are (nesting depth).
    ///
    /// ```swift
    /// let chunk = try event.decode(CompletionChunk.self)
    /// ```
    /// - Throws: ``APIError`` with ``APIError/Code/decoding``.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder(), limits: Limits = .default) throws(APIError) -> T {
        try JSONDepth.decode(T.self, from: Data(data.utf8), decoder: decoder, limit: limits.maximumJSONDepth) { type, reason, error in
            APIError(.decoding, localized: "the event's data could not be decoded as \(type): \(reason)", underlyingError: error)
        }
    }
}

extension ServerSentEvent {
    /// Reads a `text/event-stream` body as it arrives, chunk by chunk, by the WHATWG grammar:
    /// `data`, `event`, `id` and `retry` fields, comments, CR, LF or CRLF line ends (also split
    /// between chunks), and a byte-order mark at the start. Bounded: a line or an event larger
    /// than ``Limits/maximumEventSize`` is an error, never a growing buffer.
    ///
    /// ``APIClient/events(_:reconnecting:)`` uses it; use it directly for a stream that comes from
    /// elsewhere.
    ///
    /// ```swift
    /// var parser = ServerSentEvent.Parser()
    /// for try await chunk in streamed.chunks {
    ///     for event in try parser.feed(chunk) { print(event.data) }
    /// }
    /// ```
    public struct Parser: Sendable {
        /// The ID the next reconnection sends as `Last-Event-ID` (`nil` before any `id:` field,
        /// and after an empty one). Always a valid header value of at most ``maximumIDSize``
        /// bytes: an `id:` field that could not be sent back is ignored and the last good one kept.
        public private(set) var lastEventID: String?
        /// The reconnection delay the server asked for with `retry:`, if it did.
        public private(set) var retry: Duration?

        private let maximumSize: Int
        private var line: [UInt8] = []
        private var data: [UInt8] = []
        private var hasData = false
        private var eventType: String?
        private var idBuffer: String?
        /// Whether the last byte seen was a CR: an LF right after it ends nothing more.
        private var afterCR = false
        /// Whether the line being read is the stream's first, which may begin with a byte-order mark.
        private var atStart = true

        /// The longest `retry:` delay taken from a server: a day.
        static let maximumRetry: Int64 = 86_400_000

        /// The longest `id:` value kept, in bytes: 1 KiB.
        ///
        /// An ID is sent back as the `Last-Event-ID` header of every reconnection. Servers and
        /// proxies commonly refuse request heads past 8 KiB, which the ID shares with cookies and
        /// an authorization token; a longer `id:` field is ignored, as one with NUL is, and the
        /// last good ID kept. IDs in use (counters, UUIDs, offsets, cursors) are far shorter.
        public static let maximumIDSize = 1024

        /// Creates a parser bounded by `limits`.
        public init(limits: Limits = .default) {
            maximumSize = max(1, limits.maximumEventSize)
        }

        /// Reads the next bytes of the stream and returns the events they complete, in order.
        ///
        /// - Throws: ``APIError`` with ``APIError/Code/responseTooLarge`` when a line or an event
        ///   passes ``Limits/maximumEventSize``.
        public mutating func feed(_ bytes: some Sequence<UInt8>) throws(APIError) -> [ServerSentEvent] {
            var events: [ServerSentEvent] = []
            for byte in bytes {
                switch byte {
                case 0x0A where afterCR:
                    afterCR = false
                case 0x0A, 0x0D:
                    afterCR = byte == 0x0D
                    if let event = try endLine() { events.append(event) }
                default:
                    afterCR = false
                    guard line.count < maximumSize else { throw Self.tooLarge(maximumSize) }
                    line.append(byte)
                }
            }
            return events
        }

        /// The stream ended: an event not yet ended by a blank line is dropped, as the standard
        /// says, and the parser is ready for a new connection (keeping the last event ID and retry).
        public mutating func finish() {
            line.removeAll()
            data.removeAll()
            hasData = false
            eventType = nil
            afterCR = false
            atStart = true
        }

        private mutating func endLine() throws(APIError) -> ServerSentEvent? {
            defer { line.removeAll(keepingCapacity: true) }
            if atStart {
                atStart = false
                if line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
            }
            guard !line.isEmpty else { return dispatch() }
            if line[0] == UInt8(ascii: ":") { return nil }
            let colon = line.firstIndex(of: UInt8(ascii: ":"))
            let name = line[..<(colon ?? line.endIndex)]
            var value = colon.map { line[line.index(after: $0)...] } ?? line[line.endIndex...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
            switch String(decoding: name, as: UTF8.self) {
            case "event":
                eventType = String(decoding: value, as: UTF8.self)
            case "data":
                guard data.count + value.count + 1 <= maximumSize else { throw Self.tooLarge(maximumSize) }
                if hasData { data.append(0x0A) }
                data.append(contentsOf: value)
                hasData = true
            case "id":
                // WHATWG HTML §9.2.6 ignores an ID with NUL. Any ID that could not be a header
                // value (RFC 9110 §5.5: a control character, space at either end) or is past the
                // bound is ignored likewise, so that no `id:` can make the reconnection's request
                // invalid and end the stream. An empty one clears the last event ID.
                // Measured again once decoded: each byte that is not UTF-8 becomes three.
                guard value.count <= Self.maximumIDSize else { break }
                let id = String(decoding: value, as: UTF8.self)
                if id.utf8.count <= Self.maximumIDSize, HTTPField.isValidValue(id) { idBuffer = id }
            case "retry":
                guard !value.isEmpty, value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { break }
                var milliseconds: Int64 = 0
                for digit in value {
                    milliseconds = min(Self.maximumRetry, milliseconds * 10 + Int64(digit - UInt8(ascii: "0")))
                }
                retry = .milliseconds(milliseconds)
            default:
                break
            }
            return nil
        }

        /// A blank line: the event so far, if it has data.
        private mutating func dispatch() -> ServerSentEvent? {
            lastEventID = idBuffer.flatMap { $0.isEmpty ? nil : $0 }
            defer {
                data.removeAll(keepingCapacity: true)
                hasData = false
                eventType = nil
            }
            guard hasData else { return nil }
            let type = eventType.flatMap { $0.isEmpty ? nil : $0 } ?? "message"
            return ServerSentEvent(type: type, data: String(decoding: data, as: UTF8.self), id: lastEventID)
        }

        private static func tooLarge(_ limit: Int) -> APIError {
            APIError(.responseTooLarge, localized: "an event of the stream is larger than \(limit) bytes (Limits.maximumEventSize)")
        }
    }
}
