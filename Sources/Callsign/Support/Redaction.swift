public import Foundation

/// What is secret, and how it is hidden wherever Callsign shows or keeps a request: logs, cURL
/// lines, error descriptions, HAR files, the HTTP cache's partitions and the offline queue.
///
/// On by default. Secrets are recognised by a *name rule*, not a short list: a header, query
/// parameter or body field whose name contains one of ``secretNameFragments`` (`token`, `key`,
/// `secret`, `auth`, `password`, `passwd`, `session`, `signature`, `credential`, `cookie`, in any
/// case) is secret. So `Private-Token`, `Api-Key`, `X-Auth-Token`, `apikey` and `sessionid` are
/// secret without being listed. A false positive costs a masked log line; a false negative would
/// leak a credential, so the rule matches fragments anywhere, even inside a longer word.
///
/// It has exactly two kinds of exception, each decided by a definition rather than by a list
/// that grows whenever a name is masked by accident:
///
/// - **Fields a standard defines as carrying no secret** (``publicNames``, matched as whole
///   names). A name is here only when the document that registers it says what its value is, and
///   that value is not a credential: the CORS `Access-Control-*` fields of the Fetch standard
///   (origins, methods, header *names*, a Boolean, an age), the challenges `WWW-Authenticate`
///   and `Proxy-Authenticate` (RFC 9110 §11.6.1, §11.7.1), `Sec-WebSocket-Key` and
///   `Sec-WebSocket-Accept` (a nonce and its hash, RFC 6455 §4.1, §4.2.2) and `Idempotency-Key`
///   (a request identifier). `Authentication-Info` is not one of them: it can carry a digest
///   response.
/// - **Ordinary words that contain a fragment's letters** (``publicWords``, matched against the
///   words of a name split at every character that is not a letter or digit and where a lower-case
///   letter meets a capital): `author`, `authority`, `keyword`, `tokenizer`. A fragment inside
///   such a word does not count, but any other fragment still does, so `author_id` and
///   `bookAuthor` are public while `author_token` is secret.
///
/// A secret's value is replaced by `REDACTED` when it is shown, is part of the cache's partition
/// (a response to `Private-Token: A` is never served to `Private-Token: B`) and is never stored in
/// clear: not in the cache, not in the offline queue. URL user-info is always removed.
///
/// ```swift
/// configuration.observability.redaction.secretHeaders.insert("X-Tenant")   // one more exact name
/// configuration.observability.redaction.secretNameFragments.append("pin")  // every name with "pin"
/// configuration.observability.redaction.publicNames.insert("sort_key")     // not a secret here
/// configuration.observability.redaction.publicWords.insert("monkey")       // a word, not a key
/// ```
public struct Redaction: Sendable, Hashable {
    /// Name fragments that make a header, query parameter or body field secret (compared in
    /// lower case): `token`, `key`, `secret`, `auth`, `password`, `passwd`, `session`,
    /// `signature`, `credential`, `cookie`.
    public var secretNameFragments: [String]
    /// Whole names that contain a fragment but are not secret (case-insensitive): the fields a
    /// standard defines as carrying no credential. Default: `Idempotency-Key`,
    /// `WWW-Authenticate`, `Proxy-Authenticate`, `Sec-WebSocket-Key`, `Sec-WebSocket-Accept` and
    /// the CORS fields of the Fetch standard (`Access-Control-Allow-Credentials`,
    /// `Access-Control-Allow-Headers`, `Access-Control-Allow-Methods`, `Access-Control-Allow-Origin`,
    /// `Access-Control-Expose-Headers`, `Access-Control-Max-Age`, `Access-Control-Request-Headers`,
    /// `Access-Control-Request-Method`).
    public var publicNames: Set<String>
    /// Words in which a fragment's letters are part of another word (case-insensitive), matched
    /// against each word of a name: a fragment inside one of them does not make the name
    /// secret. Default: `author`, `authors`, `authority`, `keyword`, `keywords`, `tokenizer`.
    ///
    /// ```swift
    /// Redaction.default.isSecretName("X-Author-Id")      // false: "auth" is inside "author"
    /// Redaction.default.isSecretName("author_token")     // true: "token" is a word of its own
    /// ```
    public var publicWords: Set<String>
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
        // Each is registered with a definition of its value that is not a credential (see above).
        publicNames = [
            "idempotency-key", "www-authenticate", "proxy-authenticate", "sec-websocket-key", "sec-websocket-accept",
            "access-control-allow-credentials", "access-control-allow-headers", "access-control-allow-methods",
            "access-control-allow-origin", "access-control-expose-headers", "access-control-max-age",
            "access-control-request-headers", "access-control-request-method",
        ]
        publicWords = ["author", "authors", "authority", "keyword", "keywords", "tokenizer"]
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

    /// Whether a name is secret by the name rule: it contains a fragment outside the public words,
    /// and is not a public name.
    ///
    /// ```swift
    /// Redaction.default.isSecretName("Private-Token")                     // true
    /// Redaction.default.isSecretName("Idempotency-Key")                   // false
    /// Redaction.default.isSecretName("Access-Control-Allow-Credentials")  // false
    /// ```
    public func isSecretName(_ name: String) -> Bool { isSecret(name, listed: []) }

    /// The one check behind every kind of name: listed exactly, or caught by the rule.
    private func isSecret(_ name: String, listed: Set<String>) -> Bool {
        let lowered = name.lowercased()
        if listed.contains(lowered) { return true }
        guard secretNameFragments.contains(where: { Self.bytes(of: lowered, contain: $0) }) else { return false }
        guard !publicNames.contains(lowered) else { return false }
        // Only a name that holds a fragment is split into words: the usual header has none.
        guard !publicWords.isEmpty else { return true }
        let rest = withoutPublicWords(name)
        return secretNameFragments.contains { Self.bytes(of: rest, contain: $0) }
    }

    /// `name` in lower case with each public word replaced by a NUL, so that a fragment found in
    /// what is left lies outside every public word (and cannot be made of the letters on both
    /// sides of one). Words end at any character that is not a letter or a digit, and before a
    /// capital that follows a lower-case letter (`bookAuthor` is `book` and `author`).
    private func withoutPublicWords(_ name: String) -> String {
        var rest = ""
        var word = ""
        var previousIsLowercase = false
        func endWord() {
            guard !word.isEmpty else { return }
            let lowered = word.lowercased()
            rest += publicWords.contains(lowered) ? "\u{0}" : lowered
            word = ""
        }
        for scalar in name.unicodeScalars {
            let properties = scalar.properties
            guard properties.isAlphabetic || properties.numericType != nil else {
                endWord()
                rest += String(scalar).lowercased()
                previousIsLowercase = false
                continue
            }
            if properties.isUppercase, previousIsLowercase { endWord() }
            word.unicodeScalars.append(scalar)
            previousIsLowercase = properties.isLowercase
        }
        endWord()
        return rest
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
    public func isSecretHeader(_ name: String) -> Bool { isSecret(name, listed: secretHeaders) }

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
            return Self.maskingJSONMembers(of: body, where: isSecretBodyField) ?? body
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

    /// The values of a body's secret JSON members or form fields, as they appear in it and
    /// decoded: what a server that echoes the body would send back, so that ``SecretValues``
    /// masks them wherever they show up again (a raw body is not in the request's parameters).
    func secretValues(inBody body: Data, contentType: String?) -> [String] {
        guard !body.isEmpty else { return [] }
        let type = contentType?.lowercased() ?? ""
        if type.contains("json") || (type.isEmpty && body.first.map { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "[") } == true) {
            let bytes = [UInt8](body)
            return (JSONScan.secretValues(in: bytes, where: isSecretBodyField) ?? []).flatMap { range -> [String] in
                let token = bytes[range]
                guard token.first == UInt8(ascii: "\"") else {
                    // `true` and `false` are in every JSON text: masking them would hide nothing and shred the rest.
                    let text = String(decoding: token, as: UTF8.self)
                    return text == "true" || text == "false" ? [] : [text]
                }
                let raw = String(decoding: token.dropFirst().dropLast(), as: UTF8.self)
                let decoded = JSONScan.name(token)
                return decoded == raw ? [raw] : [raw, decoded]
            }
        }
        if type.hasPrefix("application/x-www-form-urlencoded") {
            return String(decoding: body, as: UTF8.self).split(separator: "&").flatMap { pair -> [String] in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, isSecretBodyField(String(parts[0]).removingPercentEncoding ?? String(parts[0])) else { return [] }
                let raw = String(parts[1])
                let decoded = raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? raw
                return decoded == raw ? [raw] : [raw, decoded]
            }
        }
        return []
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
        let base = name.hasSuffix("[]") ? String(name.dropLast(2)) : name
        return isSecret(base, listed: secretQueryNames)
    }

    private func isSecretBodyField(_ name: String) -> Bool { isSecret(name, listed: secretBodyFields) }
}
