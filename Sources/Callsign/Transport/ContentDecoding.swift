import CCallsignZlib
import Foundation
import HTTPTypes

/// How Callsign decodes `gzip` and `deflate` response bodies, and the limits that make a
/// decompression bomb an error instead of an out-of-memory crash.
///
/// Callsign asks for compressed answers (`Accept-Encoding: gzip, deflate`, unless the request
/// sets the field) and decodes them as they stream — unless the transport already does
/// (``Transport/decodesContentEncoding``, true for URLSession). Downloads to a file ask for the
/// unencoded bytes, so they can be resumed.
///
/// ```swift
/// configuration.responses.decompression.maximumRatio = 50
/// configuration.responses.decompression = .disabled   // bodies arrive as the server encoded them
/// ```
public struct DecompressionPolicy: Sendable, Hashable {
    /// Whether to ask for and decode compressed bodies. Default `true`.
    public var isEnabled: Bool
    /// The most decoded bytes one body may expand to; `nil` means the response body cap
    /// (``Limits/maximumResponseBodySize``) for bodies read into memory and no limit
    /// for downloads to a file. Default `nil`.
    public var maximumDecodedSize: Int?
    /// The most a body may expand (decoded bytes ÷ compressed bytes), checked once more than
    /// 1 MiB has been decoded. Default 100.
    public var maximumRatio: Int
    /// The most `Content-Encoding`s stacked on one body (`gzip, gzip`). Default 2.
    public var maximumEncodings: Int

    /// The defaults: on, 100×, two encodings.
    public static let `default` = DecompressionPolicy()
    /// Off: no `Accept-Encoding` is added and bodies are left as they came.
    public static let disabled = DecompressionPolicy(isEnabled: false)

    /// Creates a policy.
    public init(isEnabled: Bool = true, maximumDecodedSize: Int? = nil, maximumRatio: Int = 100, maximumEncodings: Int = 2) {
        self.isEnabled = isEnabled
        self.maximumDecodedSize = maximumDecodedSize
        self.maximumRatio = maximumRatio
        self.maximumEncodings = maximumEncodings
    }
}

/// Decodes `Content-Encoding`s on a body stream.
enum ContentDecoding {
    /// The value sent as `Accept-Encoding`.
    static let acceptEncoding = "gzip, deflate"
    /// Below this many decoded bytes the ratio is not checked: small bodies compress well.
    static let ratioFloor = 1 << 20

    /// The codings Callsign decodes.
    static let decodable: Set<String> = ["gzip", "x-gzip", "deflate"]

    /// The body decoded, and the head without `Content-Encoding` and `Content-Length` (which
    /// describe the encoded bytes); unchanged when the body is not encoded or the policy is off.
    ///
    /// Codings are undone last-applied first, as far as Callsign knows them: a body whose last
    /// coding is unknown (`Content-Encoding: arizona`, or `gzip, br`) is passed on exactly as it
    /// came, with its `Content-Encoding` and `Content-Length`, as curl does — the caller sees
    /// what the server sent, and a cache stores it that way. Known codings applied after an
    /// unknown one are undone, and the unknown ones stay in `Content-Encoding`.
    static func decode(
        _ body: ResponseBodyStream, head: HTTPResponse, policy: DecompressionPolicy, decodedLimit: Int?
    ) throws(APIError) -> (ResponseBodyStream, HTTPResponse) {
        guard policy.isEnabled else { return (body, head) }
        let encodings = head.headerFields[values: .contentEncoding]
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
        // The trailing run of codings Callsign can undo; what comes before it stays encoded.
        let undoable = Array(encodings.reversed().prefix { decodable.contains($0) })
        guard !undoable.isEmpty else { return (body, head) }
        guard undoable.count <= policy.maximumEncodings else {
            throw APIError(
                .invalidResponse,
                localized: "the body has \(encodings.count) stacked content encodings (\(encodings.joined(separator: ", "))); at most \(policy.maximumEncodings) are decoded")
        }
        var decoded = body
        for encoding in undoable {
            decoded = ResponseBodyStream(
                InflatingSequence(base: decoded, encoding: encoding, limit: decodedLimit, maximumRatio: policy.maximumRatio))
        }
        var head = head
        let remaining = encodings.dropLast(undoable.count)
        head.headerFields[.contentEncoding] = remaining.isEmpty ? nil : remaining.joined(separator: ", ")
        head.headerFields[.contentLength] = nil
        return (decoded, head)
    }
}

/// A body stream, inflated chunk by chunk with zlib.
struct InflatingSequence: AsyncSequence, Sendable {
    typealias Element = Data
    let base: ResponseBodyStream
    let encoding: String
    let limit: Int?
    let maximumRatio: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        var source: ResponseBodyStream.AsyncIterator
        let inflater: Inflater
        var finished = false

        mutating func next() async throws -> Data? {
            while !finished {
                guard let chunk = try await source.next() else {
                    finished = true
                    try inflater.finish()
                    return nil
                }
                let output = try inflater.inflate(chunk)
                if !output.isEmpty { return output }
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(
            source: base.makeAsyncIterator(), inflater: Inflater(encoding: encoding, limit: limit, maximumRatio: maximumRatio))
    }
}

/// One zlib inflate stream. Lives inside one iterator; never shared.
final class Inflater {
    private var stream = z_stream()
    private var initialized = false
    private var ended = false
    private let encoding: String
    private let limit: Int?
    private let maximumRatio: Int
    private var consumed = 0
    private var produced = 0
    /// For `deflate`: whether we fell back to a raw stream (servers that omit the zlib header).
    private var triedRaw = false
    private var pendingForRawRetry = Data()

    init(encoding: String, limit: Int?, maximumRatio: Int) {
        self.encoding = encoding
        self.limit = limit
        self.maximumRatio = maximumRatio
    }

    deinit {
        if initialized { inflateEnd(&stream) }
    }

    private func start(raw: Bool) throws(APIError) {
        if initialized { inflateEnd(&stream) }
        stream = z_stream()
        // 15 + 16: a gzip header; 15: a zlib header ("deflate"); -15: raw deflate.
        let windowBits: Int32 = raw ? -15 : (encoding == "deflate" ? 15 : 15 + 16)
        let status = inflateInit2_(&stream, windowBits, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw APIError(.invalidResponse, localized: "zlib could not start (\(status))") }
        initialized = true
    }

    /// Inflates one compressed chunk; returns what it decoded.
    func inflate(_ input: Data) throws(APIError) -> Data {
        if !initialized { try start(raw: false) }
        if ended {
            // Bytes after the end of the stream: gzip allows concatenated members.
            guard encoding != "deflate", !input.isEmpty else { return Data() }
            try start(raw: false)
            ended = false
        }
        consumed += input.count
        let mayRetryRaw = encoding == "deflate" && !triedRaw && produced == 0
        if mayRetryRaw { pendingForRawRetry.append(input) }
        var output = Data()
        var failure: APIError?
        var status: Int32 = Z_OK
        var input = input
        input.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
            stream.next_in = raw.bindMemory(to: Bytef.self).baseAddress
            stream.avail_in = uInt(raw.count)
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let written = buffer.withUnsafeMutableBufferPointer { out -> Int in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    status = CCallsignZlib.inflate(&stream, Z_NO_FLUSH)
                    return out.count - Int(stream.avail_out)
                }
                guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else { return }
                output.append(contentsOf: buffer[0..<written])
                produced += written
                if let problem = limitProblem() {
                    failure = problem
                    return
                }
                if status == Z_STREAM_END {
                    ended = true
                    return
                }
                // Done with this chunk when zlib has consumed it and has no more output pending.
                if stream.avail_in == 0 && stream.avail_out > 0 { return }
                if status == Z_BUF_ERROR { return }
            }
        }
        stream.next_in = nil
        if let failure { throw failure }
        if status == Z_DATA_ERROR, mayRetryRaw {
            // Some servers send raw deflate under "deflate": try again without the zlib header.
            triedRaw = true
            try start(raw: true)
            let replay = pendingForRawRetry
            pendingForRawRetry = Data()
            consumed -= replay.count
            return try inflate(replay)
        }
        guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
            throw APIError(.invalidResponse, localized: "the \(encoding) body is corrupt (zlib \(status): \(message()))")
        }
        if produced > 0 { pendingForRawRetry = Data() }
        return output
    }

    /// Called at the end of the compressed bytes: a stream that did not reach its end was cut.
    func finish() throws(APIError) {
        // An empty body, or one whose stream reached its end, is complete.
        guard initialized, !ended else { return }
        throw APIError(.invalidResponse, localized: "the \(encoding) body ended before its compressed stream did (truncated)")
    }

    private func limitProblem() -> APIError? {
        if let limit, produced > limit {
            return APIError(.responseTooLarge, localized: "the \(encoding) body decodes to more than the limit of \(limit) bytes")
        }
        if produced > ContentDecoding.ratioFloor, produced / max(consumed, 1) > maximumRatio {
            return APIError(
                .responseTooLarge,
                localized: "the \(encoding) body expands more than \(maximumRatio)× (\(consumed) bytes became more than \(produced)); refused as a decompression bomb")
        }
        return nil
    }

    private func message() -> String {
        stream.msg.map { String(cString: $0) } ?? "no detail"
    }
}
