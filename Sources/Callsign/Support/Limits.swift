import HTTPTypes

/// Bounds on what a peer or a file can make Callsign hold or parse, so that a hostile server
/// or a malicious definitions file gets a clear ``APIError`` instead of a crash, a hang or
/// unbounded memory.
///
/// The decompression limits (``DecompressionPolicy``) complete this set.
///
/// ```swift
/// let client = APIClient(configuration: .init {
///     $0.limits.maximumHeaderFieldCount = 100
///     $0.limits.maximumJSONDepth = 64
/// })
/// let definitions = try APIDefinitions(contentsOf: url, limits: .init { $0.maximumDefinitionNodes = 10_000 })
/// ```
public struct Limits: Sendable, Hashable {
    /// The largest response body read into memory; a larger one fails with
    /// ``APIError/Code/responseTooLarge`` without reading further (a `Content-Length` over it
    /// fails before the first body byte). Downloads to a file and streams are not bound by it.
    /// Default 64 MiB.
    public var maximumResponseBodySize: Int = 64 * 1024 * 1024
    /// The most bytes of header names and values one response head may carry. Default 64 KiB.
    ///
    /// Transports have their own ceiling too (AsyncHTTPClient refuses heads over 80 KiB while
    /// parsing), so a larger value does not raise theirs.
    public var maximumResponseHeadSize: Int = 64 * 1024
    /// The most bytes of header names and values one request may carry, wherever its fields
    /// come from: code, a definitions file, an OpenAPI document, the command line, a HAR file or
    /// a stored offline-queue row. Default 64 KiB (servers commonly refuse heads over 8–16 KiB).
    public var maximumRequestHeadSize: Int = 64 * 1024
    /// The most header fields one request or response may carry, wherever they come from: a
    /// server, code, a definitions file, an OpenAPI document, the command line, a HAR file, a mock
    /// or a stored queue or cache row. Past it the call fails with an ``APIError`` instead of
    /// building the list. Default 500; values over 65,534 (`HTTPFields` traps at 65,535) count as
    /// 65,534.
    public var maximumHeaderFieldCount: Int = 500
    /// The deepest nesting of arrays and objects accepted in a JSON body or definitions file.
    /// Default 512. Callsign's own JSON reader (``JSONValue/init(parsing:)``, definitions files)
    /// counts as it reads; before a body is decoded into a `Decodable` type, a lower value than
    /// 512 (Foundation's own limit) is checked by a quick scan.
    public var maximumJSONDepth: Int = 512
    /// The most values (scalars, lists and maps, counting every use of a YAML alias as a copy)
    /// a definitions file may expand to. Stops "billion laughs" documents, whose aliases expand
    /// a few hundred bytes into billions of values. Default 1,000,000.
    public var maximumDefinitionNodes: Int = 1_000_000
    /// The most bytes read for a request body from a file whose length cannot be known in
    /// advance — a FIFO, a device such as `/dev/zero`, a `/proc` file, a shell's `<(command)` —
    /// which is streamed with chunked transfer coding (see ``TransportBody/file(_:)``). Past it
    /// the call fails with an ``APIError`` (``APIError/Code/encoding``) that names the file. A
    /// regular file is sent as exactly its size and is not bound by this. Default 1 GiB.
    public var maximumRequestBodySize: Int = 1024 * 1024 * 1024
    /// The largest OpenAPI document read, in bytes; a larger one fails with
    /// ``APIError/Code/invalidDefinition`` before it is parsed (a file, after reading at most one
    /// byte more). Default 16 MiB.
    public var maximumDocumentSize: Int = 16 * 1024 * 1024
    /// The most `$ref`s an OpenAPI document follows one after another (a schema whose `$ref`
    /// names one that refers on, and so on), and so how deep its operations nest once expanded
    /// (never deeper than ``maximumJSONDepth``). Checked before any library code dereferences the
    /// document, which recurses once per level. Default 64.
    public var maximumReferenceDepth: Int = 64
    /// The most values an OpenAPI document may stand for once each `$ref` in its operations is
    /// replaced by what it names (a schema used 1,000 times counts 1,000 times), its own values
    /// included: the work and memory of loading it. Default 8,000,000.
    public var maximumExpandedNodes: Int = 8_000_000
    /// The most values one path of an OpenAPI document (its operations) may stand for once its
    /// `$ref`s are expanded: what is built, all at once, to read those operations. A path past it
    /// is left out with a load warning naming it (a strict load refuses the document), and the
    /// other operations load. The largest path of the public API descriptions Callsign was tried
    /// with (Kubernetes, OpenAI) stands for about 160,000 values; a few kilobytes of schemas that
    /// each name the next twice stand for millions. Default 500,000.
    public var maximumExpandedPathNodes: Int = 500_000
    /// The most bytes one server-sent event may hold — any one line of the stream, and the data of
    /// one event — when a `text/event-stream` is read (``APIClient/events(_:reconnecting:)``,
    /// ``ServerSentEvent/Parser``). Past it the stream fails with
    /// ``APIError/Code/responseTooLarge``. The stream as a whole is not bounded: it may run for
    /// days. Default 1 MiB.
    public var maximumEventSize: Int = 1024 * 1024

    /// The defaults above.
    public static let `default` = Limits()

    /// Creates limits, adjusted from the defaults by `change`.
    public init(_ change: (inout Limits) -> Void = { _ in }) {
        change(&self)
    }

    /// Checks a response head against these limits and HTTP's own rules: a final status of
    /// 200…999 (or `101` for a request that asked to switch to a WebSocket), a `Content-Length`
    /// that is one valid number.
    ///
    /// - Returns: the declared `Content-Length`, if any.
    /// - Throws: ``APIError/Code/invalidResponse``.
    @discardableResult
    func check(_ head: HTTPResponse, upgrading: Bool = false) throws(APIError) -> Int64? {
        guard (200...999).contains(head.status.code) || (upgrading && head.status.code == 101) else {
            throw APIError(.invalidResponse, localized: "the server answered with status \(head.status.code), which is not a final HTTP status (200–999; interim 1xx answers are not final, and 101 answers only a WebSocket request)")
        }
        guard head.headerFields.count <= maximumHeaderFieldCount else {
            throw APIError(
                .invalidResponse,
                localized: "the response has \(head.headerFields.count) header fields; at most \(maximumHeaderFieldCount) are accepted (Limits.maximumHeaderFieldCount)")
        }
        var size = 0
        for field in head.headerFields {
            size += field.name.rawName.utf8.count + field.value.utf8.count
            guard size <= maximumResponseHeadSize else {
                throw APIError(
                    .invalidResponse,
                    localized: "the response head is larger than \(maximumResponseHeadSize) bytes (Limits.maximumResponseHeadSize)")
            }
        }
        return try ContentLength.parse(head.headerFields)
    }
}
