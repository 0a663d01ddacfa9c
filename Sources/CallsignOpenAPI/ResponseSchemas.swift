public import Callsign
import Foundation
import OpenAPIKit

/// What response bodies must look like, read from an OpenAPI document's schemas: the subset
/// Callsign checks (types, `nullable`, `required`, properties, items, `enum`,
/// `allOf`/`oneOf`/`anyOf`), as one table.
///
/// A rule names the rules inside it by their place in the table, always an earlier place: a table
/// is acyclic by construction, a schema shared by every operation is one entry (per depth), and
/// the table is plain data that the description cache keeps. A table read back is checked
/// (``isWellFormed``) before it is used.
struct SchemaRules: Sendable, Codable {
    /// One rule.
    struct Rule: Sendable, Hashable {
        enum Kind: UInt8, Sendable, Hashable {
            case anything, value, all, some
        }
        var kind: Kind
        var type: String?
        var nullable = false
        var allowed: [JSONValue]?
        var properties: [String: Int] = [:]
        var required: [String] = []
        var items: Int?
        /// The alternatives of `all` and `some`.
        var parts: [Int] = []

        init(
            kind: Kind, type: String? = nil, nullable: Bool = false, allowed: [JSONValue]? = nil, properties: [String: Int] = [:],
            required: [String] = [], items: Int? = nil, parts: [Int] = []
        ) {
            (self.kind, self.type, self.nullable, self.allowed) = (kind, type, nullable, allowed)
            (self.properties, self.required, self.items, self.parts) = (properties, required, items, parts)
        }
    }

    /// Rules nest at most this deep; deeper schemas (or recursive ones) are not checked further.
    static let maximumDepth = 32

    private(set) var rules: [Rule] = []
    /// The rule made for a component at a depth (`"3 Pet"`), while the table is built.
    private var made: [String: Int] = [:]
    /// Each rule's place, while the table is built: a rule equal to one already there (a
    /// `{type: string}` property, a component at another depth) is that one.
    private var places: [Rule: Int] = [:]

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let rules = Self.rules(in: try container.decode(Data.self)) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "the rule table is damaged")
        }
        self.rules = rules
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(bytes)
    }

    init() {}

    /// A table of these rules, as they are (``isWellFormed`` says whether they can be used).
    init(rules: [Rule]) {
        self.rules = rules
    }

    /// Adds the rule of `schema` at `depth` below a response's top, and what it holds; returns its
    /// place. A schema that came from a component (`$ref`) has one rule per depth, made once.
    mutating func add(_ schema: DereferencedJSONSchema, depth: Int = 0) -> Int {
        guard depth < Self.maximumDepth else {
            // Every schema cut at the bottom is the one rule that accepts anything.
            if let index = made[""] { return index }
            let index = append(Rule(kind: .anything))
            made[""] = index
            return index
        }
        let key = (schema.vendorExtensions[OpenAPI.Components.componentNameExtension]?.value as? String).map { "\(depth) \($0)" }
        if let key, let index = made[key] { return index }
        let index = append(rule(of: schema, depth: depth))
        if let key { made[key] = index }
        return index
    }

    private mutating func append(_ rule: Rule) -> Int {
        if let place = places[rule] { return place }
        rules.append(rule)
        places[rule] = rules.count - 1
        return rules.count - 1
    }

    /// The rule of `schema`, the rules inside it added first (so they come earlier).
    private mutating func rule(of schema: DereferencedJSONSchema, depth: Int) -> Rule {
        let nullable = schema.ownKeywords.nullable
        switch schema {
        case .all(of: let parts, core: _):
            return Rule(kind: .all, parts: parts.map { add($0, depth: depth + 1) })
        case .one(of: let parts, core: _), .any(of: let parts, core: _):
            return Rule(kind: .some, parts: parts.map { add($0, depth: depth + 1) })
        case .object(_, let context):
            // In the order of the names: the same document makes the same table.
            let named = context.properties.sorted { $0.key < $1.key }
            var properties: [String: Int] = [:]
            for (name, property) in named { properties[name] = add(property, depth: depth + 1) }
            return Rule(
                kind: .value, type: "object", nullable: nullable, allowed: Self.allowed(schema), properties: properties,
                required: named.filter { $0.value.isRequired }.map(\.key))
        case .array(_, let context):
            return Rule(kind: .value, type: "array", nullable: nullable, allowed: Self.allowed(schema), items: context.items.map { add($0, depth: depth + 1) })
        default:
            return Rule(kind: .value, type: schema.ownType?.rawValue, nullable: nullable, allowed: Self.allowed(schema))
        }
    }

    private static func allowed(_ schema: DereferencedJSONSchema) -> [JSONValue]? {
        schema.ownKeywords.allowedValues?.compactMap { value in
            (try? JSONEncoder().encode(value)).flatMap { try? JSONValue(parsing: $0) }
        }
    }

    // MARK: - The kept form

    // A kept table is read on every command that names its document, so it is one block of bytes
    // rather than thousands of coded values: per rule its kind, a flags byte (nullable, has a
    // type, has allowed values, has items), the type, the items' place, the parts, the
    // properties (name and place), the required names, and the allowed values as JSON text.
    // Numbers are 32-bit little-endian, texts are a length and UTF-8. `rules(in:)` checks every
    // length against what is left, and `isWellFormed` checks the places after.

    /// The table as bytes.
    var bytes: Data {
        var out = ByteWriter()
        out.number(rules.count)
        for rule in rules {
            out.byte(rule.kind.rawValue)
            let flags = (rule.nullable ? 1 : 0) | (rule.type != nil ? 2 : 0) | (rule.allowed != nil ? 4 : 0) | (rule.items != nil ? 8 : 0)
            out.byte(UInt8(flags))
            if let type = rule.type { out.text(type) }
            if let items = rule.items { out.number(items) }
            out.number(rule.parts.count)
            for part in rule.parts { out.number(part) }
            let named = rule.properties.sorted { $0.key < $1.key }
            out.number(named.count)
            for (name, place) in named {
                out.text(name)
                out.number(place)
            }
            out.number(rule.required.count)
            for name in rule.required { out.text(name) }
            if let allowed = rule.allowed { out.text(String(decoding: JSONValue.array(allowed).jsonData(), as: UTF8.self)) }
        }
        return Data(out.bytes)
    }

    /// The rules `bytes` made, or `nil` for anything else.
    static func rules(in data: Data) -> [Rule]? {
        var input = ByteReader(Array(data))
        guard let count = input.number(), count <= input.remaining else { return nil }
        var rules: [Rule] = []
        rules.reserveCapacity(count)
        for _ in 0..<count {
            guard let kindByte = input.byte(), let kind = Rule.Kind(rawValue: kindByte), let flags = input.byte() else { return nil }
            var rule = Rule(kind: kind, nullable: flags & 1 != 0)
            if flags & 2 != 0 {
                guard let type = input.text() else { return nil }
                rule.type = type
            }
            if flags & 8 != 0 {
                guard let items = input.number() else { return nil }
                rule.items = items
            }
            guard let parts = input.number(), parts <= input.remaining else { return nil }
            for _ in 0..<parts {
                guard let part = input.number() else { return nil }
                rule.parts.append(part)
            }
            guard let properties = input.number(), properties <= input.remaining else { return nil }
            for _ in 0..<properties {
                guard let name = input.text(), let place = input.number() else { return nil }
                rule.properties[name] = place
            }
            guard let required = input.number(), required <= input.remaining else { return nil }
            for _ in 0..<required {
                guard let name = input.text() else { return nil }
                rule.required.append(name)
            }
            if flags & 4 != 0 {
                guard let text = input.text(), case .array(let values)? = try? JSONValue(parsing: Data(text.utf8)) else { return nil }
                rule.allowed = values
            }
            rules.append(rule)
        }
        return input.remaining == 0 ? rules : nil
    }

    /// Whether every rule names only earlier rules, and no chain of rules is deeper than
    /// ``maximumDepth``: what a table built here always is, and what one read from a file must be
    /// before a check walks it.
    var isWellFormed: Bool {
        var depths: [Int] = []
        depths.reserveCapacity(rules.count)
        for (index, rule) in rules.enumerated() {
            var depth = 0
            for inner in rule.parts + rule.properties.values + (rule.items.map { [$0] } ?? []) {
                guard inner >= 0, inner < index else { return false }
                depth = max(depth, depths[inner] + 1)
            }
            guard depth <= Self.maximumDepth else { return false }
            depths.append(depth)
        }
        return true
    }

    /// Why `value` breaks the rule at `index` (with the path to it), or `nil`.
    func problem(with value: JSONValue, rule index: Int, at path: String) -> LocalizedMessage? {
        guard rules.indices.contains(index) else { return nil }
        let rule = rules[index]
        switch rule.kind {
        case .anything:
            return nil
        case .all:
            return rule.parts.lazy.compactMap { problem(with: value, rule: $0, at: path) }.first
        case .some:
            return rule.parts.isEmpty || rule.parts.contains { problem(with: value, rule: $0, at: path) == nil }
                ? nil : "\(path) matches none of its alternatives" as LocalizedMessage
        case .value:
            if case .null = value { return rule.nullable || rule.type == "null" || rule.type == nil ? nil : "\(path) is null" as LocalizedMessage }
            if let type = rule.type, !Self.matches(value, type: type) { return "\(path) is not of type \(type)" as LocalizedMessage }
            if let allowed = rule.allowed, !allowed.contains(value) { return "\(path) is not one of the allowed values" as LocalizedMessage }
            if case .object(let members) = value {
                if let missing = rule.required.first(where: { members[$0] == nil }) { return "\(path).\(missing) is missing" as LocalizedMessage }
                for name in members.keys.sorted() {
                    guard let inner = rule.properties[name], let member = members[name] else { continue }
                    if let problem = problem(with: member, rule: inner, at: "\(path).\(name)") { return problem }
                }
            }
            if case .array(let elements) = value, let items = rule.items {
                for (index, element) in elements.enumerated() {
                    if let problem = problem(with: element, rule: items, at: "\(path)[\(index)]") { return problem }
                }
            }
            return nil
        }
    }

    private static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("integer", .int),
            ("number", .int), ("number", .double), ("number", .number):
            return true
        case ("integer", .double(let number)):
            return number.rounded() == number
        case ("integer", .number(let number)):
            return number.isInteger || number.intValue != nil
        default:
            return false
        }
    }
}

/// Checks responses against their operation's schema. Opt in (`validatesResponses`):
///
/// ```swift
/// configuration.responses.validators = [petstore.responseValidator]
/// ```
///
/// A JSON response of an operation of the document whose body breaks the schema for its status
/// (the exact code, else its range such as `2XX`, else `default`) fails with
/// `APIError.Code.invalidResponse` naming the place (`$.owner.id is not an integer`). Responses
/// of other APIs, and bodies that are not JSON, pass.
public struct OpenAPIResponseValidator: ResponseValidator {
    let rules: SchemaRules
    /// Each operation's rule (its place in `rules`) by status: the code, a range (`2XX`) or `default`.
    let schemas: [String: [String: Int]]

    public func validate(_ response: Response) throws {
        guard let name = response.request.apiName, let byStatus = schemas[name] else { return }
        let code = response.status.code
        guard let rule = byStatus[String(code)] ?? byStatus["\(code / 100)XX"] ?? byStatus["default"], !response.body.isEmpty,
            response.mediaType?.contains("json") ?? true
        else { return }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: response.body)
        } catch {
            throw APIError(.invalidResponse, localized: "the answer of \(name) is not the JSON its OpenAPI schema describes", response: response)
        }
        if let problem = rules.problem(with: value, rule: rule, at: "$") {
            throw APIError(.invalidResponse, localized: "the answer of \(name) does not match its OpenAPI schema: \(problem)", response: response)
        }
    }
}
