import Foundation
import HTTPTypes

extension CacheStage {
    /// Fields a `304` carries from the response it stands for (RFC 9110 §15.4.5).
    private static let keptIn304: [HTTPField.Name] = [.eTag, .cacheControl, .contentLocation, .date, .expires, .vary, .lastModified, .age]

    /// The caller's own `If-None-Match` / `If-Modified-Since` evaluated against what the cache
    /// would answer (RFC 9111 §4.3.2, RFC 9110 §13.2.2): a `304 Not Modified` with the answer's
    /// validators and freshness when the caller already has it, else the answer unchanged.
    static func answeringCallerConditional(_ response: Response, requestHeaders: Headers) -> Response {
        guard response.status.code == 200, response.request.method == .get || response.request.method == .head else { return response }
        let matches: Bool
        if let wanted = requestHeaders["If-None-Match"] {
            // If-None-Match decides alone when present; compared weakly (W/ ignored).
            guard let tag = response.headers[values: .eTag].first else { return response }
            matches = wanted.trimmingCharacters(in: .whitespaces) == "*" || entityTags(wanted).contains(weak(tag))
        } else if let sinceText = requestHeaders["If-Modified-Since"], let since = HTTPDate.parse(sinceText) {
            guard let modifiedText = response.headers[.lastModified] ?? response.headers[.date], let modified = HTTPDate.parse(modifiedText)
            else { return response }
            matches = modified <= since
        } else {
            return response
        }
        guard matches else { return response }
        var fields = HTTPFields()
        for name in keptIn304 { fields.append(contentsOf: response.headers.filter { $0.name == name }) }
        var notModified = Response(request: response.request, status: .notModified, headers: fields, body: Data())
        notModified.source = response.source
        notModified.duration = response.duration
        notModified.httpVersion = response.httpVersion
        return notModified
    }

    /// The entity tags of an `If-None-Match` list, without `W/` (at most 64: outside data).
    private static func entityTags(_ list: String) -> Set<String> {
        Set(list.split(separator: ",").prefix(64).map { weak(String($0)) })
    }

    /// An entity tag for weak comparison: trimmed, without `W/`.
    private static func weak(_ tag: String) -> String {
        let trimmed = tag.trimmingCharacters(in: .whitespaces)
        return trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed
    }
}
