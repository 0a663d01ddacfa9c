public import Callsign
public import Foundation

/// A request as the ``TestServer`` received it.
public struct ServerRequest: Sendable {
    /// The method (`GET`, `POST`, …).
    public var method: String
    /// The request target as sent (`/anything/a%2Fb?x=1`).
    public var uri: String
    /// The percent-encoded path, without the query.
    public var rawPath: String
    /// The percent-encoded query, without `?`, or `nil`.
    public var rawQuery: String?
    /// Header fields in order, names as sent.
    public var headers: [(name: String, value: String)]
    /// The body. Empty for `/upload/…`, whose bodies are counted and checksummed as they
    /// arrive instead of being kept (see ``streamedBody``).
    public var body: Data
    /// The server's own base URL, for building absolute links.
    public var serverURL: URL
    /// For `/upload/…`: how many body bytes arrived and their CRC-32, computed as they streamed in.
    public var streamedBody: (bytes: Int, crc32: UInt32)?
    /// The protocol the request came over: `HTTP/1.1`, or `HTTP/2` on a TLS server that negotiated it.
    public var httpVersion: String = "HTTP/1.1"
    /// Who learns that the connection this request came on has closed (set by the server).
    var connectionClosure: ConnectionClosure? = nil

    /// Whether the connection this request came on has closed: the client went away.
    public var clientHasClosed: Bool { connectionClosure?.isClosed ?? false }

    /// Returns once the connection this request came on has closed — the client went away, as a
    /// cancelled call's does — or when the waiting handler is cancelled (the server stops). A
    /// handler that holds its answer can wait for this to see the client give up:
    ///
    /// ```swift
    /// server.route("/slow") { request in
    ///     await request.waitForClientToClose()
    ///     return .json(["late": true])
    /// }
    /// ```
    public func waitForClientToClose() async {
        await connectionClosure?.wait()
    }

    /// The path split into percent-decoded segments (`/a%2Fb/c` → `["a/b", "c"]`).
    public var pathSegments: [String] {
        rawPath.split(separator: "/", omittingEmptySubsequences: true).map {
            String($0).removingPercentEncoding ?? String($0)
        }
    }

    /// The query as decoded name/value pairs (`+` read as a space, as forms write it).
    public var queryItems: [(name: String, value: String)] { Self.decodeForm(rawQuery ?? "") }

    /// The first query value with this name.
    public func query(_ name: String) -> String? { queryItems.first { $0.name == name }?.value }

    /// The first header value with this name (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Decodes `application/x-www-form-urlencoded` text.
    static func decodeForm(_ text: String) -> [(name: String, value: String)] {
        text.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String {
                let spaced = part.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }
}

/// What the ``TestServer`` answers, including scripted misbehaviour.
public struct ServerResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields in order.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: Body
    /// How the answer is delivered.
    public var behaviour: Behaviour

    /// A response body.
    public enum Body: Sendable {
        /// Bytes in memory.
        case data(Data)
        /// `count` deterministic pseudo-random bytes, generated as they are sent.
        case generated(count: Int)
        /// The same bytes as `.generated`, from `offset` on: the tail of a larger body, for ranges.
        case generatedRange(offset: Int, count: Int)

        var count: Int {
            switch self {
            case .data(let data): data.count
            case .generated(let count), .generatedRange(_, let count): count
            }
        }
    }

    /// How a response is delivered: normally, or misbehaving on purpose.
    public struct Behaviour: Sendable {
        enum Kind: Sendable {
            case normal
            case delayHead(Duration)
            case drip(chunk: Int, interval: Duration)
            case resetAfter(bytes: Int)
            case truncateAfter(bytes: Int)
            case closeWithoutResponse
        }

        let kind: Kind

        /// Send the whole response at once.
        public static let normal = Behaviour(kind: .normal)
        /// Wait before sending anything.
        public static func delay(_ duration: Duration) -> Behaviour { Behaviour(kind: .delayHead(duration)) }
        /// Send the body `chunk` bytes at a time, waiting `interval` between chunks.
        public static func drip(chunk: Int, every interval: Duration) -> Behaviour {
            Behaviour(kind: .drip(chunk: max(1, chunk), interval: interval))
        }
        /// Send the head and `bytes` of the body, then reset the connection (TCP RST).
        public static func reset(afterBodyBytes bytes: Int) -> Behaviour { Behaviour(kind: .resetAfter(bytes: bytes)) }
        /// Announce the full length, send `bytes` of the body, then close cleanly.
        public static func truncate(afterBodyBytes bytes: Int) -> Behaviour {
            Behaviour(kind: .truncateAfter(bytes: bytes))
        }
        /// Close the connection without answering.
        public static let closeWithoutResponse = Behaviour(kind: .closeWithoutResponse)
    }

    /// Creates a response.
    public init(
        status: Int = 200, headers: [(name: String, value: String)] = [], body: Body = .data(Data()),
        behaviour: Behaviour = .normal
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.behaviour = behaviour
    }

    /// A JSON response.
    public static func json(_ value: JSONValue, status: Int = 200, headers: [(name: String, value: String)] = [])
        -> ServerResponse
    {
        ServerResponse(
            status: status, headers: [("Content-Type", "application/json")] + headers,
            body: .data(value.jsonData(prettyPrinted: false)))
    }

    /// A text response.
    public static func text(
        _ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8",
        headers: [(name: String, value: String)] = []
    ) -> ServerResponse {
        ServerResponse(status: status, headers: [("Content-Type", contentType)] + headers, body: .data(Data(text.utf8)))
    }

    /// A copy delivered with another behaviour.
    public func with(_ behaviour: Behaviour) -> ServerResponse {
        var copy = self
        copy.behaviour = behaviour
        return copy
    }
}
