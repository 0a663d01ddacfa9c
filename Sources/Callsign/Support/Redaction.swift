public import Foundation

/// What is secret, and how it is hidden wherever Callsign shows or keeps a request: logs, cURL
/// lines, error descriptions, HAR files, the HTTP cache's partitions and the offline queue.
///
/// On by default. Secrets are recognised by a *name rule*, not a short list: a header, query
/// parameter or body field whose name contains one of ``secretNameFragments`` (`token`, `key`,
/// `secret`, `auth`, `password`, `passwd`, `session`, `signature`, `credential`, `cookie`, in any
/// case) is secret, unless it is one of the known non-secrets in ``publicNames`` (such as
/// `Idempotency-Key`). So `Private-Token`, `Api-Key`, `X-Auth-Token` and `sessionid` are secret
/// without being listed. A false positive costs a masked log line; a false negative would leak a
/// credential.
///
/// A secret's value is replaced by `REDACTED` when it is shown, is part of the cache's partition
/// (a response to `Private-Token: A` is never served to `Private-Token: B`) and is never stored in
/// clear: not in the cache, not in the offline queue. URL user-info is always removed.
///
/// ```swift
/// configuration.observability.redaction.secretHeaders.insert("X-Tenant")   // one more exact name
/// configuration.observability.redaction.secretNameFragments.append("pin")  // every name with "pin"
/// configuration.observability.redaction.publicNames.insert("sort_key")     // not a secret here
/// ```
public struct Redaction: Sendable, Hashable {
    /// Name fragments that make a header, query parameter or body field secret (compared in
    /// lower case): `token`, `key`, `secret`, `auth`, `password`, `passwd`, `session`,
    /// `signature`, `credential`, `cookie`.
    public var secretNameFragments: [String]
    /// Names that contain a fragment but are not secret (case-insensitive): `Idempotency-Key`,
    /// `WWW-Authenticate` (a server's challenge), and the words `author`, `authors`, `authority`,
    /// `keyword`, `keywords`, `tokenizer`.
    public var publicNames: Set<String>
    /// More header names whose values are secret (case-insensitive), beside the name rule.
    /// Default: `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, `X-Api-Key`,
    /// `X-Auth-Token` (all also caught by the rule).
    public var secretHeaders: Set<String>
    /// More query parameter names whose values are secret (case-insensitive), beside the name
    /// rule. Default: `sig` and the names the rule catches anyway (`access_token`, `api_key`,
    /// `X-Amz-Signature`, `X-Goog-Credential`, `session_id`, …).
    public var secretQueryNames: Set<String>
    /// More JSON and form field names whose values are secret at any depth (case-insensitive),
    /// beside the name rule. Default: `password`, `token`, `access_token`, `refresh_token`,
    /// `client_secret`, `secret`.
    public var secretBodyFields: Set<String>
    /// Secret values known ahead of time (an authentication's password or key), masked
    /// wherever they show up, beside the values a request's secret names carry.
    var secretValues: [String] = []

    /// The text that replaces a secret.
    public static let placeholder = "REDACTED"

    /// The defaults.
    public static let `default` = Redaction()

    /// Creates the default redaction.
    public init() {
        secretNameFragments = ["token", "key", "secret", "auth", "password", "passwd", "session", "signature", "credential", "cookie"]
        publicNames = ["idempotency-key", "www-authenticate", "author", "authors", "authority", "keyword", "keywords", "tokenizer"]
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
        redaction.secretNameFragments = []
        redaction.secretHeaders = []
        redaction.secretQueryNames = []
        redaction.secretBodyFields = []
        return redaction
    }()

    /// Whether a name is secret by the name rule: it contains a fragment and is not public.
    ///
    /// ```swift
    /// Redaction.default.isSecretName("Private-Token")    // true
    /// Redaction.default.isSecretName("Idempotency-Key")  // false
    /// ```
    public func isSecretName(_ name: String) -> Bool { isSecret(lowered: name.lowercased(), listed: []) }

    /// The one check behind every kind of name: listed exactly, or caught by the rule. The name
    /// is lowered once by the caller.
    private func isSecret(lowered: String, listed: Set<String>) -> Bool {
        if listed.contains(lowered) { return true }
        guard secretNameFragments.contains(where: { Self.bytes(of: lowered, contain: $0) }) else { return false }
        return !publicNames.contains(lowered)
    }

    /// Whether `fragment`'s UTF-8 bytes appear in `text`'s (an empty fragment appears nowhere).
    /// Names are matched byte for byte rather than by Foundation's `contains`, a canonical
    /// Unicode search that costs about 0.2 µs per fragment and runs for every header of every
    /// call the cache, a log or a recording looks at; a name with a combining mark after a
    /// fragment's letters now counts as containing it, which only ever hides more.
    private static func bytes(of text: String, contain fragment: String) -> Bool {
        var text = text
        var fragment = fragment
        return text.withUTF8 { haystack in
            fragment.withUTF8 { needle in
                guard let first = needle.first, needle.count <= haystack.count else { return false }
                var start = 0
                while start <= haystack.count - needle.count {
                    if haystack[start] == first {
                        var matched = 1
                        while matched < needle.count, haystack[start + matched] == needle[matched] { matched += 1 }
                        if matched == needle.count { return true }
                    }
                    start += 1
                }
                return false
            }
        }
    }

    /// Adds exact names to every kind of secret (headers, query parameters and body fields), as
    /// the command line's `--secret-name` does.
    public mutating func addSecretNames(_ names: some Sequence<String>) {
        for name in names {
            let lowered = name.lowercased()
            secretHeaders.insert(lowered)
            secretQueryNames.insert(lowered)
            secretBodyFields.insert(lowered)
        }
    }

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

    /// Whether a header's value is secret: by the name rule, or listed in ``secretHeaders``.
    public func isSecretHeader(_ name: String) -> Bool { isSecret(lowered: name.lowercased(), listed: secretHeaders) }

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
        guard !secretBodyFields.isEmpty || !secretNameFragments.isEmpty, !body.isEmpty else { return body }
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
        return isSecret(lowered: base, listed: secretQueryNames)
    }

    private func isSecretBodyField(_ name: String) -> Bool { isSecret(lowered: name.lowercased(), listed: secretBodyFields) }
}
