import Foundation

/// A request as a `curl` command line, to reproduce a call in a terminal. Secrets are redacted
/// unless you pass ``Redaction/none``.
///
/// ```swift
/// let curl = try client.curlCommand(for: .post("boards", parameters: ["title": "Balsa"]))
/// print(curl)   // curl -X POST 'https://…/boards' -H 'Content-Type: application/json' --data-binary '{"title":"Balsa"}'
/// ```
public struct CURLCommand: Sendable, CustomStringConvertible {
    /// The command line.
    public let text: String

    init(request: Request, body: Data?, mask: SecretMask) {
        var parts = ["curl", "-sS"]
        if request.method != .get || (body != nil && request.method == .get) { parts += ["-X", request.method.rawValue] }
        if request.method == .head { parts = ["curl", "-sS", "-I"] }
        parts.append(Self.quote(mask.url(request.url?.absoluteString ?? request.path)))
        for field in request.headers.fields {
            parts += ["-H", Self.quote("\(field.name): \(mask.header(field.name, field.value))")]
        }
        if let body, !body.isEmpty {
            let shown = mask.body(body, contentType: request.headers["Content-Type"])
            if let text = String(data: shown, encoding: .utf8) {
                parts += ["--data-binary", Self.quote(text)]
            } else {
                parts += ["--data-binary", Self.quote("<\(body.count) bytes of binary data>")]
            }
        }
        text = parts.joined(separator: " ")
    }

    public var description: String { text }

    /// Quotes for POSIX shells: single quotes, with embedded single quotes closed and escaped.
    static func quote(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

extension APIClient {
    /// The `curl` command line that sends `request` as this client would (without middlewares
    /// that run later, such as authentication). Secrets are redacted by the client's
    /// ``Configuration/Observability/redaction`` unless you pass another.
    ///
    /// - Throws: ``APIError`` when the request cannot be built.
    public func curlCommand(for request: Request, redaction: Redaction? = nil) async throws(APIError) -> CURLCommand {
        var request = request
        try factory.resolveTarget(&request)
        let prepared = try factory.prepare(&request)
        let body = try await prepared.body?.collect()
        let mask = SecretMask(redaction: redaction ?? credentialRedaction, request: request)
        return CURLCommand(request: request, body: body, mask: mask)
    }
}
