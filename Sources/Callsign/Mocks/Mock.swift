public import Foundation
import Synchronization

/// A canned answer for a request (Malibu's mocks): data, JSON, a file, an error, or a sequence.
///
/// Mocked answers go through validation, envelopes, decoding, retries and every middleware
/// exactly like real ones — only the transport is not asked (see ``Mocks``).
///
/// ```swift
/// configuration.mocks = Mocks(directory: fixtures) { request in
///     switch request.apiName {
///     case "TopicListRecommended": .file("topics.json")
///     case "UserProfile": .json(["id": 1, "name": "Ann"])
///     case "Flaky": .sequence([.json(["error": "busy"], status: 503), .json(["ok": true])])
///     default: nil        // a real request
///     }
/// }
/// ```
public struct Mock: Sendable {
    enum Answer: Sendable {
        case data(Data, status: Int, headers: [(String, String)])
        /// `confined`: the path comes from a file (a definition's `mock:`) and must stay inside the folder.
        case file(String, status: Int, headers: [(String, String)], confined: Bool)
        case failure(any Error)
        case sequence(SequenceState)
    }

    let answer: Answer
    /// How long the answer takes; `nil` uses the default delay of its ``Mocks``.
    public var delay: Duration?

    /// Bytes with a status and headers.
    public static func data(_ data: Data, status: Int = 200, headers: [String: String] = [:], delay: Duration? = nil) -> Mock {
        Mock(answer: .data(data, status: status, headers: fields(headers)), delay: delay)
    }

    /// Bytes with header fields in order, repeated names allowed (a recorded exchange's).
    static func data(_ data: Data, status: Int, headerFields: [(String, String)]) -> Mock {
        Mock(answer: .data(data, status: status, headers: headerFields), delay: nil)
    }

    /// Header fields from a dictionary, in a stable order.
    private static func fields(_ headers: [String: String]) -> [(String, String)] {
        headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// A JSON body (`Content-Type: application/json`).
    public static func json(_ value: JSONValue, status: Int = 200, headers: [String: String] = [:], delay: Duration? = nil) -> Mock {
        var headers = headers
        if !headers.keys.contains(where: { $0.lowercased() == "content-type" }) { headers["Content-Type"] = "application/json" }
        return Mock(answer: .data(value.jsonData(), status: status, headers: fields(headers)), delay: delay)
    }

    /// A file's contents: a path relative to the directory of its ``Mocks``, or an absolute path. The
    /// `Content-Type` follows the extension (json, xml, txt, html, png, jpg) unless given.
    public static func file(_ path: String, status: Int = 200, headers: [String: String] = [:], delay: Duration? = nil) -> Mock {
        Mock(answer: .file(path, status: status, headers: fields(headers), confined: false), delay: delay)
    }

    /// A file inside the directory of its ``Mocks``, for paths that come from a file rather than
    /// from code — a definition's `mock:` key, a name on the command line. A path that is
    /// absolute, climbs out with `..`, or leads out through a symbolic link is refused with
    /// ``APIError/Code/invalidDefinition`` when the mock is used: a definitions file from
    /// somewhere else cannot make a mock serve `/etc/passwd` or `~/.ssh/id_ed25519`.
    ///
    /// ```swift
    /// Mocks(directory: fixtures) { request in .confinedFile("\(request.apiName ?? "none").json") }
    /// ```
    public static func confinedFile(_ path: String, status: Int = 200, headers: [String: String] = [:], delay: Duration? = nil) -> Mock {
        Mock(answer: .file(path, status: status, headers: fields(headers), confined: true), delay: delay)
    }

    /// A failure instead of a response, such as `URLError(.notConnectedToInternet)`; reported
    /// as ``APIError/Code/transport`` unless it is an ``APIError``.
    public static func error(_ error: any Error, delay: Duration? = nil) -> Mock {
        Mock(answer: .failure(error), delay: delay)
    }

    /// Answers in turn, one per request; the last one repeats. Keep the value and return it from
    /// the provider each time, so the turns are shared.
    ///
    /// ```swift
    /// let flaky = Mock.sequence([.json([:], status: 503), .json(["ok": true])])
    /// ```
    public static func sequence(_ mocks: [Mock]) -> Mock {
        Mock(answer: .sequence(SequenceState(mocks)), delay: nil)
    }

    /// Hands out a sequence's answers in turn.
    final class SequenceState: Sendable {
        private let mocks: [Mock]
        private let next = Mutex(0)
        init(_ mocks: [Mock]) { self.mocks = mocks }

        func take() -> Mock? {
            guard !mocks.isEmpty else { return nil }
            let index = next.withLock { index -> Int in
                defer { index += 1 }
                return min(index, mocks.count - 1)
            }
            return mocks[index]
        }
    }
}

/// What a mock provider knows about a request.
public struct MockRequest: Sendable {
    /// The request as it would go on the wire.
    public var method: String
    /// The full URL.
    public var url: URL
    /// The header fields.
    public var headers: Headers
    /// The body, if any; `nil` too for a one-shot stream (``TransportBody/stream(_:length:)``),
    /// which is read only once, by the network.
    public var body: Data?
    /// The API name, when the call came from a definition.
    public var apiName: String?
    /// The endpoint value, when the call came from ``APIClient/send(_:)-(E)``: cast it to your enum.
    public var endpoint: (any Endpoint)?
    /// The request's tag.
    public var tag: String?
}
