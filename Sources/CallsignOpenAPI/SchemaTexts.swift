import Callsign
import Foundation

/// The schemas of an operation's request body and answers as JSON text, for `callsign describe`,
/// read from the document as written (after its repairs) with every `$ref` expanded.
///
/// Each component is expanded once and shared by every schema that names it (``JSONValue``
/// shares its storage), so the cost is the text written, not one expansion per use. The
/// document's cycles are cut and its reference chains bounded before this runs
/// (``DocumentNormalizer``, ``DocumentStructure``); `maximumDepth` still stops any chain.
struct SchemaTexts {
    private let root: [String: JSONValue]
    private let maximumDepth: Int
    private var expanded: [String: JSONValue] = [:]
    /// The text of each component named alone, as `{"$ref": pointer}`.
    private var texts: [String: String] = [:]

    init(root: [String: JSONValue], maximumDepth: Int) {
        self.root = root
        self.maximumDepth = max(1, maximumDepth)
    }

    /// The operation object at `path` (as the document writes it) and `method`.
    func operation(path: String, method: String) -> [String: JSONValue]? {
        root["paths"]?[path].flatMap(resolved)?[method.lowercased()].flatMap(resolved)?.objectValue
    }

    /// The JSON text of the request body's schema for `mediaType`.
    mutating func bodySchema(of operation: [String: JSONValue]?, mediaType: String) -> String? {
        schemaText(in: operation?["requestBody"].flatMap(resolved), mediaType: mediaType)
    }

    /// The JSON text of the answer's schema for `status` (`200`, `2XX`, `default`, in any case)
    /// and `mediaType`.
    mutating func responseSchema(of operation: [String: JSONValue]?, status: String, mediaType: String) -> String? {
        let responses = operation?["responses"].flatMap(resolved)?.objectValue ?? [:]
        let written = responses[status] ?? responses.first { $0.key.uppercased() == status.uppercased() }?.value
        return schemaText(in: written.flatMap(resolved), mediaType: mediaType)
    }

    private mutating func schemaText(in holder: JSONValue?, mediaType: String) -> String? {
        guard let media = holder?["content"].flatMap(resolved)?[mediaType].flatMap(resolved), let schema = media["schema"] else {
            return nil
        }
        // Most schemas only name a component: its text is written once and shared.
        if let members = schema.objectValue, members.count == 1, case .string(let pointer)? = members["$ref"] {
            if let text = texts[pointer] { return text }
            let text = String(decoding: expand(schema, depth: 0).jsonData(), as: UTF8.self)
            texts[pointer] = text
            return text
        }
        return String(decoding: expand(schema, depth: 0).jsonData(), as: UTF8.self)
    }

    /// `value` with the `$ref`s that lead to it followed (a response, a request body, a path
    /// item may be one), at most `maximumDepth` of them.
    private func resolved(_ value: JSONValue) -> JSONValue? {
        var current = value
        for _ in 0..<maximumDepth {
            guard case .string(let pointer)? = current["$ref"] else { return current }
            guard let target = DocumentStructure.resolve(pointer, in: root) else { return nil }
            current = target
        }
        return nil
    }

    /// `schema` with every `$ref` replaced by what it names, expanded in turn. A reference that
    /// names nothing, or one past `maximumDepth`, stays as written.
    private mutating func expand(_ schema: JSONValue, depth: Int) -> JSONValue {
        switch schema {
        case .object(let members):
            if case .string(let pointer)? = members["$ref"] {
                if let done = expanded[pointer] { return done }
                guard depth < maximumDepth, let target = DocumentStructure.resolve(pointer, in: root) else { return schema }
                let result = expand(target, depth: depth + 1)
                expanded[pointer] = result
                return result
            }
            return .object(members.mapValues { expand($0, depth: depth) })
        case .array(let items):
            return .array(items.map { expand($0, depth: depth) })
        default:
            return schema
        }
    }
}
