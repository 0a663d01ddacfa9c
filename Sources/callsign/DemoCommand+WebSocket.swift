import Callsign
import CallsignTesting
import Foundation

extension DemoTour {
    /// A WebSocket opened through the main client: its handshake is recorded and signed like
    /// every call, and its messages come whole and in order.
    mutating func webSocketStep(client: APIClient) async throws {
        step("WebSockets: the handshake goes through the same pipeline; messages come whole and in order")
        let url = server.url("/ws/echo").absoluteString.replacingOccurrences(of: "http://", with: "ws://")
        let socket = try await client.webSocket(.get(url), options: WebSocketOptions(protocols: ["chat"]))
        say("connected: \(socket.response?.status.code ?? 0) Switching Protocols, subprotocol \(socket.subprotocol ?? "none")")
        for text in ["hello", "wörld"] { try await socket.send(.text(text)) }
        var messages = socket.messages.makeAsyncIterator()
        for _ in 0..<2 {
            if let message = try await messages.next() { say("echo: \(message.text ?? "")") }
        }
        await socket.close()
        say("closed: \(socket.closeReason?.description ?? "")")
        say("the same from the shell: echo hello | callsign ws \(url)")
    }
}
