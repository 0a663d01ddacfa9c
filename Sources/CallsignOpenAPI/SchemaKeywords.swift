import OpenAPIKit

// OpenAPIKit answers `nullable`, `allowedValues`, `jsonType`, `discriminator` and `required` of a
// dereferenced schema by rebuilding the whole schema below it (`jsonSchema`) on every call. Read
// at every level of a schema, that cost time quadratic in its depth: most of the load of a large
// document. These read the schema's own keywords only.
extension DereferencedJSONSchema {
    /// The keywords of this schema itself.
    var ownKeywords: any JSONSchemaContext {
        switch self {
        case .null(let core): core
        case .boolean(let core): core
        case .number(let core, _): core
        case .integer(let core, _): core
        case .string(let core, _): core
        case .object(let core, _): core
        case .array(let core, _): core
        case .all(of: _, core: let core), .one(of: _, core: let core), .any(of: _, core: let core), .not(_, core: let core): core
        case .fragment(let core): core
        }
    }

    /// The schema's JSON type; `nil` for `allOf`, `oneOf`, `anyOf`, `not` and schemas without one.
    var ownType: JSONType? {
        switch self {
        case .null: .null
        case .boolean: .boolean
        case .number: .number
        case .integer: .integer
        case .string: .string
        case .object: .object
        case .array: .array
        case .all, .one, .any, .not, .fragment: nil
        }
    }

    /// Whether a property with this schema is required (read from its own keywords).
    var isRequired: Bool { ownKeywords.required }
}
