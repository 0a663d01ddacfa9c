import Foundation
import HTTPTypes

// What `print`, string interpolation, `debugPrint` and `dump` show of the values that carry
// credentials: never a secret value. Secret headers, query parameters and body fields are
// replaced as ``Redaction/default`` names them (OkHttp's `Headers.toString` is the model).
// `dump` reads a value's `customMirror`, so each type here offers one with redacted children.

extension Headers: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `[Accept: application/json, Authorization: REDACTED]`: secret values are redacted.
    public var description: String {
        "[" + fields.map { "\($0.name): \(Redaction.default.redact(header: $0.name, value: $0.value))" }.joined(separator: ", ") + "]"
    }

    /// `Headers([…])`, secret values redacted.
    public var debugDescription: String { "Headers(\(description))" }

    /// What `dump` shows: every child with secrets redacted.
    public var customMirror: Mirror {
        Mirror(self, unlabeledChildren: fields.map { "\($0.name): \(Redaction.default.redact(header: $0.name, value: $0.value))" }, displayStyle: .collection)
    }
}

extension Authentication: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The scheme and the names it adds, never a value:
    /// `Authentication(BearerAuthentication, headers: [X-Device], parameters: [api_key])`.
    public var description: String {
        var parts = [kindName]
        if !headers.fields.isEmpty { parts.append("headers: [\(headers.fields.map(\.name).joined(separator: ", "))]") }
        if !parameters.isEmpty { parts.append("parameters: [\(parameters.keys.sorted().joined(separator: ", "))]") }
        return "Authentication(\(parts.joined(separator: ", ")))"
    }

    /// The same as ``description``: no secret either way.
    public var debugDescription: String { description }

    /// What `dump` shows: every child with secrets redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "scheme": kindName, "headers": headers.fields.map(\.name), "parameters": parameters.keys.sorted(),
                "additionalOrigins": additionalOrigins.map { Redaction.default.redact(url: $0.absoluteString) },
            ], displayStyle: .struct)
    }

    /// The scheme's type, never a value: `BearerAuthentication`, `none`.
    private var kindName: String {
        scheme.map { String(describing: type(of: $0)) } ?? "none"
    }
}

extension Request: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `GET https://api.example.com/users?token=REDACTED`: the URL with secrets redacted.
    public var description: String {
        "\(self.method.rawValue) \(Redaction.default.redact(url: self.url?.absoluteString ?? self.path))"
    }

    /// The method, the redacted URL and the headers with secret values redacted.
    public var debugDescription: String { "Request(\(description), headers: \(self.headers))" }

    /// What `dump` shows: every child with secrets redacted.
    public var customMirror: Mirror {
        let redaction = Redaction.default
        return Mirror(
            self,
            children: [
                "method": self.method.rawValue, "path": redaction.redact(url: self.path),
                "url": self.url.map { redaction.redact(url: $0.absoluteString) } as Any, "headers": self.headers,
                "parameters": redaction.redact(json: .object(self.parameters)).description,
                "query": redaction.redact(json: .object(self.query)).description,
                "apiName": self.apiName as Any, "tag": self.tag as Any, "identifier": self.identifier as Any, "group": self.group as Any,
            ], displayStyle: .struct)
    }
}

extension Response: CustomStringConvertible, CustomReflectable {
    /// `200 GET https://api.example.com/users` (secrets redacted).
    public var description: String { "\(self.status.code) \(self.request.description)" }

    /// What `dump` shows: every child with secrets redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "status": self.status.code, "request": self.request, "headers": Headers(self.headers),
                "body": "\(self.body.count) bytes", "source": self.source.description,
            ], displayStyle: .struct)
    }
}

extension APIError: CustomReflectable {
    /// What `dump` shows: every child with secrets redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "code": self.code.description, "description": description, "request": self.request as Any, "response": self.response as Any,
            ], displayStyle: .struct)
    }
}

extension QueuedRequest: CustomStringConvertible, CustomReflectable {
    /// `#12 POST https://api.example.com/notes` (secrets redacted).
    public var description: String { "#\(id) \(method) \(Redaction.default.redact(url: url))" }

    /// What `dump` shows: every child with secrets redacted.
    public var customMirror: Mirror {
        let redaction = Redaction.default
        return Mirror(
            self,
            children: [
                "id": id, "enqueuedAt": enqueuedAt, "apiName": apiName as Any, "method": method, "url": redaction.redact(url: url),
                "headers": headers, "body": body.map { "\($0.count) bytes" } as Any, "attempts": attempts,
                "lastError": lastError as Any,
            ], displayStyle: .struct)
    }
}

extension CachedResponse: CustomStringConvertible, CustomReflectable {
    /// `200 GET https://api.example.com/users (partition 3f2a…)` (secrets redacted).
    public var description: String {
        "\(status) \(method) \(Redaction.default.redact(url: url))" + (partition.isEmpty ? "" : " (partition \(partition.prefix(8))…)")
    }

    /// What `dump` shows: every child with secrets redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "url": Redaction.default.redact(url: url), "method": method, "status": status, "headers": Headers(headers),
                "body": "\(body.count) bytes", "partition": String(partition.prefix(8)) + "…",
                "varyingHeaders": varyingHeaders.keys.sorted(),
            ], displayStyle: .struct)
    }
}
