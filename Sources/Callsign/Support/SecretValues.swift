import Foundation

/// The exact secret values one request carries, so they can be masked wherever they show up
/// again — in a log line, a cURL command, an error message, or a response body that echoes the
/// request — as CI systems mask registered secrets in build logs.
///
/// Collected from what the client itself sends: values of secret headers (and the token or the
/// Basic user/password inside an `Authorization`), secret query parameters and body fields as
/// the ``Redaction`` names them — in the parameters, and in a JSON or form body given as bytes —
/// and the values it knows ahead of time (the authentication's).
struct SecretValues: Sendable {
    /// Values shorter than this are not masked: masking "1" or "yes" would shred every text.
    static let minimumLength = 4

    /// Longest first, so a value that contains another is masked whole.
    let values: [String]

    init(request: Request?, redaction: Redaction) {
        var found = Set<String>()
        func add(_ value: String) {
            let trimmed = value.trimmingCharacters(in: .whitespaces)
            guard trimmed.count >= Self.minimumLength, trimmed != Redaction.placeholder else { return }
            found.insert(trimmed)
            if let encoded = trimmed.addingPercentEncoding(withAllowedCharacters: .alphanumerics), encoded != trimmed {
                found.insert(encoded)
            }
        }
        func addAuthorization(_ value: String) {
            add(value)
            let parts = value.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { return }
            let credential = String(parts[1])
            add(credential)
            if parts[0].lowercased() == "basic", let decoded = Data(base64Encoded: credential).map({ String(decoding: $0, as: UTF8.self) }) {
                add(decoded)
                if let colon = decoded.firstIndex(of: ":") { add(String(decoded[decoded.index(after: colon)...])) }
            }
        }
        if let request {
            for field in request.headers.fields where redaction.isSecretHeader(field.name) {
                addAuthorization(field.value)
            }
            let url = request.url?.absoluteString ?? request.path
            for item in URLComponents(string: url)?.queryItems ?? [] where redaction.isSecret(queryName: item.name) {
                if let value = item.value { add(value) }
            }
            for (name, value) in request.parameters.merging(request.query, uniquingKeysWith: { first, _ in first }) {
                Self.collect(value, named: name, redaction: redaction, into: add)
            }
            // A body given as bytes carries its secrets in no parameter: read them from the body.
            if let body = request.body, let data = body.content.inMemoryData {
                let contentType = request.headers["Content-Type"] ?? body.contentType
                for value in redaction.secretValues(inBody: data, contentType: contentType) { add(value) }
            }
        }
        for value in redaction.secretValues { addAuthorization(value) }
        values = found.sorted { $0.count > $1.count }
    }

    /// Secret body fields and query names at any depth of a parameter value.
    private static func collect(_ value: JSONValue, named name: String, redaction: Redaction, into add: (String) -> Void) {
        switch value {
        case .object(let members):
            for (key, member) in members { collect(member, named: key, redaction: redaction, into: add) }
        case .array(let elements):
            for element in elements { collect(element, named: name, redaction: redaction, into: add) }
        default:
            if redaction.isSecret(bodyField: name) || redaction.isSecret(queryName: name), let text = value.scalarText { add(text) }
        }
    }

    /// Whether any secret value occurs in `data`.
    func appears(in data: Data) -> Bool {
        values.contains { data.range(of: Data($0.utf8)) != nil }
    }

    /// Whether any secret value occurs in `text`.
    func appears(in text: String) -> Bool {
        values.contains { text.contains($0) }
    }

    /// `text` with every secret value replaced by `REDACTED`.
    func mask(_ text: String) -> String {
        guard !values.isEmpty else { return text }
        var result = text
        for value in values where result.contains(value) {
            result = result.replacingOccurrences(of: value, with: Redaction.placeholder)
        }
        return result
    }

    /// `data` with every secret value's UTF-8 bytes replaced by `REDACTED`.
    func mask(_ data: Data) -> Data {
        guard !values.isEmpty, !data.isEmpty else { return data }
        var result = data
        let placeholder = Data(Redaction.placeholder.utf8)
        for value in values {
            let needle = Data(value.utf8)
            var searchStart = result.startIndex
            while let range = result.range(of: needle, in: searchStart..<result.endIndex) {
                result.replaceSubrange(range, with: placeholder)
                searchStart = range.lowerBound + placeholder.count
            }
        }
        return result
    }
}

/// Everything that shows a request or a response to a person or a file — logs, cURL lines,
/// error descriptions, HAR archives — goes through one mask: secrets by name (the
/// ``Redaction``), then secrets by value (``SecretValues``), so an echoed token is hidden too.
struct SecretMask: Sendable {
    let redaction: Redaction
    let secrets: SecretValues

    init(redaction: Redaction, request: Request?) {
        self.redaction = redaction
        self.secrets = SecretValues(request: request, redaction: redaction)
    }

    func url(_ text: String) -> String { secrets.mask(redaction.redact(url: text)) }

    func header(_ name: String, _ value: String) -> String { secrets.mask(redaction.redact(header: name, value: value)) }

    func body(_ data: Data, contentType: String?) -> Data { secrets.mask(redaction.redact(body: data, contentType: contentType)) }

    func text(_ text: String) -> String { secrets.mask(text) }
}
