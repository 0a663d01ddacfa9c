import Foundation

extension APIClient {
    /// Opens a WebSocket: the handshake goes through the whole pipeline, as every call does —
    /// authentication (a `401` refreshes the token and tries again), common headers by tag,
    /// client info, cookies, recording, mocks — and so does every reconnection.
    ///
    /// The URL may say `ws://` or `wss://` (sent as `http://` and `https://`), or `http(s)://`.
    /// The call's per-attempt limit and deadline bound the handshake; the socket itself lives
    /// until it is closed, kept alive by pings (``WebSocketOptions``).
    ///
    /// ```swift
    /// let socket = try await client.webSocket(.get("wss://chat.example.com/live"), options: .init(protocols: ["chat.v2"]))
    /// try await socket.send(.text("hello"))
    /// for try await message in socket.messages { print(message.text ?? "") }
    /// ```
    /// - Throws: ``APIError``: the handshake's failure — a transport error, a status other than
    ///   `101` (``APIError/Code/unacceptableStatus``, with the answer), a subprotocol or
    ///   extension that was not offered (``APIError/Code/invalidResponse``), a request that is not
    ///   a `GET` or has a body (``APIError/Code/invalidRequest``).
    public func webSocket(_ request: Request, options: WebSocketOptions = WebSocketOptions()) async throws(APIError) -> WebSocket {
        let socket = WebSocket(client: self, request: try Self.webSocketRequest(request), options: options)
        try await socket.connect(reconnection: false)
        return socket
    }

    /// Opens the WebSocket of the API with this name (a definition whose URL says `ws://` or
    /// `wss://`, say); see ``webSocket(_:options:)``.
    ///
    /// ```swift
    /// // definitions file:  Chat = wss://chat.example.com/rooms/{room}
    /// let socket = try await client.webSocket("Chat", parameters: ["room": "lobby"])
    /// ```
    public func webSocket(
        _ name: String, parameters: Parameters = [:], headers: Headers = [:], options: WebSocketOptions = WebSocketOptions()
    ) async throws(APIError) -> WebSocket {
        try await webSocket(try definitions.definition(named: name).request(parameters: parameters, headers: headers), options: options)
    }

    /// `request` as a handshake: `ws`/`wss` written as `http`/`https`, and only a `GET` with no body.
    static func webSocketRequest(_ request: Request) throws(APIError) -> Request {
        var request = request
        guard request.method == .get, request.body == nil else {
            throw APIError(.invalidRequest, localized: "a WebSocket is opened with a GET request without a body", request: request)
        }
        request.path = WebSocketScheme.http(request.path)
        if let base = request.baseURL, let http = URL(string: WebSocketScheme.http(base.absoluteString)) { request.baseURL = http }
        return request
    }
}

/// The WebSocket URL schemes, and the HTTP ones their handshakes are sent as (for the client,
/// its origins and `callsign ws`).
package enum WebSocketScheme {
    /// `text` with a leading `ws://` or `wss://` (any case) written as `http://` or `https://`.
    package static func http(_ text: String) -> String {
        let lower = text.prefix(6).lowercased()
        if lower.hasPrefix("wss://") { return "https://" + text.dropFirst(6) }
        if lower.hasPrefix("ws://") { return "http://" + text.dropFirst(5) }
        return text
    }

    /// The scheme a handshake for `scheme` (lowercased) is sent with: `http` for `ws`, `https`
    /// for `wss`, any other as it is.
    static func handshakeScheme(_ scheme: String) -> String {
        scheme == "wss" ? "https" : scheme == "ws" ? "http" : scheme
    }

    /// Whether `scheme` is `ws` or `wss`.
    static func isWebSocket(_ scheme: String?) -> Bool {
        guard let scheme = scheme?.lowercased() else { return false }
        return scheme == "ws" || scheme == "wss"
    }
}

extension APIClient {
    /// Sends a WebSocket handshake through the pipeline and returns the open connection with the
    /// answer, or the answer as an error.
    func openWebSocket(_ request: Request, upgrade: WebSocketUpgrade) async throws(APIError) -> (any WebSocketConnection, Response) {
        var call = Call(request).reading(.stream)
        call.context.fields.webSocket = upgrade
        var response = try await perform(call)
        if let connection = response.webSocket, response.status.code == 101 {
            response.webSocket = nil
            return (connection, response)
        }
        await response.webSocket?.close(WebSocketClose(.protocolError))
        response.webSocket = nil
        let status = response.status.code
        if status == 101 {
            throw APIError(
                .invalidResponse, localized: "the server agreed to the WebSocket, but the transport opened none (a mock, or a transport that cannot open WebSockets)",
                request: response.request, response: response)
        }
        if let body = response.bodyStream {
            response.body = (try? await body.collect(upTo: WebSocketUpgrade.refusalBodyLimit)) ?? Data()
            response.bodyStream = nil
        }
        throw APIError(
            .unacceptableStatus, localized: "the server did not open the WebSocket: it answered \(status)",
            request: response.request, response: response)
    }
}
