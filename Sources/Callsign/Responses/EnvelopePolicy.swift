import Foundation

/// Reads *adaptive response envelopes* (xAPI): HTTP-200 bodies such as
/// `{"code": 0, "msg": "", "data": {…}}` whose own code says whether the call succeeded.
///
/// The code is the first present of ``codeKeys`` (`errcode`, `code`, `errorno`, `errCode`), the
/// message the first of ``messageKeys`` (`errmsg`, `msg`, `errormsg`, `errMsg`) — xAPI's order —
/// and the payload the first of ``payloadKeys`` (`data`, `ret`). A code outside ``successCodes``
/// (0 and 200) becomes an ``APIError`` with ``APIError/Code/envelope`` carrying the code and
/// message; on success, ``Response/decode(_:decoder:)`` decodes the payload. A body that is not
/// a JSON object, or has no payload key, is decoded as it is.
///
/// Error bodies are read too: a `500` whose body is `{"code": 5001, "msg": "db down"}` fails
/// with ``APIError/Code/unacceptableStatus`` carrying ``APIError/Fields/envelopeCode`` 5001 and
/// ``APIError/Fields/envelopeMessage`` "db down".
///
/// ```swift
/// let client = APIClient(configuration: .init { $0.responses.envelope = .standard })
/// let user = try await client.get("/v1/me").send().decode(User.self)   // decodes "data"
/// ```
///
/// Turn it on or off per definition with `envelope: true|false`, per request with
/// ``CallOptions/usesEnvelope``.
public struct EnvelopePolicy: Sendable, Hashable {
    /// Keys that may hold the code, tried in order.
    public var codeKeys: [String]
    /// Keys that may hold the message, tried in order.
    public var messageKeys: [String]
    /// Keys that may hold the payload, tried in order.
    public var payloadKeys: [String]
    /// Codes that mean success.
    public var successCodes: Set<Int>

    /// xAPI's keys, tried in this order: `errcode`/`code`/`errorno`/`errCode`,
    /// `errmsg`/`msg`/`errormsg`/`errMsg`, `data`/`ret`; success is 0 or 200.
    public static let standard = EnvelopePolicy()

    /// Creates a policy; every list is configurable.
    public init(
        codeKeys: [String] = ["errcode", "code", "errorno", "errCode"],
        messageKeys: [String] = ["errmsg", "msg", "errormsg", "errMsg"],
        payloadKeys: [String] = ["data", "ret"],
        successCodes: Set<Int> = [0, 200]
    ) {
        self.codeKeys = codeKeys
        self.messageKeys = messageKeys
        self.payloadKeys = payloadKeys
        self.successCodes = successCodes
    }

    /// What an envelope says: its code and message, if present, and the payload.
    public struct Contents: Sendable, Hashable {
        /// The envelope's code, if it has one.
        public var code: Int?
        /// The envelope's message, if it has one.
        public var message: String?
        /// The payload, if it has one.
        public var payload: JSONValue?
    }

    /// Reads an object as an envelope; `nil` if it is not an object.
    public func read(_ value: JSONValue) -> Contents? {
        guard case .object(let members) = value else { return nil }
        var contents = Contents()
        for key in codeKeys {
            guard let found = members[key], !found.isNull else { continue }
            contents.code = found.intValue ?? found.stringValue.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            break
        }
        for key in messageKeys {
            guard let found = members[key], !found.isNull else { continue }
            contents.message = found.stringValue ?? found.description
            break
        }
        for key in payloadKeys {
            guard let found = members[key], !found.isNull else { continue }
            contents.payload = found
            break
        }
        return contents
    }
}

extension Response {
    /// The envelope's contents, when the envelope is enabled for this response and the body is a
    /// JSON object; `nil` otherwise.
    public var envelope: EnvelopePolicy.Contents? {
        guard let policy = activeEnvelopePolicy, let body = try? jsonBody(), let value = try? JSONValue(parsing: body) else { return nil }
        return policy.read(value)
    }

    /// The body read as `policy` reads envelopes: `nil` unless it is a JSON object within the
    /// depth limit (too deep: no envelope; decoding then reports the depth).
    func envelopeContents(_ policy: EnvelopePolicy) -> EnvelopePolicy.Contents? {
        guard let body = try? jsonBody(),
            body.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) == UInt8(ascii: "{"),
            self.settings.maximumJSONDepth >= JSONDepth.foundationLimit || !JSONDepth.exceeds(body, limit: self.settings.maximumJSONDepth),
            let value = try? JSONValue(parsing: body)
        else { return nil }
        return policy.read(value)
    }

    var activeEnvelopePolicy: EnvelopePolicy? {
        switch self.request.usesEnvelope {
        case .some(false): nil
        case .some(true): self.settings.envelope ?? .standard
        case .none: self.settings.envelope
        }
    }

    /// Checks the envelope and returns its payload as JSON data; `nil` when there is no envelope
    /// or it has no payload (then the whole body is the payload).
    func envelopePayload() throws(APIError) -> Data? {
        guard let policy = activeEnvelopePolicy, (200..<300).contains(self.status.code),
            let contents = envelopeContents(policy)
        else { return nil }
        if let code = contents.code, !policy.successCodes.contains(code) {
            var error = APIError(
                .envelope,
                localized: contents.message.map { said in "the server reported code \(code): \(said)" } ?? "the server reported code \(code)",
                request: self.request, response: self)
            error.envelopeCode = code
            error.envelopeMessage = contents.message
            throw error
        }
        return contents.payload?.jsonData()
    }
}
