import Callsign
import Foundation
import OpenAPIKit

/// The answer and body schemas that name a component (`$ref: '#/components/schemas/Pet'`, as
/// most do), expanded once per component instead of once per operation.
///
/// OpenAPIKit expands every use of a component anew: a document whose 20,000 operations answer
/// schemas 20 `$ref`s deep built 400,000 schemas. Before a batch of paths is decoded, such a
/// schema is replaced by a stand-in naming the component (``stubbed(_:)``); reading an answer
/// (``schema(_:)``) turns the stand-in back into the component's schema, expanded the first time
/// and shared after. Schemas written in place are left to OpenAPIKit, as before. Describe's
/// texts come from the document as written (``SchemaTexts``), so a stand-in is never shown.
struct ComponentSchemas {
    private let components: OpenAPIKit.OpenAPI.Components
    /// The component schemas OpenAPIKit could read: a reference to another one is left alone,
    /// and fails its operation as it always did.
    private let known: Set<String>
    private var expanded: [String: DereferencedJSONSchema] = [:]

    private static let prefix = "#/components/schemas/"
    /// The stand-in's title: a control character no published document puts in a title first.
    private static let marker = "\u{1}callsign-component "

    init(components: OpenAPIKit.OpenAPI.Components) {
        self.components = components
        known = Set(components.schemas.keys.map(\.rawValue))
    }

    /// `pathItem` (a path's member of `paths`, as written) with each answer's and request body's
    /// schema that only names a known component replaced by a stand-in.
    func stubbed(_ pathItem: JSONValue) -> JSONValue {
        guard case .object(var item) = pathItem, item["$ref"] == nil else { return pathItem }
        for (method, operation) in item where DocumentNormalizer.methods.contains(method.lowercased()) {
            guard case .object(var members) = operation else { continue }
            if case .object(var responses)? = members["responses"] {
                for (status, response) in responses { responses[status] = stubbedContent(of: response) }
                members["responses"] = .object(responses)
            }
            if let body = members["requestBody"] { members["requestBody"] = stubbedContent(of: body) }
            item[method] = .object(members)
        }
        return .object(item)
    }

    private func stubbedContent(of holder: JSONValue) -> JSONValue {
        guard case .object(var members) = holder, case .object(var content)? = members["content"] else { return holder }
        for (type, media) in content {
            guard case .object(var entries) = media, let schema = entries["schema"]?.objectValue, schema.count == 1,
                case .string(let pointer)? = schema["$ref"], pointer.hasPrefix(Self.prefix)
            else { continue }
            let name = String(pointer.dropFirst(Self.prefix.count))
            guard known.contains(name) else { continue }
            entries["schema"] = ["title": .string(Self.marker + name)]
            content[type] = .object(entries)
        }
        members["content"] = .object(content)
        return .object(members)
    }

    /// `schema` as read from an expanded operation: a stand-in becomes its component's schema.
    mutating func schema(_ schema: DereferencedJSONSchema) throws -> DereferencedJSONSchema {
        guard case .fragment(let core) = schema, let title = core.title, title.hasPrefix(Self.marker) else { return schema }
        let name = String(title.dropFirst(Self.marker.count))
        if let done = expanded[name] { return done }
        let result = try JSONSchema.reference(.component(named: name)).dereferenced(in: components)
        expanded[name] = result
        return result
    }
}
