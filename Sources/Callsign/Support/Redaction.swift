public import Foundation

/// What is secret, and how it is hidden wherever Callsign shows a request: logs, cURL lines, error
/// descriptions and HAR files.
///
/// On by default. Values of secret headers and query parameters, URL user-info and secret JSON or
/// form fields in bodies are replaced by `REDACTED`.
///
/// ```swift
/// configuration.observability.redaction.secretHeaders.insert("X-Api-Key")
/// configuration.observability.redaction.secretQueryNames.insert("session")
/// configuration.observability.redaction.secretBodyFields.insert("pin")
/// ```
public struct Redaction: Sendable, Hashable {
    /// Header names whose values are secret (case-insensitive). Default: `Authorization`,
    /// `Proxy-Authorization`, `Cookie`, `Set-Cookie`, `X-Api-Key`, `X-Auth-Token`.
    public var secretHeaders: Set<String>
    /// Query parameter names whose values are secret (case-insensitive). Default: `token`,
    /// `access_token`, `refresh_token`, `id_token`, `api_key`, `apikey`, `key`, `password`,
    /// `secret`, `client_secret`, `sig`, `signature`, the signed-URL parameters of S3 and Google
    /// Cloud Storage (`X-Amz-Signature`, `X-Amz-Security-Token`, `X-Amz-Credential`,
    /// `X-Goog-Signature`, `X-Goog-Credential`), `session`, `session_id`, `sessionid`.
    public var secretQueryNames: Set<String>
    /// JSON and form field names whose values are secret, at any depth (case-insensitive).
    /// Default: `password`, `token`, `access_token`, `refresh_token`, `client_secret`, `secret`.
    public var secretBodyFields: Set<String>

    /// The text that replaces a secret.
    public static let placeholder = "REDACTED"

    /// The defaults.
    public static let `default` = Redaction()

    /// Creates the default redaction.
    public init() {
        secretHeaders = ["authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-auth-token"]
        secretQueryNames = [
            "token", "access_token", "refresh_token", "id_token", "api_key", "apikey", "key", "password", "secret",
            "client_secret", "sig", "signature", "x-amz-signature", "x-amz-security-token", "x-amz-credential",
            "x-goog-signature", "x-goog-credential", "session", "session_id", "sessionid",
        ]
        secretBodyFields = ["password", "token", "access_token", "refresh_token", "client_secret", "secret"]
    }

    /// Shows secrets as they are. For local debugging only.
    public static let none: Redaction = {
        var redaction = Redaction()
        redaction.secretHeaders = []
        redaction.secretQueryNames = []
        redaction.secretBodyFields = []
        return redaction
    }()

    /// The URL text with user-info removed and the values of secret query parameters replaced.
    ///
    /// ```swift
    /// Redaction.redact("https://u:p@example.com/x?access_token=abc")   // "https://example.com/x?access_token=REDACTED"
    /// ```
    public static func redact(_ url: String) -> String { Redaction.default.redact(url: url) }

    /// The URL text with user-info removed and the values of secret query parameters replaced.
    public func redact(url text: String) -> String {
        guard var components = URLComponents(string: text) else { return text }
        var changed = false
        if components.user != nil || components.password != nil {
            components.user = nil
            components.password = nil
            changed = true
        }
        if let items = components.percentEncodedQueryItems, !items.isEmpty {
            let redacted = items.map { item -> URLQueryItem in
                guard item.value != nil, isSecretQueryName(item.name.removingPercentEncoding ?? item.name) else { return item }
                changed = true
                return URLQueryItem(name: item.name, value: Self.placeholder)
            }
            components.percentEncodedQueryItems = redacted
        }
        return changed ? (components.string ?? text) : text
    }

    /// Whether a header's value is secret.
    public func isSecretHeader(_ name: String) -> Bool { secretHeaders.contains(name.lowercased()) }

    /// The value to show for a header.
    public func redact(header name: String, value: String) -> String {
        isSecretHeader(name) ? Self.placeholder : value
    }

    /// Headers with secret values replaced.
    public func redact(_ headers: Headers) -> Headers {
        Headers(headers.fields.map { Headers.Field(name: $0.name, value: redact(header: $0.name, value: $0.value)) })
    }

    /// A body with secret JSON or form fields replaced; other bodies are returned as they are.
    public func redact(body: Data, contentType: String?) -> Data {
        guard !secretBodyFields.isEmpty, !body.isEmpty else { return body }
        let type = contentType?.lowercased() ?? ""
        if type.contains("json") || (type.isEmpty && body.first.map { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "[") } == true) {
            guard let value = try? JSONValue(parsing: body) else { return body }
            // Bytes without a secret stay as they were (spacing, key order, escapes).
            let redacted = redact(json: value)
            return redacted == value ? body : redacted.jsonData()
        }
        if type.hasPrefix("application/x-www-form-urlencoded") {
            let text = String(decoding: body, as: UTF8.self)
            let pairs = text.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
                guard parts.count == 2, isSecretBodyField(name) else { return String(pair) }
                return "\(parts[0])=\(Self.placeholder)"
            }
            return Data(pairs.joined(separator: "&").utf8)
        }
        if type.hasPrefix("multipart/form-data"), let boundary = Self.boundary(in: contentType ?? "") {
            return redact(multipart: body, boundary: boundary)
        }
        return body
    }

    /// The `boundary` parameter of a multipart media type.
    private static func boundary(in contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                let value = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }

    /// A multipart form with the contents of secret fields (by their `name=`) replaced.
    private func redact(multipart body: Data, boundary: String) -> Data {
        let delimiter = Data("--\(boundary)".utf8)
        let headEnd = Data("\r\n\r\n".utf8)
        var result = Data()
        var cursor = body.startIndex
        while let start = body.range(of: delimiter, in: cursor..<body.endIndex) {
            result.append(body[cursor..<start.upperBound])
            cursor = start.upperBound
            guard let head = body.range(of: headEnd, in: cursor..<body.endIndex) else { break }
            let next = body.range(of: delimiter, in: head.upperBound..<body.endIndex)
            let contentEnd = next.map { $0.lowerBound - 2 } ?? body.endIndex  // the CRLF before the delimiter
            let headers = String(decoding: body[cursor..<head.lowerBound], as: UTF8.self)
            result.append(body[cursor..<head.upperBound])
            if let name = Self.fieldName(inPartHeaders: headers), isSecretBodyField(name), contentEnd >= head.upperBound {
                result.append(Data(Self.placeholder.utf8))
                cursor = contentEnd
            } else {
                cursor = head.upperBound
            }
        }
        result.append(body[cursor..<body.endIndex])
        return result
    }

    /// The `name` of a form part, from its `Content-Disposition`.
    private static func fieldName(inPartHeaders headers: String) -> String? {
        for line in headers.split(whereSeparator: \.isNewline) where line.lowercased().hasPrefix("content-disposition:") {
            for parameter in line.split(separator: ";").dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if pair.count == 2, pair[0].lowercased() == "name" { return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            }
        }
        return nil
    }

    func redact(json value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            var result: [String: JSONValue] = [:]
            for (key, member) in members {
                result[key] = isSecretBodyField(key) && !member.isNull ? .string(Self.placeholder) : redact(json: member)
            }
            return .object(result)
        case .array(let elements):
            return .array(elements.map { redact(json: $0) })
        default:
            return value
        }
    }

    /// Whether a query parameter's value is secret.
    func isSecret(queryName name: String) -> Bool { isSecretQueryName(name) }

    /// Whether a body field's value is secret.
    func isSecret(bodyField name: String) -> Bool { isSecretBodyField(name) }

    private func isSecretQueryName(_ name: String) -> Bool {
        let lowered = name.lowercased()
        let base = lowered.hasSuffix("[]") ? String(lowered.dropLast(2)) : lowered
        return secretQueryNames.contains(base)
    }

    private func isSecretBodyField(_ name: String) -> Bool { secretBodyFields.contains(name.lowercased()) }
}
