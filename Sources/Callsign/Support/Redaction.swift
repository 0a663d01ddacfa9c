import Foundation

/// Removes secrets from text that may be shown to people: URL user-info and the values of
/// query parameters whose names mark them as secret.
public struct Redaction: Sendable {
    /// Query parameter names whose values are secret (compared case-insensitively).
    var secretQueryNames: Set<String> = ["token", "access_token", "refresh_token", "api_key", "apikey", "key", "password", "secret", "sig", "signature", "client_secret"]

    static let `default` = Redaction()

    /// The URL text with user-info removed and the values of secret query parameters
    /// (`token`, `access_token`, `api_key`, `password`, `sig`, …) replaced by `REDACTED`.
    ///
    /// ```swift
    /// Redaction.redact("https://u:p@example.com/x?access_token=abc")   // "https://example.com/x?access_token=REDACTED"
    /// ```
    public static func redact(_ url: String) -> String { Redaction.default.redact(url: url) }
    static let placeholder = "REDACTED"

    /// The URL with user-info removed and secret query values replaced.
    func redact(url text: String) -> String {
        guard var components = URLComponents(string: text) else { return text }
        var changed = false
        if components.user != nil || components.password != nil {
            components.user = nil
            components.password = nil
            changed = true
        }
        if let items = components.percentEncodedQueryItems, !items.isEmpty {
            let redacted = items.map { item -> URLQueryItem in
                let name = (item.name.removingPercentEncoding ?? item.name).lowercased()
                let base = name.hasSuffix("[]") ? String(name.dropLast(2)) : name
                guard secretQueryNames.contains(base), item.value != nil else { return item }
                changed = true
                return URLQueryItem(name: item.name, value: Self.placeholder)
            }
            components.percentEncodedQueryItems = redacted
        }
        return changed ? (components.string ?? text) : text
    }
}
