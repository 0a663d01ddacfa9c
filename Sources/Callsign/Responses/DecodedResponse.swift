public import Foundation

/// A decoded answer together with the response it came from: the value, and the status,
/// headers and raw body in one value (APE's `NetworkDataResponse`, Get's `Response<T>`).
///
/// Every field of the ``Response`` reads through: `answer.status`, `answer.headers`,
/// `answer.body` (the bytes as they arrived, after content decoding), `answer.source`,
/// `answer.duration`, `answer.request`.
///
/// Each of the four ways to call has it:
///
/// ```swift
/// let byName = try await client.call("Boards", as: DecodedResponse<[Board]>.self)
/// let byValue = try await client.send(Boards.show(id: 7)).validate().decoded(Board.self)
/// let byBuilder = try await client.get("boards/7").decoded(Board.self)
/// client.request("Boards") { c in
///     c.success { (answer: DecodedResponse<[Board]>) in show(answer.value, etag: answer.headers[.eTag]) }
/// }
/// print(byValue.value.title, byValue.status.code, byValue.headers[.eTag] ?? "", byValue.body.count)
/// ```
@dynamicMemberLookup
public struct DecodedResponse<Value> {
    /// The decoded body (or, with an adaptive envelope, its payload).
    public var value: Value
    /// The response the value was decoded from, with its raw body.
    public var response: Response

    /// Pairs a value with its response. ``Response/decoded(_:decoder:)`` makes these for you.
    public init(value: Value, response: Response) {
        self.value = value
        self.response = response
    }

    /// Reads a field of the response: `status`, `headers`, `body`, `source`, `duration`, …
    public subscript<Field>(dynamicMember field: KeyPath<Response.Fields, Field>) -> Field {
        response.fields[keyPath: field]
    }

    /// The same response with its value changed, for example to a model of the app's own.
    ///
    /// ```swift
    /// let page = try await client.get("boards").decoded([BoardDTO].self).map { $0.map(Board.init) }
    /// ```
    public func map<Other>(_ transform: (Value) throws -> Other) rethrows -> DecodedResponse<Other> {
        DecodedResponse<Other>(value: try transform(value), response: response)
    }
}

extension DecodedResponse: Sendable where Value: Sendable {}

extension Response {
    /// Decodes the body as ``decode(_:decoder:)`` does and returns the value with this response.
    ///
    /// ```swift
    /// let answer = try await client.send(Boards.show(id: 7)).decoded(Board.self)
    /// print(answer.value.title, answer.status.code, answer.headers[.eTag] ?? "", answer.body.count)
    /// ```
    /// - Throws: ``APIError`` as ``decode(_:decoder:)`` does.
    public func decoded<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder? = nil) throws(APIError) -> DecodedResponse<T> {
        DecodedResponse(value: try decode(T.self, decoder: decoder), response: self)
    }
}

extension APIClient {
    /// Calls the API with this name and returns its decoded answer with the response: the value,
    /// the status, the headers and the raw body (see ``DecodedResponse``).
    ///
    /// Validated and decoded as ``call(_:parameters:headers:as:)-(_,_,_,T.Type)`` does.
    ///
    /// ```swift
    /// let answer = try await client.call("UserProfile", parameters: ["user_id": 42], as: DecodedResponse<Profile>.self)
    /// print(answer.value.name, answer.headers[.eTag] ?? "")
    /// ```
    /// - Throws: ``APIError`` as ``call(_:parameters:headers:as:)-(_,_,_,T.Type)`` does.
    public func call<T: Decodable>(
        _ name: String, parameters: Parameters = [:], headers: Headers = [:], as type: DecodedResponse<T>.Type
    ) async throws(APIError) -> DecodedResponse<T> {
        let response = try await call(name, parameters: parameters, headers: headers)
        if response.request.responseType == .void, let empty = EmptyResponse() as? T {
            return DecodedResponse(value: empty, response: response)
        }
        return try response.decoded(T.self)
    }
}

extension RequestBuilder {
    /// Sends the request, validates the response and returns it decoded as `T`, with its status,
    /// headers and raw body (see ``DecodedResponse``).
    ///
    /// ```swift
    /// let answer = try await client.get("/v1/me").decoded(User.self)
    /// if answer.source == .revalidated { print("unchanged since", answer.headers[.lastModified] ?? "") }
    /// ```
    public func decoded<T: Decodable>(_ type: T.Type = T.self) async throws(APIError) -> DecodedResponse<T> {
        try await send().validate().decoded(T.self)
    }
}

extension CallContext {
    /// Runs with the decoded value and its response — status, headers, raw body — when the call
    /// succeeds (see ``DecodedResponse``), on the main actor. A body that does not decode as `T`
    /// is a failure instead.
    ///
    /// ```swift
    /// c.success { (answer: DecodedResponse<Board>) in show(answer.value, etag: answer.headers[.eTag]) }
    /// ```
    public mutating func success<T: Decodable & Sendable>(_ handler: @escaping @MainActor @Sendable (DecodedResponse<T>) -> Void) {
        handlers.success(decodingWithResponse: T.self, .mainActor(handler))
    }
}

extension NonisolatedCallbacks {
    /// Runs with the decoded value and its response when the call succeeds (see
    /// `CallContext.success(_:)`), where the delivery says.
    public mutating func success<T: Decodable & Sendable>(_ handler: @escaping @Sendable (DecodedResponse<T>) -> Void) {
        handlers.success(decodingWithResponse: T.self, .anywhere(handler))
    }
}
