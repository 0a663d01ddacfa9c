import Callsign
import Foundation
import OpenAPIKit

/// What an expanded endpoint of the document becomes: an ``OpenAPIOperations/Operation`` with its
/// parameters, body and response type, and the base URL the document's first server names.
extension OpenAPIOperations {
    /// `written` is the operation as the document writes it, which `texts` reads its schemas from.
    static func operation(
        _ endpoint: OpenAPIKit.ResolvedEndpoint, name: String, written: [String: JSONValue]?, texts: inout SchemaTexts
    ) -> Operation {
        let parameters = endpoint.parameters.compactMap { parameter -> Parameter? in
            let location: Location
            switch parameter.context {
            case .path: location = .path
            case .query: location = .query
            case .header: location = .header
            case .cookie: location = .cookie
            default: return nil
            }
            var type: String?
            var allowed: [String]?
            var style = location == .query || location == .cookie ? "form" : "simple"
            var explode = style == "form"
            if case .a(let context) = parameter.schemaOrContent {
                type = context.schema.ownType?.rawValue
                allowed = context.schema.ownKeywords.allowedValues?.map { "\($0.value)" }
                style = context.style.rawValue
                explode = context.explode
            }
            return Parameter(
                name: parameter.name, location: location, required: parameter.required, type: type, allowedValues: allowed,
                style: style, explode: explode, summary: parameter.description)
        }
        let body = endpoint.requestBody
        let bodyType = body.flatMap { body in preferredMediaType(body.content.keys.map { $0.rawValue }) }
        let bodySchema = bodyType.flatMap { texts.bodySchema(of: written, mediaType: $0) }
        var responses: [DocumentedResponse] = []
        for (status, response) in endpoint.responses {
            let type = preferredMediaType(response.content.keys.map { $0.rawValue })
            responses.append(
                DocumentedResponse(
                    status: status.rawValue.uppercased() == "DEFAULT" ? "default" : status.rawValue.uppercased(),
                    summary: response.description.flatMap { $0.isEmpty ? nil : $0 }, contentType: type,
                    schema: type.flatMap { texts.responseSchema(of: written, status: status.rawValue, mediaType: $0) }))
        }
        responses.sort { $0.status < $1.status }
        return Operation(
            name: name, method: endpoint.method.rawValue.uppercased(), path: endpoint.path.rawValue,
            summary: endpoint.endpointSummary ?? endpoint.routeSummary, parameters: parameters, bodyContentType: bodyType,
            bodyRequired: body?.required ?? false, bodySchema: bodySchema,
            needsAuthorization: !endpoint.security.isEmpty, responses: responses, eventStream: eventStream(endpoint))
    }

    /// Whether the operation's success answers (2xx codes and `2XX`) are event streams: all of
    /// them, some, or none.
    static func eventStream(_ endpoint: OpenAPIKit.ResolvedEndpoint) -> EventStreamAnswer? {
        let success = endpoint.responses.filter { status, _ in
            let code = status.rawValue.uppercased()
            return code == "2XX" || Int(code).map { (200..<300).contains($0) } ?? false
        }
        let types = success.flatMap { $0.value.content.keys.map { Response.mediaType(of: Substring($0.rawValue)) } }
        guard types.contains("text/event-stream") else { return nil }
        return types.allSatisfy { $0 == "text/event-stream" } ? .only : .optional
    }

    /// One documented answer's status as OpenAPIKit reads it (`200`, `2XX`, `default`) and the
    /// schema of its JSON media type, if it has one.
    struct Answer {
        let status: String
        let schema: OpenAPIKit.DereferencedJSONSchema?
    }

    static func responseType(_ answers: [Answer]) -> ResponseType? {
        // The lowest documented 2xx code, and its JSON media type.
        let success = answers.compactMap { answer in Int(answer.status).map { ($0, answer) } }
            .filter { (200..<300).contains($0.0) }.min { $0.0 < $1.0 }?.1
        guard let schema = success?.schema else { return nil }
        switch kind(of: schema) {
        case .array?: return .objects
        case .object?: return .object
        default: return nil
        }
    }

    /// A schema's JSON type, and for `allOf` the one type all its parts share.
    static func kind(of schema: OpenAPIKit.DereferencedJSONSchema) -> OpenAPIKit.JSONType? {
        if let type = schema.ownType { return type }
        guard case .all(of: let parts, core: _) = schema else { return nil }
        let kinds = Set(parts.map { kind(of: $0) })
        return kinds.count == 1 ? kinds.first ?? nil : nil
    }

    /// Which media type of several to send: JSON, then a form, then multipart, then the first
    /// by name. (The document's own order does not survive the bounded reader.)
    static func preferredMediaType(_ types: [String]) -> String? {
        let sorted = types.sorted()
        return sorted.first { $0 == "application/json" } ?? sorted.first { $0.contains("json") }
            ?? sorted.first { $0 == "application/x-www-form-urlencoded" } ?? sorted.first { $0.hasPrefix("multipart/") } ?? sorted.first
    }

    /// The schema of the JSON media type of `content`, `application/json` first.
    static func jsonSchema(of content: OpenAPIKit.DereferencedContent.Map) -> OpenAPIKit.DereferencedJSONSchema? {
        let types = content.keys.map { $0.rawValue }.filter { $0.contains("json") }
        guard let chosen = preferredMediaType(types) else { return nil }
        return content.first { $0.key.rawValue == chosen }?.value.schema
    }

    static func contentType(_ mediaType: String) -> ContentType {
        if mediaType.contains("json") { return .json }
        if mediaType == "application/x-www-form-urlencoded" { return .formURLEncoded }
        if mediaType.hasPrefix("multipart/") { return .multipartFormData }
        return .custom(mediaType)
    }

    static func baseURL(_ server: OpenAPIKit.OpenAPI.Server?, warnings: inout [String]) -> URL? {
        guard let server else { return nil }
        var text = server.urlTemplate.absoluteString
        for (name, variable) in server.variables {
            text = text.replacingOccurrences(of: "{\(name)}", with: variable.default)
        }
        if !text.hasSuffix("/") { text += "/" }
        // An absolute URL names its host; a relative one ("/v1") is relative to where the
        // document was found, which Callsign does not know: the client's base URL applies.
        guard let url = URL(string: text), url.scheme == nil || !(url.host ?? "").isEmpty else {
            warnings.append(("the server \(server.urlTemplate.absoluteString) names no host; it is not used" as LocalizedMessage).description)
            return nil
        }
        return url
    }
}
