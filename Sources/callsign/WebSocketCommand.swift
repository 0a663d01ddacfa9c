import ArgumentParser
import Callsign
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `callsign ws URL`: a WebSocket through the same client as every other command — credentials,
/// headers, proxy and TLS options, time limits for the handshake. Each line of standard input
/// goes as a text message; each message that arrives is printed on a line of its own.
struct WebSocketCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ws",
        abstract: localized("Open a WebSocket: send each line of standard input, print each message that arrives."),
        discussion: localized("""
            Examples:
              callsign ws wss://echo.example.com/chat
              echo '{"op":"subscribe"}' | callsign ws wss://stream.example.com/feed --bearer-env TOKEN --protocol v2

            Each line of standard input is sent as a text message; when standard input ends, the socket \
            is closed (1000) and the messages still on their way are printed. Text messages are printed \
            as they are (control characters escaped on a terminal); a binary message is shown as its size \
            on a terminal and written as it is to a pipe. A connection that breaks is made again, with \
            the credentials refreshed, unless --no-reconnect. Exit status 0 when the socket closed \
            normally; otherwise the error is printed.
            """))

    @Argument(help: .localized("A ws://, wss://, http:// or https:// URL; without a scheme, ws:// is meant."))
    var url: String

    @Option(name: .customLong("protocol"), help: .localized("A subprotocol to offer (Sec-WebSocket-Protocol). Repeatable, most preferred first."))
    var protocols: [String] = []

    @Flag(help: .localized("End when the connection breaks, instead of making it again."))
    var noReconnect = false

    @Option(help: .localized("Seconds to wait, once standard input ends, for the server's close answer and the messages before it. Default 10."))
    var closeTimeout: Double = 10

    @OptionGroup var headers: HeaderOption
    @OptionGroup var clientOptions: ClientOptions

    func validate() throws {
        // `!(… && …)` refuses NaN too.
        guard closeTimeout >= 0 && closeTimeout <= ClientOptions.longestLimit else {
            throw ValidationError(localized("--close-timeout takes 0 to 86400 seconds"))
        }
    }

    func run() async throws {
        try await reportingErrors {
            let target = try Self.target(url)
            let explicit = try clientOptions.credentials.authentication(sendingTo: target)
            var configuration = APIClient.Configuration()
            try clientOptions.configure(&configuration, definitions: nil, explicit: explicit)
            var request = Request.get(target)
            request.headers = request.headers.merging(try headers.given())
            if explicit != nil { request.needsAuthorization = true }
            _ = clientOptions.limit(&request, configuration: &configuration, says: false)
            var options = WebSocketOptions(protocols: protocols)
            if noReconnect { options.reconnection = .never }
            options.closeTimeout = .milliseconds(Int64((min(max(closeTimeout, 0), ClientOptions.longestLimit) * 1000).rounded()))
            let socket = try await APIClient(configuration: configuration).webSocket(request, options: options)
            try await Self.converse(on: socket)
        }
    }

    /// Standard input out, messages in, until the socket ends.
    static func converse(on socket: WebSocket) async throws {
        let terminal = isatty(STDOUT_FILENO) == 1
        /// Which side ended.
        enum Ended { case input, messages }
        try await withThrowingTaskGroup(of: Ended.self) { group in
            group.addTask {
                for await line in StandardInputLines.read() {
                    try await socket.send(.text(line))
                }
                // Standard input ended: the server's close answer ends the messages.
                await socket.close()
                return .input
            }
            group.addTask {
                for try await message in socket.messages {
                    switch message {
                    case .text(let text):
                        if terminal { Terminal.out(text) } else { Terminal.write(Data((text + "\n").utf8)) }
                    case .binary(let data):
                        if terminal {
                            Terminal.out(localized("[binary message of \(data.count) bytes not shown on a terminal: use a pipe]"))
                        } else {
                            Terminal.write(data + Data("\n".utf8))
                        }
                    }
                }
                return .messages
            }
            // The messages end (or fail) when the socket does: nothing more to send then. The end
            // of standard input only closes the socket; its last messages are still printed.
            while let ended = try await group.next() {
                if ended == .messages { group.cancelAll() }
            }
        }
    }

    /// The URL of the handshake: `ws`/`wss` written as `http`/`https` (the origin credentials are
    /// checked against), any other scheme refused, and the rest as every command reads a URL
    /// (``AdHocCall/target(_:base:)``: no scheme is `http://`, `:8080/…` is localhost's).
    static func target(_ text: String) throws(APIError) -> String {
        let handshake = WebSocketScheme.http(text)
        if handshake != text { return handshake }
        if text.contains("://"), !AdHocCall.isAbsolute(text) {
            throw cliError(.invalidRequest, "\(text): a WebSocket URL starts with ws://, wss://, http:// or https://")
        }
        return try AdHocCall.target(text, base: nil)
    }
}

/// `read(2)`, named apart from ``StandardInputLines/read()``.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

/// Standard input as lines, read on a thread of their own (a terminal or a pipe blocks until a
/// line comes), each read once the one before was taken: memory holds a line or two, each at
/// most ``limit`` bytes (a longer one goes in pieces of that size).
struct StandardInputLines: AsyncSequence, Sendable {
    /// The longest line: a WebSocket message is at most 16 MiB by default.
    static let limit = 16 << 20

    private let lines: AsyncStream<String>
    /// Signalled each time a line is taken: the reading thread waits for it before the next.
    private let taken: DispatchSemaphore

    /// Starts reading standard input.
    static func read() -> StandardInputLines {
        let (lines, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingOldest(1))
        let taken = DispatchSemaphore(value: 0)
        continuation.onTermination = { _ in taken.signal() }
        Thread.detachNewThread {
            var pending = Data()
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            func hand(_ line: Data) -> Bool {
                var line = line
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                guard case .enqueued = continuation.yield(String(decoding: line, as: UTF8.self)) else { return false }
                taken.wait()
                return true
            }
            reading: while true {
                let count = buffer.withUnsafeMutableBytes { systemRead(STDIN_FILENO, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                pending.append(contentsOf: buffer[0..<count])
                // The lines of this read are handed from where the last one ended; what is left
                // moves to the front once per read, not once per line.
                var start = pending.startIndex
                while let end = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                    guard hand(Data(pending[start..<end])) else { break reading }
                    start = end + 1
                }
                pending.removeSubrange(pending.startIndex..<start)
                while pending.count > limit {
                    guard hand(Data(pending.prefix(limit))) else { break reading }
                    pending.removeSubrange(pending.startIndex..<pending.startIndex + limit)
                }
            }
            if !pending.isEmpty { _ = hand(pending) }
            continuation.finish()
        }
        return StandardInputLines(lines: lines, taken: taken)
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: lines.makeAsyncIterator(), taken: taken) }

    /// The next line; the reading thread goes on once it is taken.
    struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<String>.AsyncIterator
        let taken: DispatchSemaphore

        mutating func next() async -> String? {
            let line = await base.next()
            if line != nil { taken.signal() }
            return line
        }
    }
}
