public import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A TCP server on 127.0.0.1 that writes exactly the bytes a test scripts: malformed heads,
/// conflicting lengths, floods, bombs, resets and silences that a well-behaved HTTP server
/// (such as ``TestServer``) can never produce.
///
/// Each connection first reads the request head (up to the blank line), then plays the
/// script, then closes. The script may differ per connection:
///
/// ```swift
/// try await RawServer.withRunning([
///     .write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello"),
/// ]) { server in
///     await #expect(throws: APIError.self) { try await client.send(.get(server.url("/x").absoluteString)) }
/// }
/// ```
public final class RawServer: StoppableServer {
    /// One step of a script.
    public enum Step: Sendable {
        /// Writes these bytes at once.
        case bytes([UInt8])
        /// Writes `count` copies of `bytes`, in writes of about 64 KiB (a flood without holding it whole).
        case repeated([UInt8], count: Int)
        /// Writes the bytes one at a time, `interval` apart (a server that drips).
        case drip([UInt8], interval: Duration)
        /// Waits before the next step.
        case pause(Duration)
        /// Closes the connection with a TCP reset (RST) instead of a normal close.
        case reset
        /// Never answers: keeps the connection open until the client closes it or the server stops.
        case hang

        /// Writes the UTF-8 bytes of `text` at once.
        public static func write(_ text: String) -> Step { .bytes(Array(text.utf8)) }
    }

    /// The script played on the `n`-th connection (0-based).
    public typealias Script = @Sendable (_ connection: Int) -> [Step]

    /// The port the operating system chose.
    public let port: Int
    /// `http://127.0.0.1:port/`.
    public let baseURL: URL

    private let listener: LoopbackListener
    private let script: Script
    private let waitsForRequest: Bool

    /// How many connections the server has accepted.
    public var connectionCount: Int { listener.acceptedCount }

    /// Starts a server that plays `script` on every connection.
    public static func start(_ script: [Step], waitsForRequest: Bool = true) async throws -> RawServer {
        try await start(waitsForRequest: waitsForRequest) { _ in script }
    }

    /// Starts a server that plays `script(n)` on the `n`-th connection.
    ///
    /// - Parameters:
    ///   - waitsForRequest: whether each connection first reads a request head (up to
    ///     its blank line) before the script plays. `false` plays at once — for a client that
    ///     speaks first in another protocol, such as a TLS handshake. Default `true`.
    ///   - script: the steps to play on each connection, given its number (0-based).
    public static func start(waitsForRequest: Bool = true, script: @escaping Script) async throws -> RawServer {
        let server = RawServer(listener: try await LoopbackListener(what: "raw server"), script: script, waitsForRequest: waitsForRequest)
        server.serve()
        return server
    }

    /// Starts a server, runs `body` with it, and stops it whether `body` returns or throws.
    public static func withRunning<T>(
        _ script: [Step], waitsForRequest: Bool = true, _ body: (RawServer) async throws -> T
    ) async throws -> T {
        try await withRunning(waitsForRequest: waitsForRequest, script: { _ in script }, body)
    }

    /// Starts a server with a per-connection script, runs `body`, and stops it on every path.
    public static func withRunning<T>(
        waitsForRequest: Bool = true, script: @escaping Script, _ body: (RawServer) async throws -> T
    ) async throws -> T {
        try await runThenStop(try await start(waitsForRequest: waitsForRequest, script: script), body)
    }

    private init(listener: LoopbackListener, script: @escaping Script, waitsForRequest: Bool) {
        self.listener = listener
        self.waitsForRequest = waitsForRequest
        self.port = listener.port
        self.baseURL = URL(string: "http://127.0.0.1:\(listener.port)/") ?? URL(fileURLWithPath: "/")
        self.script = script
    }

    /// `baseURL` with `path` appended.
    public func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path.hasPrefix("/") ? path : "/" + path)") ?? baseURL
    }

    /// Stops accepting connections and ends the open ones.
    public func stop() async {
        await listener.stop()
    }

    private func serve() {
        listener.serve { [self] index, connection in
            await Self.play(script(index), on: connection, waitingForRequest: waitsForRequest)
        }
    }

    private static func play(_ steps: [Step], on connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, waitingForRequest: Bool) async {
        let raw = connection.channel
        do {
            try await connection.executeThenClose { inbound, outbound in
                var reader = inbound.makeAsyncIterator()
                if waitingForRequest { try await readHead(&reader) }
                for step in steps {
                    switch step {
                    case .bytes(let bytes):
                        try await outbound.write(ByteBuffer(bytes: bytes))
                    case .repeated(let bytes, let count):
                        try await writeRepeated(bytes, count: count, to: outbound)
                    case .drip(let bytes, let interval):
                        for byte in bytes {
                            try await outbound.write(ByteBuffer(bytes: [byte]))
                            try await Task.sleep(for: interval)
                        }
                    case .pause(let duration):
                        try await Task.sleep(for: duration)
                    case .reset:
                        try? await (raw as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
                        try? await raw.close()
                        return
                    case .hang:
                        // Until the client gives up (its end closes) or the server stops (cancellation).
                        while try await reader.next() != nil {}
                        return
                    }
                }
            }
        } catch {
            // The client went away or the server is stopping: nothing to report.
        }
    }

    /// Reads until the end of a request head (`\r\n\r\n`), or until the client closes.
    private static func readHead(_ reader: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) async throws {
        let end = Array("\r\n\r\n".utf8)
        var tail: [UInt8] = []  // the last bytes seen, so a blank line split across reads is found
        while let buffer = try await reader.next() {
            let window = tail + buffer.readableBytesView
            if window.count >= 4, (0...(window.count - 4)).contains(where: { window[$0..<($0 + 4)].elementsEqual(end) }) { return }
            tail = Array(window.suffix(3))
        }
    }

    private static func writeRepeated(_ bytes: [UInt8], count: Int, to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) async throws {
        guard !bytes.isEmpty, count > 0 else { return }
        let perWrite = max(1, 65_536 / bytes.count)
        var chunk = ByteBuffer()
        for _ in 0..<min(perWrite, count) { chunk.writeBytes(bytes) }
        var remaining = count
        while remaining >= perWrite {
            try await outbound.write(chunk)
            remaining -= perWrite
        }
        if remaining > 0 {
            var last = ByteBuffer()
            for _ in 0..<remaining { last.writeBytes(bytes) }
            try await outbound.write(last)
        }
    }
}

extension RawServer {
    /// `data` gzip-compressed, for scripted `Content-Encoding: gzip` bodies (and bombs:
    /// `RawServer.gzip(Data(count: 64 << 20))` is about 64 KiB on the wire).
    public static func gzip(_ data: Data) -> Data? {
        Compression.compress(data, format: .gzip)
    }
}
