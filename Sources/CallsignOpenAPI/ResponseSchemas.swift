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
    struct Rule: Sendable, Hashable, Codable {
        enum Kind: UInt8, Sendable, Hashable, Codable {
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

        // A kept table is read on every command that names its document: each rule is a short
        // list (no keys to look up, no nulls), the properties as names and places side by side.
        init(from decoder: any Decoder) throws {
            var fields = try decoder.unkeyedContainer()
            kind = try fields.decode(Kind.self)
            let type = try fields.decode(String.self)
            self.type = type.isEmpty ? nil : type
            nullable = try fields.decode(Bool.self)
            let hasAllowed = try fields.decode(Bool.self)
            let allowed = try fields.decode([JSONValue].self)
            self.allowed = hasAllowed ? allowed : nil
            let names = try fields.decode([String].self)
            let places = try fields.decode([Int].self)
            guard names.count == places.count else {
                throw DecodingError.dataCorruptedError(in: fields, debugDescription: "properties and their rules differ in number")
            }
            properties = Dictionary(zip(names, places)) { first, _ in first }
            required = try fields.decode([String].self)
            let items = try fields.decode(Int.self)
            self.items = items < 0 ? nil : items
            parts = try fields.decode([Int].self)
        }

        func encode(to encoder: any Encoder) throws {
            var fields = encoder.unkeyedContainer()
            try fields.encode(kind)
            try fields.encode(type ?? "")
            try fields.encode(nullable)
            try fields.encode(allowed != nil)
            try fields.encode(allowed ?? [])
            let named = properties.sorted { $0.key < $1.key }
            try fields.encode(named.map(\.key))
            try fields.encode(named.map(\.value))
            try fields.encode(required)
            try fields.encode(items ?? -1)
            try fields.encode(parts)
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

    private enum CodingKeys: String, CodingKey {
        case rules
    }

    init(from decoder: any Decoder) throws {
        rules = try decoder.container(keyedBy: CodingKeys.self).decode([Rule].self, forKey: .rules)
    }

    init() {}

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
