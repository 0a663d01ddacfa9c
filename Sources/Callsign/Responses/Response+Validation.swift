public import Foundation

/// A check of a response beyond its status, such as a required header or a body rule.
///
/// ```swift
/// struct RequiresRequestID: ResponseValidator {
///     func validate(_ response: Response) throws {
///         guard response.headers[HTTPField.Name("X-Request-ID")!] != nil else {
///             throw APIError(.invalidResponse, "the server sent no X-Request-ID", response: response)
///         }
///     }
/// }
/// try response.validate(using: RequiresRequestID())
/// ```
public protocol ResponseValidator: Sendable {
    /// Throws if the response is not acceptable. Errors other than ``APIError`` are reported
    /// as ``APIError/Code/invalidResponse``.
    func validate(_ response: Response) throws
}

extension Response {
    /// Checks the status against the accepted set, the content type against the request's
    /// `Accept` header (when it has one — a definition that says `object` or `objects` asks for
    /// `application/json`), the adaptive envelope (when enabled), that a body declared `object` or
    /// `objects` is UTF-8 JSON of that shape, and the client's validators; returns the response
    /// for chaining.
    ///
    /// ```swift
    /// let board = try await client.send(Boards.show(id: 7)).validate().decode(Board.self)
    /// ```
    /// - Throws: ``APIError`` with ``APIError/Code/unacceptableStatus``,
    ///   ``APIError/Code/unacceptableContentType``, ``APIError/Code/envelope`` or
    ///   ``APIError/Code/decoding`` (a body that is not the declared JSON).
    @discardableResult
    public func validate() throws(APIError) -> Response {
        try inClientWords { () throws(APIError) in try validate(checkingDeclaredJSON: true) }
    }

    /// Whether ``validate()`` reads the body: a body declared `object` or `objects`, an adaptive
    /// envelope on a success, or the client's own validators. When it does not, the head alone
    /// decides, and the command line writes the body to its output as it arrives.
    package var validationReadsBody: Bool {
        if let type = self.request.responseType, type == .object || type == .objects { return true }
        if activeEnvelopePolicy != nil, (200..<300).contains(self.status.code) { return true }
        return !self.settings.validators.isEmpty
    }

    /// What `body` returns; its error speaks the client's language, in the client's own texts.
    func inClientWords<T>(_ body: () throws(APIError) -> T) throws(APIError) -> T {
        do {
            return try body()
        } catch {
            var error = error
            if error.language == nil { error.language = self.settings.language }
            if error.overrides == nil { error.overrides = self.settings.overrides }
            throw error
        }
    }

    /// ``validate()``; a caller that decodes next skips the JSON check, which decoding repeats.
    @discardableResult
    func validate(checkingDeclaredJSON: Bool) throws(APIError) -> Response {
        try validateStatus()
        if let accept = self.request.headers["Accept"], !Self.isExactly(accept, mediaTypeOf: self.headers.value(of: .contentType)) {
            try validate(contentTypes: accept.split(separator: ",").map(Response.mediaType(of:)))
        }
        let payload = try envelopePayload()
        if checkingDeclaredJSON {
            if let payload { try validateDeclaredJSON(payload) } else { try validateDeclaredJSON(jsonBody()) }
        }
        for validator in self.settings.validators { try validate(using: validator) }
        return self
    }

    /// Whether `accept` is one media type, exactly the one `contentType` names (ASCII case
    /// ignored, parameters after `;` ignored): the usual answer (`application/json` to
    /// `application/json; charset=utf-8`), checked on bytes without building a string. Anything
    /// else — a list, a wildcard, another type — goes to ``validate(contentTypes:)``.
    static func isExactly(_ accept: String, mediaTypeOf contentType: String?) -> Bool {
        guard var contentType else { return false }
        var accept = accept
        // Native strings are contiguous UTF-8: compared in place, byte by byte.
        return accept.withUTF8 { wanted in contentType.withUTF8 { given in sameMediaType(wanted, given) } }
    }

    private static func sameMediaType(_ wanted: UnsafeBufferPointer<UInt8>, _ given: UnsafeBufferPointer<UInt8>) -> Bool {
        /// `bytes[..<end]` without spaces and tabs at either end.
        func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, end: Int) -> Range<Int> {
            func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
            var start = 0
            var end = end
            while start < end, isSpace(bytes[start]) { start += 1 }
            while end > start, isSpace(bytes[end - 1]) { end -= 1 }
            return start..<end
        }
        let wantedRange = trimmed(wanted, end: wanted.count)
        let givenRange = trimmed(given, end: given.firstIndex(of: UInt8(ascii: ";")) ?? given.count)
        guard wantedRange.count == givenRange.count, !wantedRange.isEmpty else { return false }
        let wantedType = UnsafeBufferPointer(rebasing: wanted[wantedRange])
        // Nothing in a list or a wildcard can match this way; letters compare without case.
        guard !wantedType.contains(where: { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "*") }) else { return false }
        return String.foldedEqual(wantedType, UnsafeBufferPointer(rebasing: given[givenRange])) ?? false
    }

    /// For definitions that say `object` or `objects`: the body must be UTF-8 JSON of that shape
    /// (an empty body only where there can be none, or with ``CallOptions/acceptsNullResponse``).
    private func validateDeclaredJSON(_ payload: Data) throws(APIError) {
        guard let expected = self.request.responseType, expected == .object || expected == .objects else { return }
        if payload.isEmpty {
            let bodiless = self.request.method == .head || self.status.code == 204 || self.status.code == 304
            guard bodiless || (self.request.acceptsNullResponse ?? false) else {
                throw APIError(
                    .decoding, localized: "expected JSON (response type \(expected)), but the body is empty", request: self.request, response: self)
            }
            return
        }
        guard JSONText.isValid(payload) else {
            throw APIError(
                .decoding, localized: "expected JSON (response type \(expected)), but the body is not valid UTF-8 JSON",
                request: self.request, response: self)
        }
        try checkResponseType(payload)
    }

    /// Checks the status against `statusCodes`.
    ///
    /// ```swift
    /// try response.validate(statusCodes: [200, 204])
    /// ```
    @discardableResult
    public func validate(statusCodes: StatusCodes) throws(APIError) -> Response {
        try inClientWords { () throws(APIError) in try checkStatus(statusCodes) }
    }

    private func checkStatus(_ statusCodes: StatusCodes) throws(APIError) -> Response {
        guard statusCodes.contains(self.status.code) else {
            // An error body in the API's envelope says more than the status: keep what it says.
            let said = errorEnvelope()
            let status = "\(self.status.code) \(self.status.reasonPhrase)"
            // Else RFC 9457 problem details: their title and detail say what went wrong.
            let reported = said?.message ?? (said?.code == nil ? self.problem?.summary : nil)
            let message: LocalizedMessage =
                switch (said?.code, reported) {
                case let (code?, text?): "the server answered \(status); accepted: \(statusCodes); it reported code \(code): \(text)" as LocalizedMessage
                case let (code?, nil): "the server answered \(status); accepted: \(statusCodes); it reported code \(code)" as LocalizedMessage
                case let (nil, text?): "the server answered \(status); accepted: \(statusCodes); it reported \(text)" as LocalizedMessage
                case (nil, nil): "the server answered \(status); accepted: \(statusCodes)" as LocalizedMessage
                }
            var error = APIError(.unacceptableStatus, localized: message, request: self.request, response: self)
            error.envelopeCode = said?.code
            error.envelopeMessage = said?.message
            throw error
        }
        return self
    }

    /// The code and message of an error body in the active envelope, if it is one.
    private func errorEnvelope() -> EnvelopePolicy.Contents? {
        guard let policy = activeEnvelopePolicy, self.body.count <= 1 << 20, let contents = envelopeContents(policy),
            contents.code != nil || contents.message != nil
        else { return nil }
        return contents
    }

    /// Checks the response's media type against a list (`*/*` and `type/*` wildcards allowed).
    ///
    /// ```swift
    /// try response.validate(contentTypes: ["application/json"])
    /// ```
    @discardableResult
    public func validate(contentTypes: [String]) throws(APIError) -> Response {
        try inClientWords { () throws(APIError) in try checkContentType(contentTypes) }
    }

    private func checkContentType(_ contentTypes: [String]) throws(APIError) -> Response {
        let wanted = contentTypes.map { $0.lowercased() }.filter { !$0.isEmpty }
        guard !wanted.isEmpty, !wanted.contains("*/*") else { return self }
        guard let mediaType else {
            if self.body.isEmpty { return self }
            throw APIError(
                .unacceptableContentType, localized: "the response has no Content-Type; expected \(wanted.joined(separator: ", "))",
                request: self.request, response: self)
        }
        let matches = wanted.contains { pattern in
            if pattern.hasSuffix("/*") { return mediaType.hasPrefix(pattern.dropLast()) }
            if pattern == mediaType { return true }
            // application/problem+json satisfies application/json.
            if pattern == "application/json", mediaType.hasSuffix("+json") { return true }
            return false
        }
        guard matches else {
            throw APIError(
                .unacceptableContentType,
                localized: "the response is \(mediaType); expected \(wanted.joined(separator: ", "))",
                request: self.request, response: self)
        }
        return self
    }

    /// Runs a custom validator.
    @discardableResult
    public func validate(using validator: some ResponseValidator) throws(APIError) -> Response {
        try inClientWords { () throws(APIError) in try check(using: validator) }
    }

    private func check(using validator: some ResponseValidator) throws(APIError) -> Response {
        do {
            try validator.validate(self)
        } catch let error as APIError {
            var error = error
            if error.response == nil { error.response = self }
            if error.request == nil { error.request = self.request }
            throw error
        } catch {
            throw APIError(.invalidResponse, localized: "the response failed validation: \(error)", response: self, underlyingError: error)
        }
        return self
    }

    func validateStatus() throws(APIError) {
        try validate(statusCodes: self.request.acceptedStatusCodes ?? self.settings.acceptedStatusCodes)
    }
}

extension Response {
    /// Decodes the body (or, with an adaptive envelope, its payload) as `T`.
    ///
    /// The status is checked first, so a 404 is reported as ``APIError/Code/unacceptableStatus``
    /// rather than as a body that does not decode. The client's decoder is used unless you pass one.
    ///
    /// ```swift
    /// let users = try await client.get("/v1/users").send().decode([User].self)
    /// ```
    /// - Throws: ``APIError`` with ``APIError/Code/unacceptableStatus``, ``APIError/Code/envelope``
    ///   or ``APIError/Code/decoding`` (with the coding path of the first mismatch).
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder? = nil) throws(APIError) -> T {
        try inClientWords { () throws(APIError) in try decodeBody(T.self, decoder: decoder) }
    }

    private func decodeBody<T: Decodable>(_ type: T.Type, decoder: JSONDecoder?) throws(APIError) -> T {
        try validateStatus()
        var payload: Data
        if let enveloped = try envelopePayload() { payload = enveloped } else { payload = try jsonBody() }
        if T.self == EmptyResponse.self, let empty = EmptyResponse() as? T { return empty }
        if (self.request.acceptsNullResponse ?? false) && payload.isEmpty { payload = Data("null".utf8) }
        try checkResponseType(payload)
        return try decodeJSON(T.self, from: payload, decoder: decoder ?? self.settings.decoder)
    }

    /// `payload` (this response's body, or its envelope's part) decoded as `T` within the JSON
    /// depth limit; a failure names the type and carries the request and this response.
    func decodeJSON<T: Decodable>(_ type: T.Type, from payload: Data, decoder: JSONDecoder) throws(APIError) -> T {
        try JSONDepth.decode(T.self, from: payload, decoder: decoder, limit: self.settings.maximumJSONDepth) { type, reason, error in
            APIError(
                .decoding, localized: "the body could not be decoded as \(type): \(reason)", request: self.request, response: self, underlyingError: error)
        }
    }

    /// For definitions that say `objects` or `object`, checks the JSON's top level first, so
    /// the message names the mismatch instead of a decoder detail.
    private func checkResponseType(_ payload: Data) throws(APIError) {
        guard let expected = self.request.responseType, expected == .object || expected == .objects,
            let first = payload.first(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) })
        else { return }
        if first == UInt8(ascii: "n"), (self.request.acceptsNullResponse ?? false) { return }
        let wantsArray = expected == .objects
        let isArray = first == UInt8(ascii: "[")
        let isObject = first == UInt8(ascii: "{")
        if wantsArray && !isArray || !wantsArray && !isObject {
            let found =
                isArray
                ? "an array" as LocalizedMessage : isObject ? "an object" as LocalizedMessage : "not a JSON object or array" as LocalizedMessage
            throw APIError(
                .decoding,
                localized: wantsArray
                    ? "expected an array of objects (response type \(expected)), but the body is \(found)"
                    : "expected one object (response type \(expected)), but the body is \(found)",
                request: self.request, response: self)
        }
    }

    static func typeName(_ type: Any.Type) -> String {
        String(describing: type)
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "the key \"\(key.stringValue)\" is missing\(path(context))"
        case DecodingError.typeMismatch(let type, let context):
            return "expected \(type)\(path(context)): \(context.debugDescription)"
        case DecodingError.valueNotFound(let type, let context):
            return "expected \(type) but found null\(path(context))"
        case DecodingError.dataCorrupted(let context):
            return "\(DefinitionDocument.describe(error))\(path(context))"
        default:
            return "\(error)"
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return path.isEmpty ? "" : " at \(path)"
    }
}

/// Decode into this when a call's body does not matter (response type `void`).
///
/// ```swift
/// _ = try await client.call("Logout", as: EmptyResponse.self)
/// ```
public struct EmptyResponse: Decodable, Sendable, Equatable {
    /// Creates the empty value.
    public init() {}
    public init(from decoder: any Decoder) throws {}
}
