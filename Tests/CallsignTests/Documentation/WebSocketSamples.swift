import Callsign
import CallsignTesting
import Foundation
import Testing

// Every ```swift block of WebSockets.md, compiled in the context it needs (the functions are never
// called). ArticleSamplesTests checks that each block appears in a *Samples.swift file line for
// line: change the article and this file together.

enum WebSocketSamples {
    /// What the samples decode and encode.
    struct Tick: Decodable {
        let symbol: String
        let price: Double
    }

    struct Subscribe: Encodable {
        let channel: String
    }

    /// The app's own handling of a message.
    private static func handle(_ message: WebSocketMessage) {}

    // Overview
    static func opening(token: String) async throws {
        let client = APIClient(configuration: .init {
            $0.baseURL = URL(string: "https://chat.example.com/")
            $0.authentication = .bearer(token)
        })
        let socket = try await client.webSocket(.get("wss://chat.example.com/live"))
        try await socket.send(.text("hello"))
        for try await message in socket.messages {
            print(message.text ?? "\(message.count) bytes")
        }
    }

    // Opening a WebSocket: by definition name
    static func byName(apiFile: URL) async throws {
        let client = APIClient(definitions: try APIDefinitions(contentsOf: apiFile))
        let socket = try await client.webSocket("Chat", parameters: ["room": "lobby"])
        await socket.close()
    }

    // Opening a WebSocket: through the builder
    static func throughTheBuilder(client: APIClient) async throws {
        let socket = try await client.get("live")
            .header("X-Room", "lobby")
            .query(["since": 42])
            .webSocket(options: WebSocketOptions(protocols: ["chat.v2"]))
        await socket.close()
    }

    // Messages
    static func messages(socket: WebSocket) async throws {
        for try await message in socket.messages {
            switch message {
            case .text(let text): print(text)
            case .binary(let data): print("\(data.count) bytes")
            }
        }
    }

    // Messages: decoding
    static func decoding(socket: WebSocket) async throws {
        for try await message in socket.messages {
            let tick = try message.decode(Tick.self)
            print(tick.symbol, tick.price)
        }
    }

    // Sending
    static func sending(socket: WebSocket, frame: Data) async throws {
        try await socket.send(.text("subscribe prices"))
        try await socket.send(.binary(frame))
        try await socket.send(try .json(Subscribe(channel: "prices")))
    }

    // Closing and close codes
    static func closing(socket: WebSocket) async {
        await socket.close()
        await socket.close(WebSocketClose(.goingAway, reason: "signed out"))
    }

    // Closing and close codes: how the socket ended
    static func closeCodes(socket: WebSocket) async {
        do {
            for try await message in socket.messages { handle(message) }
            // The server closed with 1000, or close() was called.
        } catch {
            if error.code == .webSocketClosed, let close = error.webSocketClose {
                print("closed: \(close.code) \(close.reason)")
            }
        }
    }

    // Keep-alive
    static func keepAlive() {
        var options = WebSocketOptions()
        options.pingInterval = .seconds(20)
        options.pongTimeout = .seconds(5)
        _ = options
    }

    // Reconnection
    static func reconnection(client: APIClient) async throws {
        var options = WebSocketOptions()
        options.reconnection = .upTo(10)
        options.reconnection = WebSocketOptions.Reconnection(
            maximumAttempts: 10, backOff: RetryPolicy(baseDelay: .seconds(1), maximumDelay: .seconds(60)))
        options.onReconnect = { reconnected in
            try await reconnected.send(.text("subscribe prices"))   // before anything kept meanwhile
        }
        let socket = try await client.webSocket(.get("wss://chat.example.com/live"), options: options)
        await socket.close()
    }

    // Reconnection: the outgoing buffer
    static func unsent(socket: WebSocket) async -> [WebSocketMessage] {
        await socket.close()
        let unsent = socket.unsentMessages   // kept while reconnecting, never sent
        return unsent
    }

    // Bounds
    static func bounds() {
        var options = WebSocketOptions()
        options.maximumMessageSize = 64 << 10
        options.maximumFrameSize = 64 << 10
        options.maximumMessageDuration = .seconds(5)
        options.outgoingBufferSize = 256 << 10
        _ = options
    }

    // Testing
    static func testServer() async throws {
        try await TestServer.withRunning { server in
            server.webSocketRoute("/ws/chat") { socket in
                while let message = try await socket.receive() {
                    try await socket.send(.text("you said \(message.text ?? "")"))
                }
            }
            let client = APIClient(configuration: .init { $0.baseURL = server.baseURL })
            let socket = try await client.get("/ws/chat").webSocket()
            try await socket.send(.text("hi"))
            var replies = socket.messages.makeAsyncIterator()
            #expect(try await replies.next() == .text("you said hi"))
            await socket.close()
        }
    }

    // Testing: a reconnection, with a clock that waits for the test
    static func testClock(server: TestServer) async throws {
        let clock = TestClock(waitsForAdvance: true)
        let client = APIClient(configuration: .init {
            $0.baseURL = server.baseURL
            $0.clock = clock
            $0.retry.jitter = .none                 // back-off waits of a known length, never zero
        })
        var options = WebSocketOptions()
        options.pingInterval = nil                   // only the back-off waits on the clock
        let socket = try await client.get("/ws/flaky").webSocket(options: options)
        let reader = Task {
            var messages = socket.messages.makeAsyncIterator()
            return try await messages.next()
        }
        await clock.waitUntilSleeping()              // the reader saw the drop; the back-off waits
        clock.advance(by: .seconds(60))
        #expect(try await reader.value == .text("welcome back"))
        #expect(socket.reconnections == 1)
        await socket.close()
    }

    // Coming from URLSessionWebSocketTask
    static func fromURLSession(client: APIClient) async throws {
        var options = WebSocketOptions(protocols: ["chat.v2"])
        options.maximumMessageSize = 4 << 20
        let socket = try await client.webSocket(.get("wss://chat.example.com/live"), options: options)
        try await socket.send(.text("hello"))
        for try await message in socket.messages {
            switch message {
            case .text(let text): print(text)
            case .binary(let data): print(data.count)
            }
        }
    }
}
