import Foundation

/// When each phase of one exchange ended — one request and its answer, one attempt — and what
/// is known of the connection it went over.
///
/// Every time is measured from the moment the transport started the exchange, so later phases
/// include earlier ones, as curl's `-w` variables do: ``connect`` includes ``nameLookup``,
/// ``firstByte`` includes everything before it. A phase that did not happen (no name lookup or
/// handshake on a reused connection, no TLS over `http`) or that the transport cannot see is
/// `nil`.
///
/// ```swift
/// let response = try await client.call("User", parameters: ["id": 7])
/// let timings = response.timings
/// if let firstByte = timings.firstByte { print("the head came after \(firstByte)") }
/// if timings.reusedConnection == true { print("over a kept-alive connection") }
/// ```
///
/// What each transport sees (`✓`), the rest stays `nil`:
///
/// | | URLSession, Apple platforms | URLSession, Linux | AsyncHTTPClient |
/// |---|---|---|---|
/// | ``nameLookup``, ``connect``, ``secureConnect`` | ✓ (task metrics) | — | — |
/// | ``connectionReady`` | ✓ | — | ✓ (the request head written) |
/// | ``requestSent`` | ✓ | ✓ (a body read whole, with a request body) | ✓ (a body read whole) |
/// | ``firstByte`` | ✓ | ✓ | ✓ |
/// | ``complete`` | ✓ (a body read whole) | ✓ (a body read whole) | ✓ (a body read whole) |
/// | ``reusedConnection``, ``remoteAddress``, ``remotePort`` | ✓ | — | — |
///
/// AsyncHTTPClient does not report its connections' events, so on it the time until the
/// request head went out (``connectionReady``) holds the name lookup, the connection and the
/// TLS handshake together (or the wait for a free connection). A streamed or downloaded body's
/// ``complete`` is set by Callsign as it reads the last byte. The protocol is the response's
/// ``Response/Fields/httpVersion``. Task metrics arrive on Apple platforms only for bodies read
/// whole; a stream's come to ``URLSessionHooks/metrics`` alone.
///
/// Callsign hands them to ``CallObserver/callDidMeasure(_:timings:)``, to metrics
/// (`callsign_request_phase_seconds`), to each attempt's span as events, to HAR `timings`, and
/// to the command line's `-w '%{time_connect}'`.
public struct PhaseTimings: Sendable, Hashable {
    /// The host name resolved.
    public var nameLookup: Duration?
    /// The TCP connection open.
    public var connect: Duration?
    /// The TLS handshake done (curl's `time_appconnect`).
    public var secureConnect: Duration?
    /// A connection ready and the request about to go out (curl's `time_pretransfer`).
    public var connectionReady: Duration?
    /// The whole request sent, body included.
    public var requestSent: Duration?
    /// The response head arrived (curl's `time_starttransfer`).
    public var firstByte: Duration?
    /// The last byte of the body read.
    public var complete: Duration?
    /// Whether the exchange went over a connection opened for an earlier one.
    public var reusedConnection: Bool?
    /// The server's IP address as the connection reached it (a proxy's, through a proxy).
    public var remoteAddress: String?
    /// The server's port as the connection reached it.
    public var remotePort: Int?

    /// Timings with nothing measured yet.
    public init() {}
}

extension PhaseTimings {
    /// The phases as HAR 1.2 durations in milliseconds: `-1` for a phase that did not happen or
    /// was not seen. `connect` includes `ssl`, as HAR says; `send`, `wait` and `receive` are never
    /// negative, and an unknown one is 0.
    var har: HARFile.Timings {
        // Each phase from the end of the last one seen before it.
        func span(_ from: Duration?, _ to: Duration?) -> Double? {
            guard let to else { return nil }
            return max(0, (to - (from ?? .zero)).seconds * 1000)
        }
        let dns = span(nil, nameLookup)
        let connect = span(nameLookup, secureConnect ?? connect)
        let ssl = secureConnect.flatMap { end in span(self.connect, end) }
        let ready = connectionReady ?? secureConnect ?? self.connect ?? nameLookup
        // AsyncHTTPClient's one milestone before sending: the wait for a connection, however spent.
        let blocked = connectionReady != nil && nameLookup == nil && self.connect == nil ? span(nil, connectionReady) : nil
        let sent = requestSent ?? ready
        return HARFile.Timings(
            blocked: blocked ?? -1, dns: dns ?? -1, connect: connect ?? -1,
            send: span(ready, sent) ?? 0, wait: span(sent, firstByte) ?? 0, receive: span(firstByte ?? sent, complete) ?? 0,
            ssl: ssl ?? -1)
    }

    /// Each phase's own length, by the names HAR gives them (`dns`, `connect`, `ssl`, `send`,
    /// `wait`, `receive`, `blocked`), for the phases that happened: what metrics and spans report.
    var phases: [(name: String, duration: Duration)] {
        let har = self.har
        let all: [(String, Double)] = [
            ("blocked", har.blocked), ("dns", har.dns), ("connect", har.connect), ("ssl", har.ssl),
            ("send", har.send), ("wait", har.wait), ("receive", har.receive),
        ]
        return all.compactMap { name, milliseconds in
            milliseconds < 0 ? nil : (name, .saturating(seconds: milliseconds / 1000))
        }
    }

    /// Sets ``complete`` for a body read above the transport: the head's own offset, plus the
    /// time from its arrival (`headArrived`) to the last byte (`end`).
    mutating func complete(headArrived: ContinuousClock.Instant, end: ContinuousClock.Instant) {
        complete = (firstByte ?? .zero) + (end - headArrived)
    }

    /// The milestones, in the order they happen.
    static var milestones: [WritableKeyPath<PhaseTimings, Duration?>] {
        [\.nameLookup, \.connect, \.secureConnect, \.connectionReady, \.requestSent, \.firstByte, \.complete]
    }

    /// Fills what `self` leaves unknown from `other`.
    func filling(from other: PhaseTimings) -> PhaseTimings {
        var merged = self
        for milestone in Self.milestones where merged[keyPath: milestone] == nil {
            merged[keyPath: milestone] = other[keyPath: milestone]
        }
        merged.reusedConnection = reusedConnection ?? other.reusedConnection
        merged.remoteAddress = remoteAddress ?? other.remoteAddress
        merged.remotePort = remotePort ?? other.remotePort
        return merged
    }
}

/// The dates URLSession's task metrics give for one transaction, in the order they happen, and
/// what they say of the connection: read from the system's metrics by the URLSession transport
/// (``init(_:)``), turned into ``PhaseTimings`` here, where it is tested on every platform.
struct TransactionDates: Sendable {
    var fetchStart: Date?
    var domainLookupEnd: Date?
    var connectEnd: Date?
    var secureConnectionStart: Date?
    var secureConnectionEnd: Date?
    var requestStart: Date?
    var requestEnd: Date?
    var responseStart: Date?
    var responseEnd: Date?
    var reusedConnection = false
    var networkProtocol: String?
    var remoteAddress: String?
    var remotePort: String?

    /// The timings, measured from `fetchStart`. URLSession's dates come from the wall clock: a
    /// date before the start or out of order is clamped, never a negative phase; the remote
    /// address is kept only when it reads as an IP address.
    var timings: PhaseTimings? {
        guard let fetchStart else { return nil }
        var last = Duration.zero
        func since(_ date: Date?) -> Duration? {
            guard let date else { return nil }
            let offset = Duration.saturating(seconds: date.timeIntervalSince(fetchStart))
            last = max(last, offset)
            return last
        }
        var timings = PhaseTimings()
        timings.nameLookup = since(domainLookupEnd)
        // URLSession's connect ends after the handshake; curl's and HAR's before it.
        timings.connect = since(secureConnectionStart ?? connectEnd)
        timings.secureConnect = secureConnectionStart == nil ? nil : since(secureConnectionEnd)
        timings.connectionReady = since(requestStart)
        timings.requestSent = since(requestEnd)
        timings.firstByte = since(responseStart)
        timings.complete = since(responseEnd)
        timings.reusedConnection = reusedConnection
        timings.remoteAddress = remoteAddress.flatMap(IPAddressText.checked)
        timings.remotePort = remotePort.flatMap { Int($0) }.flatMap { (1...65535).contains($0) ? $0 : nil }
        return timings
    }

    /// `HTTP/2` and the like from ALPN's names (`h2`, `http/1.1`, `h3`), as HAR writes them.
    var httpVersion: String? {
        switch networkProtocol?.lowercased() {
        case "h2": "HTTP/2"
        case "h3": "HTTP/3"
        case "http/1.1": "HTTP/1.1"
        case "http/1.0": "HTTP/1.0"
        default: nil
        }
    }
}

/// An IP address as text, checked before it is kept: the system reports it, but it is printed.
enum IPAddressText {
    /// `text` when it is an IPv4 or IPv6 address (hex digits, dots, colons, and a zone after
    /// `%` of letters and digits), at most 64 bytes; `nil` otherwise.
    static func checked(_ text: String) -> String? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 64 else { return nil }
        var inZone = false
        for byte in utf8 {
            let isHexDigit = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
            let isLetter = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            if inZone {
                guard isLetter || isHexDigit else { return nil }
            } else if byte == UInt8(ascii: "%") {
                inZone = true
            } else {
                guard isHexDigit || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":") else { return nil }
            }
        }
        return text
    }
}
