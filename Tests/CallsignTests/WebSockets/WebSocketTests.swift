import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

/// Hands out the tokens of a session that expires once: `t1`, then `t2` after a refresh.
private final class RotatingTokens: TokenProvider {
    let refreshes = Mutex(0)
    func initialToken() async throws -> AccessToken { AccessToken("t1") }
    func refreshToken(replacing stale: AccessToken) async throws -> AccessToken {
        refreshes.withLock { $0 += 1 }
        return AccessToken("t2")
    }
}

/// Reads every message of `socket` until it ends, and how it ended.
private func readAll(_ socket: WebSocket) async -> (messages: [WebSocketMessage], failure: APIError?) {
    var messages: [WebSocketMessage] = []
    do {
        for try await message in socket.messages { messages.append(message) }
        return (messages, nil)
    } catch {
        return (messages, error)
    }
}

@Suite("WebSockets through the client: the handshake through the pipeline, messages, keep-alive, reconnection", .hangGuard)
struct WebSocketTests {
    /// Long enough on a loaded machine; no test waits for it to pass.
    static let patient = APIClient.Configuration.Timeouts(attempt: .seconds(300), deadline: .seconds(300))
    /// For a test on a clock it moves itself: a deadline would be one more sleeper on that clock.
    static let patientWithoutDeadline = APIClient.Configuration.Timeouts(attempt: .seconds(300), deadline: nil)

    @Test("echo: text and binary, a subprotocol, the handshake's headers and the 101", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func echo() async throws {
        try await withServer(configure: { $0.timeouts = Self.patient; $0.headers["X-App"] = "tests" }) { server, client in
            let url = server.url("/ws/echo").absoluteString.replacingOccurrences(of: "http://", with: "ws://")
            let socket = try await client.webSocket(.get(url), options: WebSocketOptions(protocols: ["chat", "other"]))
            #expect(socket.subprotocol == "chat")
            #expect(socket.response?.status.code == 101)
            try await socket.send(.text("héllo"))
            try await socket.send(.binary(Data([0, 1, 2, 255])))
            try await socket.send(try .json(["n": 1]))
            var messages = socket.messages.makeAsyncIterator()
            #expect(try await messages.next() == .text("héllo"))
            #expect(try await messages.next() == .binary(Data([0, 1, 2, 255])))
            let decoded: [String: Int]? = try await messages.next()?.decode()
            #expect(decoded == ["n": 1])
            await socket.close()
            #expect(try await messages.next() == nil)
            #expect(socket.closeReason == WebSocketClose(.normalClosure))
            let handshake = try #require(server.requests.last { $0.rawPath == "/ws/echo" })
            #expect(handshake.header("X-App") == "tests")
            #expect(handshake.header("Sec-WebSocket-Protocol") == "chat, other")
            #expect(handshake.header("Upgrade")?.lowercased() == "websocket")
        }
    }

    @Test("1,000 messages each way arrive whole and in order", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func thousandInOrder() async throws {
        try await withServer(configure: { $0.timeouts = Self.patient }) { server, client in
            let socket = try await client.get("/ws/echo").webSocket()
            async let sent: Void = {
                for index in 0..<1_000 { try await socket.send(.text("message \(index) " + String(repeating: "x", count: index))) }
            }()
            var received: [String] = []
            for try await message in socket.messages {
                received.append(message.text ?? "")
                if received.count == 1_000 { break }
            }
            try await sent
            #expect(received == (0..<1_000).map { "message \($0) " + String(repeating: "x", count: $0) })
            await socket.close()
        }
    }

    @Test("a dropped connection is made again: the token refreshed, the app's resubscribe run once, kept messages sent after it", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func reconnectsWithFreshToken() async throws {
        let clock = TestClock(waitsForAdvance: true)
        let tokens = RotatingTokens()
        let connections = Mutex(0)
        let heard = Mutex<[String]>([])
        try await withServer(configure: {
            $0.timeouts = Self.patientWithoutDeadline
            $0.clock = clock
            $0.retry = RetryPolicy(maximumAttempts: 1, baseDelay: .seconds(1), maximumDelay: .seconds(8), jitter: .none)
            $0.authentication = .tokens(tokens)
        }) { server, client in
            // The first connection is taken with t1, the next ones only with t2: the session
            // expired while the socket was open.
            server.route("/ws/feed") { _ in ServerResponse(status: 401, headers: [("WWW-Authenticate", "Bearer")], body: .data(Data())) }
            server.webSocketRoute("/ws/feed", accepts: { request in
                let token = request.header("Authorization")
                return connections.withLock { $0 == 0 } ? token == "Bearer t1" : token == "Bearer t2"
            }) { socket in
                let number = connections.withLock { count in
                    count += 1
                    return count
                }
                if number == 1 {
                    // Once the client is talking (its first message, after the 101), one message and
                    // a connection that breaks without a close frame.
                    _ = try await socket.receive()
                    try await socket.send(.text("hello 1"))
                    await socket.drop()
                    return
                }
                try await socket.send(.text("hello \(number)"))
                while let message = try await socket.receive() {
                    heard.withLock { $0.append(message.text ?? "") }
                    try await socket.send(.text("ack \(message.text ?? "")"))
                }
            }
            let resubscribed = Mutex(0)
            var options = WebSocketOptions()
            options.pingInterval = nil
            options.onReconnect = { reconnected in
                resubscribed.withLock { $0 += 1 }
                #expect(reconnected.count == 1)
                try await reconnected.send(.text("subscribe"))
            }
            var request = Request.get("/ws/feed")
            request.needsAuthorization = true
            let socket = try await client.webSocket(request, options: options)
            try await socket.send(.text("ready"))
            // Four messages: the first connection's hello, then the second's and its two acks.
            let reader = Task { () async throws -> [WebSocketMessage] in
                var messages: [WebSocketMessage] = []
                for try await message in socket.messages {
                    messages.append(message)
                    if messages.count == 4 { break }
                }
                return messages
            }
            // The reader found the drop; the reconnection waits out its back-off on the clock.

            await clock.waitUntilSleeping()

            try await socket.send(.text("kept while away"))

            clock.advance(by: .seconds(60))
            let messages = try await reader.value

            await socket.close()
            #expect(messages == [.text("hello 1"), .text("hello 2"), .text("ack subscribe"), .text("ack kept while away")])
            #expect(heard.withLock { $0 } == ["subscribe", "kept while away"])
            #expect(resubscribed.withLock { $0 } == 1)
            #expect(tokens.refreshes.withLock { $0 } == 1)
            #expect(socket.reconnections == 1)
            #expect(clock.sleeps == [.seconds(1)])
            let handshakes = server.requests.filter { $0.rawPath == "/ws/feed" }.map { $0.header("Authorization") }
            #expect(handshakes == ["Bearer t1", "Bearer t1", "Bearer t2"])
        }
    }

    @Test("a pong that does not come ends the connection with timedOut", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func pingTimeout() async throws {
        let clock = TestClock(waitsForAdvance: true)
        let pings = Mutex(0)
        try await withServer(configure: { $0.timeouts = Self.patientWithoutDeadline; $0.clock = clock }) { server, client in
            server.webSocketRoute("/ws/silent") { socket in
                socket.answersPings = false
                while try await socket.receive() != nil {}
                pings.withLock { [count = socket.pings] in $0 = count }
            }
            var options = WebSocketOptions()
            options.reconnection = .never
            let socket = try await client.get("/ws/silent").webSocket(options: options)
            let reader = Task { await readAll(socket) }
            await clock.waitUntilSleeping()  // the ping interval
            clock.advance(by: .seconds(30))
            await clock.waitUntilSleeping()  // the pong's limit
            clock.advance(by: .seconds(10))
            let (messages, failure) = await reader.value
            #expect(messages.isEmpty)
            #expect(failure?.code == .timedOut)
            #expect(failure?.message.contains("pong") == true)
            #expect(clock.sleeps.prefix(2) == [.seconds(30), .seconds(10)])
        }
    }

    @Test("a server busy sending answers a ping with any frame: the connection stays", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func busyServerAnswersPing() async throws {
        let clock = TestClock(waitsForAdvance: true)
        try await withServer(configure: { $0.timeouts = Self.patientWithoutDeadline; $0.clock = clock }) { server, client in
            server.webSocketRoute("/ws/busy") { socket in
                socket.answersPings = false
                socket.sendsInsteadOfPong = .text("busy")
                while try await socket.receive() != nil {}
            }
            var options = WebSocketOptions()
            options.reconnection = .never
            let socket = try await client.get("/ws/busy").webSocket(options: options)
            var messages = socket.messages.makeAsyncIterator()
            await clock.waitUntilSleeping()  // the first ping is due at 30 s
            clock.advance(by: .seconds(30))  // it goes out; its pong's limit would be at 40 s
            #expect(try await messages.next()?.text == "busy")
            // Answered: the keep-alive waits for its next ping, no longer for the pong's limit.
            await clock.waitUntilSleeping(until: .seconds(60))
            clock.advance(by: .seconds(10))  // 40 s: nothing ends
            clock.advance(by: .seconds(20))  // 60 s: the second ping, answered the same way
            #expect(try await messages.next()?.text == "busy")
            await clock.waitUntilSleeping(until: .seconds(90))
            await socket.close()
            #expect(try await messages.next() == nil)
            #expect(socket.reconnections == 0)
        }
    }

    @Test("close codes: 1000 ends the messages, another code throws webSocketClosed with code and reason", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func closeCodes() async throws {
        try await withServer(configure: { $0.timeouts = Self.patient }) { server, client in
            let normal = try await client.get("/ws/close/1000").webSocket()
            let (none, ended) = await readAll(normal)
            #expect(none.isEmpty && ended == nil)
            #expect(normal.closeReason?.code == .normalClosure)

            let app = try await client.get("/ws/close/4001?reason=bye").webSocket()
            let (_, failure) = await readAll(app)
            #expect(failure?.code == .webSocketClosed)
            #expect(failure?.webSocketClose == WebSocketClose(WebSocketClose.Code(4001), reason: "bye"))
            await #expect(throws: APIError.self) { try await app.send(.text("late")) }

            var options = WebSocketOptions()
            options.reconnection = .never
            let away = try await client.get("/ws/close/1001").webSocket(options: options)
            let (_, gone) = await readAll(away)
            #expect(gone?.webSocketClose?.code == .goingAway)
        }
    }

    @Test("the client's close reaches the server with its code and reason", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func clientClose() async throws {
        let (closes, seen) = AsyncStream.makeStream(of: WebSocketClose?.self)
        try await withServer(configure: { $0.timeouts = Self.patient }) { server, client in
            server.webSocketRoute("/ws/listen") { socket in
                while try await socket.receive() != nil {}
                seen.yield(socket.clientClose)
            }
            let socket = try await client.get("/ws/listen").webSocket()
            await socket.close(WebSocketClose(.goingAway, reason: "signed out"))
            var rest = socket.messages.makeAsyncIterator()
            #expect(try await rest.next() == nil)
            var told = closes.makeAsyncIterator()
            #expect(await told.next() == WebSocketClose(.goingAway, reason: "signed out"))
        }
    }

    @Test("a hostile server: a message or frame past the bounds, a message never finished, too many fragments, text that is not UTF-8, reserved bits", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func hostileServers() async throws {
        try await withServer(configure: { $0.timeouts = Self.patient }) { server, client in
            server.webSocketRoute("/ws/big") { socket in
                try await socket.send(.binary(Data(repeating: 7, count: 2_048)))
                while try await socket.receive() != nil {}
            }
            server.webSocketRoute("/ws/bigframe") { socket in
                try await socket.sendFrame(opcode: 0x2, payload: Data(repeating: 7, count: 4_096))
                while try await socket.receive() != nil {}
            }
            server.webSocketRoute("/ws/unfinished") { socket in
                try await socket.sendFrame(fin: false, opcode: 0x1, payload: Data("never ".utf8))
                while try await socket.receive() != nil {}
            }
            server.webSocketRoute("/ws/fragments") { socket in
                try await socket.sendFrame(fin: false, opcode: 0x1, payload: Data("a".utf8))
                for _ in 0..<5_000 { try await socket.sendFrame(fin: false, opcode: 0x0, payload: Data("a".utf8)) }
                while try await socket.receive() != nil {}
            }
            server.webSocketRoute("/ws/latin1") { socket in
                try await socket.send(.text("fine"))
                try await socket.sendFrame(opcode: 0x1, payload: Data([0x63, 0x61, 0x66, 0xE9]))
                while try await socket.receive() != nil {}
            }
            server.webSocketRoute("/ws/reserved") { socket in
                try await socket.sendFrame(rsv1: true, opcode: 0x1, payload: Data("x".utf8))
                while try await socket.receive() != nil {}
            }
            var options = WebSocketOptions()
            options.maximumMessageSize = 1_024
            options.maximumFrameSize = 1_024
            // Only the unfinished message meets the time limit: on a busy machine the 5,000
            // fragments may take longer than a short one to arrive, and must meet the count.
            options.maximumMessageDuration = .seconds(600)
            let cases: [(path: String, code: APIError.Code, close: WebSocketClose.Code, messages: Int)] = [
                ("/ws/big", .responseTooLarge, .messageTooBig, 0),
                ("/ws/bigframe", .responseTooLarge, .messageTooBig, 0),
                ("/ws/unfinished", .webSocketClosed, .policyViolation, 0),
                ("/ws/fragments", .responseTooLarge, .messageTooBig, 0),
                ("/ws/latin1", .webSocketClosed, .invalidData, 1),
                ("/ws/reserved", .webSocketClosed, .protocolError, 0),
            ]
            for (path, code, close, count) in cases {
                var options = options
                if path == "/ws/unfinished" { options.maximumMessageDuration = .milliseconds(300) }
                let socket = try await client.get(path).webSocket(options: options)
                let (messages, failure) = await readAll(socket)
                #expect(messages.count == count, "\(path)")
                #expect(failure?.code == code, "\(path): \(String(describing: failure))")
                #expect(failure?.webSocketClose?.code == close, "\(path)")
                #expect(socket.closeReason?.code == close, "\(path)")
            }
        }
    }

    @Test("a server that floods is read at the reader's pace, every message in order; a reader that is behind is not taken for a dead server", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func flood() async throws {
        let clock = TestClock(waitsForAdvance: true)
        try await withServer(configure: { $0.timeouts = Self.patientWithoutDeadline; $0.clock = clock }) { server, client in
            server.webSocketRoute("/ws/flood") { socket in
                socket.answersPings = false
                for index in 0..<4_000 { try await socket.send(.text("\(index):" + String(repeating: "f", count: 1_000))) }
                try await socket.close(WebSocketClose(.normalClosure))
                while try await socket.receive() != nil {}
            }
            var options = WebSocketOptions()
            options.reconnection = .never
            let socket = try await client.get("/ws/flood").webSocket(options: options)
            var messages = socket.messages.makeAsyncIterator()
            #expect(try await messages.next()?.text?.hasPrefix("0:") == true)
            // The reader pauses with 4 MB still to come (16 times the messages and 4 times the bytes
            // past which reading waits; more only slowed a full run's busy first minute for every
            // other test): the messages wait, then reading from the socket waits for the reader.
            // A ping goes out and no pong will come (this server answers none); the messages
            // behind which it would wait count as the server's answer.
            await clock.waitUntilSleeping()
            clock.advance(by: .seconds(30))
            await clock.waitUntilSleeping(until: .seconds(60))  // answered: the next ping is due
            clock.advance(by: .seconds(10))  // past where the pong's limit was: nothing ends
            var next = 1
            while let message = try await messages.next() {
                guard message.text?.hasPrefix("\(next):") == true else {
                    Issue.record("message \(next) came as \(message.text?.prefix(8) ?? "binary")")
                    break
                }
                next += 1
            }
            #expect(next == 4_000)
            #expect(socket.reconnections == 0)
        }
    }

    @Test("a refused handshake: the server's status in the error; a POST or a body is refused before sending", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func refusals() async throws {
        try await withServer(configure: { $0.timeouts = Self.patient }) { server, client in
            let missing = await apiError { _ = try await client.get("/ws/nowhere").webSocket() }
            #expect(missing?.code == .unacceptableStatus)
            #expect(missing?.response?.status.code == 404)
            let post = await apiError { _ = try await client.post("/ws/echo").webSocket() }
            #expect(post?.code == .invalidRequest)
        }
        // A refusal whose body ends with the connection (no length): read whole, the end told
        // to its reader once the upgrade has given up.
        try await RawServer.withRunning([.write("HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\nno entry")]) { server in
            let client = APIClient(configuration: .init { $0.timeouts = Self.patient })
            let refused = await apiError { _ = try await client.webSocket(.get(server.url("/ws").absoluteString)) }
            #expect(refused?.code == .unacceptableStatus)
            #expect(refused?.response?.status.code == 403)
            #expect(refused?.response.map { String(decoding: $0.body, as: UTF8.self) } == "no entry")
        }
    }

    @Test("limits as an app may set them: past what the wire carries, no trap; a message limit below the frame limit holds for a message in one frame", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func limitsAsSet() async throws {
        try await withServer(configure: { $0.timeouts = Self.patient }) { server, client in
            var options = WebSocketOptions()
            options.maximumFrameSize = .max
            options.maximumMessageSize = .max
            let socket = try await client.get("/ws/echo").webSocket(options: options)
            try await socket.send(.text("fits"))
            var messages = socket.messages.makeAsyncIterator()
            #expect(try await messages.next() == .text("fits"))
            await socket.close()

            server.webSocketRoute("/ws/one-frame") { socket in
                try await socket.send(.binary(Data(repeating: 7, count: 2_048)))
                while try await socket.receive() != nil {}
            }
            var small = WebSocketOptions()
            small.maximumMessageSize = 1_024  // the frame limit stays 1 MiB
            let bounded = try await client.get("/ws/one-frame").webSocket(options: small)
            let (received, failure) = await readAll(bounded)
            #expect(received.isEmpty)
            #expect(failure?.code == .responseTooLarge)
            #expect(bounded.closeReason?.code == .messageTooBig)
        }
    }

    /// A server that greets and hangs up at once: its messages come in the same read as the
    /// `101` and the connection's end. NIO's HTTP decoder dropped them when it saw the end before
    /// the upgrade removed it (one connection in 30 under load); run a hundred at a time.
    @Test("messages sent right behind the 101, then a drop: every message is read, then the end", .enabled(if: TransportKind.asyncHTTPClientIsBuilt), arguments: 0..<100)
    func greetingThenDrop(_ round: Int) async throws {
        try await withServer(configure: { $0.timeouts = Self.patient }) { server, client in
            server.webSocketRoute("/ws/greet") { socket in
                try await socket.send(.text("hello"))
                try await socket.send(.text("goodbye"))
                await socket.drop()
            }
            var options = WebSocketOptions()
            options.pingInterval = nil
            options.reconnection = .never
            let socket = try await client.get("/ws/greet").webSocket(options: options)
            let (messages, failure) = await readAll(socket)
            #expect(messages == [.text("hello"), .text("goodbye")], "round \(round)")
            #expect(failure?.code == .webSocketClosed)
            #expect(socket.closeReason?.code == .abnormalClosure)
        }
    }

    @Test("while reconnecting, sends are kept up to the buffer's size; past it they are refused; what was never sent is kept", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func outgoingBuffer() async throws {
        let clock = TestClock(waitsForAdvance: true)
        // No jitter: a full-jitter back-off is zero one time in 501, a wait that never sleeps.
        try await withServer(configure: { $0.timeouts = Self.patientWithoutDeadline; $0.clock = clock; $0.retry.jitter = .none }) { server, client in
            // Dropped at once, while the client may still be finishing the upgrade.
            server.webSocketRoute("/ws/once") { socket in await socket.drop() }
            var options = WebSocketOptions()
            options.pingInterval = nil
            options.outgoingBufferSize = 10
            options.reconnection = .upTo(1)
            let socket = try await client.get("/ws/once").webSocket(options: options)
            let reader = Task { await readAll(socket) }
            await clock.waitUntilSleeping()
            try await socket.send(.text("12345"))
            try await socket.send(.text("67890"))
            let full = await apiError { try await socket.send(.text("x")) }
            #expect(full?.code == .webSocketClosed)
            #expect(full?.message.contains("not sent") == true)
            // The route is gone: the one reconnection is refused, and the socket ends.
            server.webSocketRoute("/ws/once", accepts: { _ in false }) { _ in }
            clock.advance(by: .seconds(60))
            let (_, failure) = await reader.value
            #expect(failure?.code == .unacceptableStatus)
            #expect(socket.unsentMessages == [.text("12345"), .text("67890")])
        }
    }

    @Test("a definition with a wss URL template opens by name; ws:// is sent as http://", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func byDefinitionName() async throws {
        try await TestServer.withRunning { server in
            let base = server.baseURL.absoluteString.replacingOccurrences(of: "http://", with: "ws://")
            let definitions = try APIDefinitions(data: Data("Room:\n  base: \(base)\n  path: ws/echo/{room}\n".utf8), format: .yaml)
            let client = APIClient(definitions: definitions, configuration: .init { $0.timeouts = Self.patient })
            let socket = try await client.webSocket("Room", parameters: ["room": "lobby"])
            try await socket.send(.text("hi"))
            var replies = socket.messages.makeAsyncIterator()
            #expect(try await replies.next() == .text("hi"))
            await socket.close()
            #expect(server.requests.last?.rawPath == "/ws/echo/lobby")
        }
    }

    @Test("URLSessionTransport on Linux refuses a WebSocket plainly", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func urlSessionOnLinux() async throws {
        try await withServer(transport: .urlSession, configure: { $0.timeouts = Self.patient }) { _, client in
            let failure = await apiError { _ = try await client.get("/ws/echo").webSocket() }
            #expect(failure?.code == .invalidRequest)
            #expect(failure?.message.contains("AsyncHTTPClientTransport") == true)
        }
    }
}
