public import Callsign
import Foundation
import OpenAPIKit

/// What a response body must look like, read from an OpenAPI schema: the subset Callsign checks
/// (types, `nullable`, `required`, properties, items, `enum`, `allOf`/`oneOf`/`anyOf`).
indirect enum SchemaRule: Sendable {
    case anything
    case value(type: String?, nullable: Bool, allowed: [JSONValue]?, properties: [String: SchemaRule], required: [String], items: SchemaRule?)
    case all([SchemaRule])
    case some([SchemaRule])

    /// Rules nest at most this deep; deeper schemas (or recursive ones) are not checked further.
    static let maximumDepth = 32

    /// The rule of `schema` at `depth` below the response's top. A schema that came from a
    /// component (`$ref`) has one rule per depth, made once and shared through `made`: a schema
    /// used by every operation is not copied for each.
    init(_ schema: DereferencedJSONSchema, depth: Int = 0, made: inout [String: SchemaRule]) {
        guard depth < Self.maximumDepth else {
            self = .anything
            return
        }
        let key = schema.vendorExtensions[OpenAPI.Components.componentNameExtension]?.value as? String
        if let key, let rule = made["\(depth) \(key)"] {
            self = rule
            return
        }
        self.init(building: schema, depth: depth, made: &made)
        if let key { made["\(depth) \(key)"] = self }
    }

    private init(building schema: DereferencedJSONSchema, depth: Int, made: inout [String: SchemaRule]) {
        switch schema {
        case .all(of: let parts, core: _): self = .all(parts.map { SchemaRule($0, depth: depth + 1, made: &made) })
        case .one(of: let parts, core: _), .any(of: let parts, core: _): self = .some(parts.map { SchemaRule($0, depth: depth + 1, made: &made) })
        case .object(_, let context):
            var properties: [String: SchemaRule] = [:]
            for (name, property) in context.properties { properties[name] = SchemaRule(property, depth: depth + 1, made: &made) }
            self = .value(
                type: "object", nullable: schema.ownKeywords.nullable, allowed: Self.allowed(schema), properties: properties,
                required: context.properties.filter { $0.value.isRequired }.map(\.key), items: nil)
        case .array(_, let context):
            self = .value(
                type: "array", nullable: schema.ownKeywords.nullable, allowed: Self.allowed(schema), properties: [:], required: [],
                items: context.items.map { SchemaRule($0, depth: depth + 1, made: &made) })
        default:
            self = .value(
                type: schema.ownType?.rawValue, nullable: schema.ownKeywords.nullable, allowed: Self.allowed(schema), properties: [:],
                required: [], items: nil)
        }
    }

    private static func allowed(_ schema: DereferencedJSONSchema) -> [JSONValue]? {
        schema.ownKeywords.allowedValues?.compactMap { value in
            (try? JSONEncoder().encode(value)).flatMap { try? JSONValue(parsing: $0) }
        }
    }

    /// Why `value` breaks the rule (with the path to it), or `nil`.
    func problem(with value: JSONValue, at path: String) -> LocalizedMessage? {
        switch self {
        case .anything:
            return nil
        case .all(let rules):
            return rules.lazy.compactMap { $0.problem(with: value, at: path) }.first
        case .some(let rules):
            return rules.isEmpty || rules.contains { $0.problem(with: value, at: path) == nil } ? nil : "\(path) matches none of its alternatives" as LocalizedMessage
        case .value(let type, let nullable, let allowed, let properties, let required, let items):
            if case .null = value { return nullable || type == "null" || type == nil ? nil : "\(path) is null" as LocalizedMessage }
            if let type, !Self.matches(value, type: type) { return "\(path) is not of type \(type)" as LocalizedMessage }
            if let allowed, !allowed.contains(value) { return "\(path) is not one of the allowed values" as LocalizedMessage }
            if case .object(let members) = value {
                if let missing = required.first(where: { members[$0] == nil }) { return "\(path).\(missing) is missing" as LocalizedMessage }
                for name in members.keys.sorted() {
                    guard let rule = properties[name], let member = members[name] else { continue }
                    if let problem = rule.problem(with: member, at: "\(path).\(name)") { return problem }
                }
            }
            if case .array(let elements) = value, let items {
                for (index, element) in elements.enumerated() {
                    if let problem = items.problem(with: element, at: "\(path)[\(index)]") { return problem }
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
    let schemas: [String: [String: SchemaRule]]

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
        if let problem = rule.problem(with: value, at: "$") {
            throw APIError(.invalidResponse, localized: "the answer of \(name) does not match its OpenAPI schema: \(problem)", response: response)
        }
    }
}
