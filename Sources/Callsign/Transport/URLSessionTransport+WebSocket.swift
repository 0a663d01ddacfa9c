// Apple platforms only: FoundationNetworking refuses WebSockets (its stub is in
// URLSessionTransport.swift). A thin adapter; keep-alive and reconnection are `WebSocket`'s.
#if !canImport(FoundationNetworking)
import Foundation
import Synchronization

extension URLSessionTransport {
    /// Opens a WebSocket on `session`, whose delegate answers the handshake's challenges (proxy,
    /// trust roots, pins, client certificate) as for any task. An open connection comes back with
    /// its `101`; any other answer (a 401, a 404) as a head with an empty body, for the pipeline
    /// to decide on.
    ///
    /// The session's delegate is no `URLSessionWebSocketDelegate`, so the open is learnt from a
    /// ping sent right after `resume()`: URLSession holds it until the handshake is done, and its
    /// pong is the open. The wait is filed with the delegate as a data task's head is, so that the
    /// task's failure, a server refused by the trust check, the deadline and a cancellation end it
    /// as they end any request's.
    static func openWebSocket(
        _ request: URLRequest, upgrade: WebSocketUpgrade, in session: URLSession, delegate: SessionDelegate, until deadline: ContinuousClock.Instant?
    ) async throws -> TransportResponse {
        var request = request
        if !upgrade.protocols.isEmpty {
            request.setValue(upgrade.protocols.joined(separator: ", "), forHTTPHeaderField: "Sec-WebSocket-Protocol")
        }
        let box = WebSocketTaskBox(task: session.webSocketTask(with: request))
        box.task.maximumMessageSize = upgrade.maximumMessageSize
        let identifier = box.task.taskIdentifier
        let timer = deadline.map { deadline in
            ExpiryTimers.shared.schedule(at: deadline) { if delegate.expire(identifier) { box.task.cancel() } }
        }
        defer { timer?.cancel() }
        let response: HTTPURLResponse
        do {
            response = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (open: CheckedContinuation<HTTPURLResponse, any Error>) in
                    delegate.register(identifier, head: open, body: AsyncThrowingStream<Data, any Error>.makeStream().continuation)
                    if Task.isCancelled {
                        delegate.abandon(identifier)
                        box.task.cancel()
                        return
                    }
                    box.task.resume()
                    box.task.sendPing { error in
                        // Resumed by whoever takes the wait out of the table: this, or the task's end.
                        guard case .streaming(let head?, _)? = delegate.pending.withLock({ $0.removeValue(forKey: identifier) }) else { return }
                        if let error {
                            // A refused server is recorded before its challenge is cancelled.
                            let refusal: (any Error)? = delegate.refusals.withLock { $0.removeValue(forKey: identifier) }
                            head.resume(throwing: refusal ?? error)
                        } else if let response = box.task.response as? HTTPURLResponse {
                            head.resume(returning: response)
                        } else {
                            head.resume(throwing: SessionDelegate.noResponse)
                        }
                    }
                }
            } onCancel: {
                delegate.abandon(identifier)
                box.task.cancel()
            }
        } catch {
            // A handshake the server answered otherwise is an answer (a 401 refreshes the token);
            // a refused server has no response.
            guard !(error is CancellationError || error is Deadline.Expired),
                let answer = box.task.response as? HTTPURLResponse, answer.statusCode != 101
            else { throw error }
            return TransportResponse(head: try Self.head(of: answer), body: .empty)
        }
        let chosen = response.value(forHTTPHeaderField: "Sec-WebSocket-Protocol")?.trimmingCharacters(in: .whitespaces)
        let subprotocol = chosen?.isEmpty == false ? chosen : nil
        // From here a throw drops the connection, whose deinit closes the task.
        let connection = URLSessionWebSocketConnection(box, subprotocol: subprotocol, maximumMessageSize: upgrade.maximumMessageSize)
        try Task.checkCancellation()
        if let subprotocol, !upgrade.protocols.contains(subprotocol) {
            await connection.close(WebSocketClose(.protocolError))
            let shown = String(subprotocol.unicodeScalars.prefix(80).filter { $0.isASCII && $0.value >= 0x20 }.map(Character.init))
            throw APIError.notSent(.invalidResponse, "the server chose the WebSocket subprotocol \"\(shown)\", which was not offered")
        }
        var answer = TransportResponse(head: try Self.head(of: response), body: .empty)
        answer.webSocket = connection
        return answer
    }
}

/// A WebSocket task shared between the calling task and URLSession's callbacks. Safe to share:
/// its one stored property is a `let`, and `URLSessionTask` synchronises its own state (Foundation
/// documents its methods as callable from any thread). Recent SDKs declare the task `Sendable`
/// themselves; the box keeps this compiling without a warning where they do not.
struct WebSocketTaskBox: @unchecked Sendable {
    let task: URLSessionWebSocketTask
}

/// An open WebSocket on a `URLSessionWebSocketTask`. URLSession joins fragments, answers pings
/// and bounds a message by `maximumMessageSize`; this adds what ``WebSocketConnection`` promises:
/// a close told once, and a receive that cancellation ends at once, without closing the
/// connection or losing a message.
final class URLSessionWebSocketConnection: WebSocketConnection {
    private let box: WebSocketTaskBox
    /// The subprotocol the server chose, from its `Sec-WebSocket-Protocol`.
    let subprotocol: String?
    /// The largest message the server may send, for the error that says so.
    private let maximumMessageSize: Int
    /// The close and the receive's waiters.
    private let state = Mutex(State())

    /// What the connection knows, under one lock.
    private struct State {
        /// How the connection closed, told once: the first close recorded stays.
        var closeReason: WebSocketClose?
        /// Whether the task's one `receive` is under way.
        var receiving = false
        /// What that receive brought after its caller was cancelled: the next call's answer.
        var ready: Result<WebSocketMessage?, any Error>?
        /// The calls waiting for it, oldest first (one, as the protocol asks).
        var waiters: [(id: UInt64, continuation: CheckedContinuation<WebSocketMessage?, any Error>)] = []
        /// The last waiting call's identifier, for its cancellation to find it.
        var lastWaiter: UInt64 = 0
    }

    /// A connection on an open task.
    init(_ box: WebSocketTaskBox, subprotocol: String?, maximumMessageSize: Int) {
        self.box = box
        self.subprotocol = subprotocol
        self.maximumMessageSize = maximumMessageSize
    }

    deinit {
        // A connection dropped without a close: the task would stay open in the session.
        box.task.cancel(with: .goingAway, reason: nil)
    }

    /// How the connection closed; `nil` while it is open.
    var closeReason: WebSocketClose? { state.withLock { $0.closeReason } }

    /// The server's next message. URLSession cannot take back a `receive`: a cancelled call
    /// leaves the one under way running, and what it brings is kept for the next call.
    func receive() async throws -> WebSocketMessage? {
        let id = state.withLock { state in
            state.lastWaiter += 1
            return state.lastWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<WebSocketMessage?, any Error>) in
                enum Step { case answer(Result<WebSocketMessage?, any Error>), wait, start }
                let step = state.withLock { state -> Step in
                    if Task.isCancelled { return .answer(.failure(CancellationError())) }
                    if let ready = state.ready {
                        state.ready = nil
                        return .answer(ready)
                    }
                    if state.closeReason != nil, !state.receiving { return .answer(.success(nil)) }
                    state.waiters.append((id, waiter))
                    guard !state.receiving else { return .wait }
                    state.receiving = true
                    return .start
                }
                switch step {
                case .answer(let result): waiter.resume(with: result)
                case .wait: break
                case .start: receiveNext()
                }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0).continuation }
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Starts the task's `receive`; its answer goes to the oldest waiting call, or is kept.
    private func receiveNext() {
        box.task.receive { [weak self] result in
            guard let self else { return }
            let answer = self.answer(to: result)
            let (waiter, more) = self.state.withLock { state -> (CheckedContinuation<WebSocketMessage?, any Error>?, Bool) in
                guard !state.waiters.isEmpty else {
                    state.receiving = false
                    state.ready = answer
                    return (nil, false)
                }
                let waiter = state.waiters.removeFirst().continuation
                state.receiving = !state.waiters.isEmpty
                return (waiter, state.receiving)
            }
            waiter?.resume(with: answer)
            if more { self.receiveNext() }
        }
    }

    /// A receive's result as the protocol tells it: a message; `nil` once the connection has
    /// ended, its close recorded; an error, the connection closed first, for a message too large.
    private func answer(to result: Result<URLSessionWebSocketTask.Message, any Error>) -> Result<WebSocketMessage?, any Error> {
        switch result {
        case .success(let message):
            // Read with `if case`: no `switch` whose exhaustiveness depends on the SDK.
            if case .string(let text) = message { return .success(.text(text)) }
            if case .data(let data) = message { return .success(.binary(data)) }
            return .failure(failing(WebSocketClose(.unsupportedData), "the server sent a WebSocket message of a kind URLSession does not name"))
        case .failure(let error):
            guard Self.isTooLarge(error) else {
                ended()
                return .success(nil)
            }
            return .failure(
                failing(WebSocketClose(.messageTooBig), "the server sent a WebSocket message larger than \(maximumMessageSize) bytes", code: .responseTooLarge))
        }
    }

    /// Whether URLSession failed a receive for a message past `maximumMessageSize`: it reports
    /// POSIX `EMSGSIZE` ("Message too long"), itself or as the underlying error.
    private static func isTooLarge(_ error: any Error) -> Bool {
        let error = error as NSError
        return [error, error.userInfo[NSUnderlyingErrorKey] as? NSError].contains {
            $0?.domain == NSPOSIXErrorDomain && $0?.code == Int(EMSGSIZE)
        }
    }

    /// Sends one message; once the connection is closed, throws its close.
    func send(_ message: WebSocketMessage) async throws {
        if let close = closeReason { throw Self.closed(close) }
        do {
            switch message {
            case .text(let text): try await box.task.send(.string(text))
            case .binary(let data): try await box.task.send(.data(data))
            }
        } catch {
            throw Self.closed(ended(), after: error)
        }
    }

    /// Sends a ping and waits for its pong (the first report counts, should URLSession make two);
    /// cancellation ends the wait at once.
    func ping() async throws {
        if let close = closeReason { throw Self.closed(close) }
        let pong = PongWaiter()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                pong.set(continuation)
                if Task.isCancelled {
                    pong.resume(with: .failure(CancellationError()))
                    return
                }
                box.task.sendPing { error in
                    pong.resume(with: error.map { .failure(Self.closed(self.ended(), after: $0)) } ?? .success(()))
                }
            }
        } onCancel: {
            pong.resume(with: .failure(CancellationError()))
        }
    }

    /// Sends `close` (its code, or 1000 for one a close frame may not carry) and ends the task;
    /// URLSession finishes the closing handshake. A receive under way then returns `nil`.
    func close(_ close: WebSocketClose) async {
        record(close)
        let code: URLSessionWebSocketTask.CloseCode =
            close.code.maySend ? URLSessionWebSocketTask.CloseCode(rawValue: Int(close.code.rawValue)) ?? .normalClosure : .normalClosure
        let reason = close.wireReason
        box.task.cancel(with: code, reason: reason.isEmpty ? nil : Data(reason.utf8))
    }

    /// Records how the task ended, unless a close was recorded first — the server's close
    /// frame (its reason bounded, as outside data), else a broken connection — and returns the
    /// close recorded.
    @discardableResult
    private func ended() -> WebSocketClose {
        let task = box.task
        guard task.closeCode != .invalid else {
            task.cancel()
            return record(WebSocketClose(.abnormalClosure))
        }
        let reason = task.closeReason.map { String(decoding: $0.prefix(123), as: UTF8.self) } ?? ""
        var close = WebSocketClose(.init(rawValue: UInt16(clamping: task.closeCode.rawValue)), reason: reason)
        close.reason = close.wireReason
        return record(close)
    }

    /// Closes the connection with `close`, for a server that broke a bound or the protocol, and
    /// returns the error that says so.
    private func failing(_ close: WebSocketClose, _ message: LocalizedMessage, code: APIError.Code = .webSocketClosed) -> APIError {
        record(close)
        box.task.cancel(with: URLSessionWebSocketTask.CloseCode(rawValue: Int(close.code.rawValue)) ?? .policyViolation, reason: nil)
        return APIError.webSocket(close, message, code: code)
    }

    /// Records `close` unless one was recorded first; returns the one recorded.
    @discardableResult
    private func record(_ close: WebSocketClose) -> WebSocketClose {
        state.withLock { state in
            if state.closeReason == nil { state.closeReason = close }
            return state.closeReason ?? close
        }
    }

    /// The error of a call on a closed connection.
    private static func closed(_ close: WebSocketClose, after error: (any Error)? = nil) -> APIError {
        var closed = APIError.webSocket(close, "the WebSocket is closed (\(close))")
        closed.underlyingError = error
        return closed
    }
}

/// A continuation resumed once, by whoever takes it first.
private final class PongWaiter: Sendable {
    /// The continuation, until it is taken.
    private let continuation = Mutex<CheckedContinuation<Void, any Error>?>(nil)

    /// Files the continuation to resume.
    func set(_ continuation: CheckedContinuation<Void, any Error>) {
        self.continuation.withLock { $0 = continuation }
    }

    /// Resumes the continuation with `result`, unless it was resumed.
    func resume(with result: Result<Void, any Error>) {
        let taken = continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        taken?.resume(with: result)
    }
}
#endif
