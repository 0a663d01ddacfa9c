import Callsign
import Foundation
import OpenAPIKit

/// The parts of a document Callsign reads but does not act on, each named in a load warning so
/// nobody relies on it silently.
extension OpenAPIOperations {
    /// Warnings about the document as a whole.
    static func documentWarnings(root: [String: JSONValue]) -> [String] {
        guard let webhooks = root["webhooks"]?.objectValue, !webhooks.isEmpty else { return [] }
        let names = webhooks.keys.sorted().joined(separator: ", ")
        return [("the document's webhooks (\(names)) are requests the server sends; they are not APIs to call" as LocalizedMessage).description]
    }

    /// Warnings about one operation: callbacks, response links, path styles sent as `simple`,
    /// parameters described by `content`, and response discriminators.
    /// `written` is the operation as the document writes it; `answers` its answers' JSON schemas.
    static func operationWarnings(written: [String: JSONValue]?, endpoint: OpenAPIKit.ResolvedEndpoint, answers: [Answer], name: String) -> [String] {
        var warnings: [LocalizedMessage] = []
        if let callbacks = written?["callbacks"]?.objectValue, !callbacks.isEmpty {
            let names = callbacks.keys.sorted().joined(separator: ", ")
            warnings.append("\(name) has callbacks (\(names)): the server calls them, so they are not APIs here" as LocalizedMessage)
        }
        let links = endpoint.responses.values.flatMap { $0.links.keys }
        if !links.isEmpty {
            let names = Set(links).sorted().joined(separator: ", ")
            warnings.append("\(name): the response links (\(names)) are not followed" as LocalizedMessage)
        }
        for parameter in endpoint.parameters {
            switch parameter.schemaOrContent {
            case .a(let context) where parameter.location == .path && [.matrix, .label].contains(context.style):
                warnings.append(
                    "\(name): the path parameter \"\(parameter.name)\" has the style \(context.style.rawValue), which Callsign sends as simple" as LocalizedMessage)
            case .b(let content):
                let types = content.keys.map(\.rawValue).sorted().joined(separator: ", ")
                warnings.append("\(name): the parameter \"\(parameter.name)\" is described by content (\(types)); its value is sent as given" as LocalizedMessage)
            default:
                break
            }
        }
        let discriminated = answers.contains { answer in
            guard let schema = answer.schema else { return false }
            return schema.ownKeywords.discriminator != nil || Self.alternatives(of: schema).contains { $0.ownKeywords.discriminator != nil }
        }
        if discriminated {
            warnings.append("\(name): response validation does not use the schema's discriminator; it tries each oneOf/anyOf alternative" as LocalizedMessage)
        }
        return warnings.map(\.description)
    }

    private static func alternatives(of schema: OpenAPIKit.DereferencedJSONSchema) -> [OpenAPIKit.DereferencedJSONSchema] {
        switch schema {
        case .one(of: let schemas, core: _), .any(of: let schemas, core: _), .all(of: let schemas, core: _): schemas
        default: []
        }
    }
}
