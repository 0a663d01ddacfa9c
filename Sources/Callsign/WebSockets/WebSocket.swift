import Foundation
import Synchronization

/// A WebSocket opened through the client (``APIClient/webSocket(_:options:)``): its handshake
/// went through the whole pipeline — authentication and its refresh, common headers, client
/// info, cookies, recording — and so does every reconnection.
///
/// ```swift
/// let socket = try await client.webSocket(.get("wss://chat.example.com/live"))
/// try await socket.send(.text("hello"))
/// for try await message in socket.messages {
///     print(message.text ?? "\(message.count) bytes")
/// }
/// ```
///
/// - ``messages`` are the server's messages in order, whole; iterate them once. The sequence
///   ends when the server closes normally (1000) or ``close(_:)`` is called, and throws
///   ``APIError`` when the socket ends otherwise. Cancelling the task that reads closes the socket.
/// - ``send(_:)`` may be called from any task. While a connection is being made again it keeps
///   the message (up to ``WebSocketOptions/outgoingBufferSize``) and sends it once the connection
///   is back, after ``WebSocketOptions/onReconnect``.
/// - A ping goes out every ``WebSocketOptions/pingInterval``; when neither its pong nor any other
///   frame comes within ``WebSocketOptions/pongTimeout``, the connection counts as broken.
/// - A connection that breaks is made again as ``WebSocketOptions/reconnection`` says, found by
///   the reader, a failed send or a missing pong.
public final class WebSocket: Sendable {
    /// The options the socket was opened with.
    public let options: WebSocketOptions
    private let client: APIClient
    private let request: Request
    private let clock: any CallClock
    private let backOff: RetryPolicy
    private let state = Mutex(State())

    /// What ``WebSocketOptions/onReconnect`` gets: the new connection, before anything kept
    /// while it was made is sent.
    public struct Reconnected: Sendable {
        /// How many reconnections the socket has made, this one included.
        public let count: Int
        /// The answer to the new handshake (`101 Switching Protocols`).
        public let response: Response
        let connection: any WebSocketConnection

        /// Sends a message on the new connection, ahead of the messages kept meanwhile.
        public func send(_ message: WebSocketMessage) async throws(APIError) {
            do {
                try await connection.send(message)
            } catch {
                throw APIError.wrap(error, request: response.request)
            }
        }
    }

    private enum Phase {
        /// Sends go straight to the connection.
        case open(any WebSocketConnection)
        /// A connection is being made (again), or the kept messages are being sent: sends are kept.
        case waiting
        /// Over: normally (`nil`), or with this failure.
        case closed(APIError?)
    }

    private struct State {
        var phase: Phase = .waiting
        /// The current connection, also while its kept messages are sent.
        var connection: (any WebSocketConnection)?
        var response: Response?
        var outgoing: [WebSocketMessage] = []
        var outgoingBytes = 0
        var unsent: [WebSocketMessage] = []
        var reconnections = 0
        /// Reconnection attempts in a row without a connection that lasted: one that brought a
        /// message, or stayed open for the back-off's longest wait.
        var streak = 0
        var openedAt: ContinuousClock.Instant?
        var heard = false
        /// Why the keep-alive gave up on the current connection, if it did.
        var lost: APIError?
        var keepAlive: Task<Void, Never>?
        /// The one reconnection under way, which every reader, sender and ping waits for.
        var reconnecting: Task<Void, Never>?
        var isClosed: Bool {
            if case .closed = phase { return true }
            return false
        }
    }

    init(client: APIClient, request: Request, options: WebSocketOptions) {
        self.client = client
        self.request = request
        self.options = options
        self.clock = client.configuration.clock
        var backOff = options.reconnection.backOff ?? client.configuration.retry
        backOff.maximumAttempts = Int.max
        self.backOff = backOff
    }

    deinit {
        state.withLock { state in
            state.keepAlive?.cancel()
            state.reconnecting?.cancel()
        }
    }

    // MARK: - What users read

    /// The server's messages, whole and in order (see ``WebSocket``). Iterate it once.
    public var messages: Messages { Messages(socket: self) }

    /// The subprotocol the server chose for the current connection, if any.
    public var subprotocol: String? { state.withLock { $0.connection?.subprotocol } }

    /// The answer to the current connection's handshake (`101 Switching Protocols`).
    public var response: Response? { state.withLock { $0.response } }

    /// How many times the connection was made again.
    public var reconnections: Int { state.withLock { $0.reconnections } }

    /// The messages ``send(_:)`` kept while reconnecting that were never sent, because the socket
    /// closed for good first.
    public var unsentMessages: [WebSocketMessage] { state.withLock { $0.unsent } }

    /// How the socket ended: `nil` while it is open or reconnecting.
    public var closeReason: WebSocketClose? {
        state.withLock { state in
            guard case .closed(let failure) = state.phase else { return nil }
            return failure?.webSocketClose ?? state.connection?.closeReason ?? WebSocketClose(.normalClosure)
        }
    }

    /// The server's messages, as ``WebSocket/messages`` gives them.
    public struct Messages: AsyncSequence, Sendable {
        public typealias Element = WebSocketMessage
        public typealias Failure = APIError
        let socket: WebSocket

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(socket: socket) }

        /// Reads the next message, reconnecting as the options say.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let socket: WebSocket
            public mutating func next() async throws(APIError) -> WebSocketMessage? { try await socket.next() }
        }
    }

    // MARK: - Sending and closing

    /// Sends a message: at once while connected, else kept until the connection is back.
    ///
    /// ```swift
    /// try await socket.send(.text("ping"))
    /// try await socket.send(.binary(frame))
    /// try await socket.send(try .json(Subscribe(channel: "prices")))
    /// ```
    /// - Throws: ``APIError`` with ``APIError/Code/webSocketClosed`` when the socket is closed, or
    ///   while it reconnects with no room left in the outgoing buffer: that message was not sent.
    public func send(_ message: WebSocketMessage) async throws(APIError) {
        enum Route {
            case direct(any WebSocketConnection)
            case kept
            case refused(APIError)
        }
        let room = options.outgoingBufferSize
        let route = state.withLock { state -> Route in
            switch state.phase {
            case .open(let connection):
                return .direct(connection)
            case .waiting:
                guard state.outgoingBytes + message.count <= room else {
                    return .refused(
                        .webSocket(
                            WebSocketClose(.abnormalClosure),
                            "the WebSocket is reconnecting and its outgoing buffer (\(room) bytes) has no room for this message: it was not sent"))
                }
                state.outgoing.append(message)
                state.outgoingBytes += message.count
                return .kept
            case .closed(let failure):
                return .refused(Self.refusal(after: failure))
            }
        }
        switch route {
        case .kept:
            return
        case .refused(let failure):
            throw failure
        case .direct(let connection):
            do {
                try await connection.send(message)
            } catch {
                if Task.isCancelled { throw APIError(.cancelled, localized: "the call was cancelled", request: request) }
                // The connection broke under the message: kept for the next one, if there is one.
                await lost(connection, failure: APIError.wrap(error, request: request))
                try await send(message)
            }
        }
    }

    /// Closes the socket: a close frame with `close` (default 1000), the server's answer awaited
    /// a moment, no more reconnection. ``messages`` then gives what the server sent before its
    /// answer, and ends.
    ///
    /// ```swift
    /// await socket.close()
    /// await socket.close(WebSocketClose(.goingAway, reason: "signed out"))
    /// ```
    public func close(_ close: WebSocketClose = WebSocketClose(.normalClosure)) async {
        let (connection, tasks) = state.withLock { state -> ((any WebSocketConnection)?, [Task<Void, Never>]) in
            guard !state.isClosed else { return (nil, []) }
            state.phase = .closed(nil)
            state.unsent = state.outgoing
            let tasks = [state.keepAlive, state.reconnecting].compactMap { $0 }
            return (state.connection, tasks)
        }
        for task in tasks { task.cancel() }
        await connection?.close(close)
    }

    // MARK: - Connections

    /// Makes a connection through the pipeline and takes it as the current one: runs the
    /// reconnection hook, sends what was kept, starts the keep-alive.
    func connect(reconnection: Bool) async throws(APIError) {
        let (connection, response) = try await client.openWebSocket(request, upgrade: options.upgrade)
        let count = state.withLock { state -> Int? in
            guard !state.isClosed else { return nil }
            state.connection = connection
            state.response = response
            state.lost = nil
            state.openedAt = clock.now
            state.heard = false
            if reconnection { state.reconnections += 1 }
            return state.reconnections
        }
        guard let count else {
            await connection.close(WebSocketClose(.normalClosure))
            return
        }
        if reconnection, let hook = options.onReconnect {
            do {
                try await hook(Reconnected(count: count, response: response, connection: connection))
            } catch {
                let failure = APIError.wrap(error, request: request)
                finish(failure)
                await connection.close(WebSocketClose(.goingAway))
                throw failure
            }
        }
        // What was kept goes in order; sends made meanwhile join the end of the line.
        while true {
            let next = state.withLock { state -> WebSocketMessage? in
                guard !state.isClosed else { return nil }
                guard !state.outgoing.isEmpty else {
                    state.phase = .open(connection)
                    return nil
                }
                let message = state.outgoing.removeFirst()
                state.outgoingBytes -= message.count
                return message
            }
            guard let next else { break }
            do {
                try await connection.send(next)
            } catch {
                // Not sent: first in line again, for the next connection.
                state.withLock { state in
                    state.outgoing.insert(next, at: 0)
                    state.outgoingBytes += next.count
                }
                return
            }
        }
        startKeepAlive(on: connection)
    }

    /// Reads the next message (``Messages``).
    func next() async throws(APIError) -> WebSocketMessage? {
        while true {
            let (phase, connection, reconnecting) = state.withLock { ($0.phase, $0.connection, $0.reconnecting) }
            if case .closed(let failure) = phase {
                if let failure { throw failure }
                // Closed by ``close(_:)``: what the server sent before its close answer is still read.
                return try? await connection?.receive()
            }
            if let reconnecting {
                // A reader that stops closes the socket: the reconnection stops with it.
                await withTaskCancellationHandler { await reconnecting.value } onCancel: { reconnecting.cancel() }
                if Task.isCancelled { return try await cancelled() }
                continue
            }
            guard let connection else { return nil }
            let message: WebSocketMessage?
            do {
                message = try await connection.receive()
            } catch {
                if Task.isCancelled { return try await cancelled() }
                // The server broke a bound or the protocol: making it again would meet the same.
                let failure = APIError.wrap(error, request: request)
                finish(failure)
                throw failure
            }
            if let message {
                state.withLock { $0.heard = true }
                return message
            }
            let lost = state.withLock { $0.lost }
            let close = connection.closeReason ?? WebSocketClose(.abnormalClosure)
            if lost == nil, close.isNormal {
                finish(nil)
                return nil
            }
            await self.lost(connection, failure: lost ?? Self.closedFailure(close))
        }
    }

    /// The reading task was cancelled: the socket closes cleanly.
    private func cancelled() async throws(APIError) -> WebSocketMessage? {
        await close()
        throw APIError(.cancelled, localized: "the call was cancelled", request: request)
    }

    /// `connection` broke: made again (once, whoever noticed first) if the options allow,
    /// else the socket ends with `failure`. Returns once that is decided.
    private func lost(_ connection: any WebSocketConnection, failure: APIError) async {
        let close = failure.webSocketClose ?? connection.closeReason ?? WebSocketClose(.abnormalClosure)
        let reconnects = options.reconnection.maximumAttempts > 0 && (failure.code == .timedOut || WebSocketOptions.Reconnection.reconnects(after: close))
        let task = state.withLock { state -> Task<Void, Never>? in
            // Someone else noticed first, or the socket has moved on.
            guard !state.isClosed, let current = state.connection, current === connection else { return state.reconnecting }
            state.keepAlive?.cancel()
            state.keepAlive = nil
            state.connection = nil
            state.phase = .waiting
            if state.heard || state.openedAt.map({ clock.now - $0 >= backOff.maximumDelay }) == true { state.streak = 0 }
            guard reconnects else {
                state.phase = .closed(failure)
                state.unsent = state.outgoing
                return nil
            }
            let task = Task { [weak self] () async -> Void in await self?.reconnect(after: failure) }
            state.reconnecting = task
            return task
        }
        if !reconnects { await connection.close(close.code.maySend ? close : WebSocketClose(.goingAway)) }
        await task?.value
    }

    /// Makes the connection again, with back-off, up to the options' attempts in a row.
    private func reconnect(after failure: APIError) async {
        var last = failure
        var attempt = state.withLock { $0.streak }
        while attempt < options.reconnection.maximumAttempts, !Task.isCancelled {
            attempt += 1
            state.withLock { [attempt] in $0.streak = attempt }
            do {
                try await clock.sleep(for: backOff.delay(afterAttempt: attempt))
            } catch {
                break
            }
            do {
                try await connect(reconnection: true)
                state.withLock { $0.reconnecting = nil }
                return
            } catch {
                last = error
                if !Self.mayTryAgain(error) { break }
            }
        }
        if Task.isCancelled { return }
        var ending = last
        if attempt > 0 {
            ending.text = "the WebSocket could not be connected again (\(attempt) attempts): \(last.text)" as LocalizedMessage
        }
        finish(ending)
        state.withLock { $0.reconnecting = nil }
    }

    /// Ends the socket with `failure` (`nil`: normally), keeping what was never sent.
    private func finish(_ failure: APIError?) {
        state.withLock { state in
            guard !state.isClosed else { return }
            state.phase = .closed(failure)
            state.unsent = state.outgoing
            state.keepAlive?.cancel()
            state.keepAlive = nil
        }
    }

    /// Whether a failed handshake may be tried again: not for an answer that would come again
    /// (a 403, a 404, an untrusted certificate) or a request that cannot be made.
    static func mayTryAgain(_ error: APIError) -> Bool {
        let finalCodes: Set<APIError.Code> = [
            .cancelled, .invalidRequest, .invalidResponse, .authentication, .tls,
            .certificateUntrusted, .certificateExpired, .certificateHostMismatch, .certificatePinMismatch,
        ]
        if finalCodes.contains(error.code) { return false }
        if error.code == .unacceptableStatus, let status = error.statusCode { return status == 408 || status == 429 || status >= 500 }
        return true
    }

    /// The error for a socket that closed with `close` as its last word.
    static func closedFailure(_ close: WebSocketClose) -> APIError {
        .webSocket(close, "the WebSocket was closed: \(close.code)\(close.reason.isEmpty ? "" : " (\(close.reason.prefix(123)))")")
    }

    /// What ``send(_:)`` throws once the socket has ended.
    private static func refusal(after failure: APIError?) -> APIError {
        guard let failure else { return .webSocket(WebSocketClose(.normalClosure), "the WebSocket is closed") }
        var closed = APIError.webSocket(failure.webSocketClose ?? WebSocketClose(.abnormalClosure), "the WebSocket is closed: \(failure.text)")
        closed.underlyingError = failure
        return closed
    }

    // MARK: - Keep-alive

    /// Pings the connection every ``WebSocketOptions/pingInterval``; a pong later than
    /// ``WebSocketOptions/pongTimeout`` ends the connection as broken.
    private func startKeepAlive(on connection: any WebSocketConnection) {
        guard let interval = options.pingInterval else { return }
        let clock = self.clock
        let timeout = options.pongTimeout
        let task = Task { [weak self] in
            while !Task.isCancelled {
                do {
                    try await clock.sleep(for: interval)
                } catch {
                    return
                }
                let answered = await Self.pong(from: connection, within: timeout, clock: clock)
                guard !Task.isCancelled else { return }
                switch answered {
                case .some(true): continue
                case .some(false):
                    guard let self else { return }
                    let failure = APIError(.timedOut, localized: "no pong came from the WebSocket server within \(timeout)", request: request)
                    state.withLock { $0.lost = failure }
                    await connection.close(WebSocketClose(.goingAway, reason: "no pong"))
                    await lost(connection, failure: failure)
                    return
                case nil:
                    return  // the connection closed: the reader or a send takes it from there
                }
            }
        }
        state.withLock { state in
            if state.isClosed {
                task.cancel()
            } else {
                state.keepAlive = task
            }
        }
    }

    /// `true` when a pong came in time, `false` when it did not, `nil` when the connection closed.
    private static func pong(from connection: any WebSocketConnection, within timeout: Duration, clock: any CallClock) async -> Bool? {
        let answer = await clock.first(of: { () async -> Bool in
            do {
                try await connection.ping()
                return true
            } catch {
                return false
            }
        }, within: timeout)
        // No answer in time is `false`; a ping that failed because the connection closed, `nil`.
        return answer.map { $0 ? true : nil } ?? false
    }
}
