import Callsign
import Foundation

/// Known deviations of published OpenAPI documents, found and repaired before OpenAPIKit decodes
/// them: each one OpenAPIKit would refuse (a whole document for one schema no operation may
/// use) or read silently wrong. Found on real documents (OpenAI, Cloudflare, DigitalOcean,
/// Plaid, PagerDuty, Intercom, Discord, Xero…); every repair is reported with its place.
///
/// In strict mode nothing is repaired: the findings are the problems the load refuses the
/// document for, all of them at once.
struct DocumentNormalizer {
    /// One deviation and where it is.
    struct Finding {
        /// What kind of deviation, for grouping repeated ones.
        let kind: String
        let message: LocalizedMessage
    }

    /// The document's OpenAPI version line: 3.0 or 3.1 (3.2 is read as 3.1).
    let is30: Bool
    private(set) var findings: [Finding] = []
    /// The security schemes the document defines.
    private var schemes: Set<String> = []

    /// The path item keys that are operations.
    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace", "query"]
    /// 3.1 keywords that may stand beside `$ref` and keep their meaning after it is expanded.
    private static let refAnnotations: Set<String> = ["$ref", "description", "summary", "$comment"]
    private static let types30: Set<String> = ["string", "number", "integer", "boolean", "array", "object"]

    init(version: String) {
        is30 = version.hasPrefix("3.0")
    }

    // MARK: - The document

    /// `root` with every known deviation repaired.
    mutating func normalized(_ root: [String: JSONValue]) -> [String: JSONValue] {
        var root = root
        // Every value is rebuilt here, not only those repaired: the copy is compact, and the
        // reader's scattered allocations go back to the system once the document as read is
        // dropped. Rebuilding only the repaired parts saved 0.2 s of 4.8 on a 20,000-operation
        // document but peaked 40 MiB higher (Benchmarks/README.md, run N).
        var place: [String] = []
        for key in Array(root.keys) {
            guard var value = root[key] else { continue }
            root[key] = .null
            place.append(key)
            unfollowableReferences(in: &value, place: &place, inExtension: key.hasPrefix("x-"))
            place.removeLast()
            root[key] = value
        }
        if case .object(let components)? = root["components"], case .object(let defined)? = components["securitySchemes"] {
            schemes = Set(defined.keys)
        }
        info(&root)
        if var paths = root["paths"]?.objectValue {
            for key in Array(paths.keys) {
                if key.hasPrefix("x-") {
                    paths[key] = nil
                    found("paths", "\"\(key)\" in paths is an extension, not a path; it is ignored" as LocalizedMessage)
                    continue
                }
                guard var item = paths[key]?.objectValue else { continue }
                pathItem(&item, place: ["paths", key])
                paths[key] = .object(item)
            }
            root["paths"] = .object(paths)
        }
        if var components = root["components"]?.objectValue {
            componentsSection(&components)
            root["components"] = .object(components)
        }
        if case .array(let requirements)? = root["security"] {
            root["security"] = .array(securityRequirements(requirements, place: ["security"]))
        }
        return root
    }

    /// Replaces every local `$ref` that does not name a component (`#/components/<kind>/<name>`)
    /// with `{}`, a schema that accepts any value. OpenAPIKit follows such a `$ref`
    /// (`#/definitions/Pet`, `#/components/schemas/Page/properties/total`, a typo) to the
    /// component of the same last name, or reads it as an empty schema: either way not what the
    /// pointer says, and the measure of ``DocumentStructure``, which follows pointers, would not
    /// bound what OpenAPIKit then expands (a fuzzed `#/compon…nts/schemas/S29` in a 600-long
    /// chain overflowed its stack).
    ///
    /// Inside a vendor extension (`x-…`, which Callsign does not read) the `$ref` is replaced
    /// without a warning: a warning there would be noise (Spotify's policies name their own
    /// `#/components/x-spotify-policy/…`).
    private mutating func unfollowableReferences(in value: inout JSONValue, place: inout [String], inExtension: Bool = false) {
        switch value {
        case .object(var members):
            if case .string(let target)? = members["$ref"], target.hasPrefix("#"), !Self.namesComponent(target) {
                value = .object([:])
                if !inExtension {
                    found(
                        "reference",
                        "\(Self.place(place)): the $ref \(target) does not name a component (#/components/kind/name); it is read as any value" as LocalizedMessage)
                }
                return
            }
            value = .null
            // A key under `properties` names a property, whatever it looks like.
            let namesProperties = place.last == "properties" || place.last == "patternProperties"
            for key in Array(members.keys) {
                guard var member = members[key] else { continue }
                members[key] = .null
                let extends = inExtension || (key.hasPrefix("x-") && !namesProperties)
                place.append(key)
                unfollowableReferences(in: &member, place: &place, inExtension: extends)
                place.removeLast()
                members[key] = member
            }
            value = .object(members)
        case .array(var items):
            value = .null
            for index in items.indices {
                place.append(String(index))
                unfollowableReferences(in: &items[index], place: &place, inExtension: inExtension)
                place.removeLast()
            }
            value = .array(items)
        default:
            break
        }
    }

    /// Whether a local `$ref` is `#/components/<kind>/<name>`: what OpenAPIKit looks up as written.
    static func namesComponent(_ target: String) -> Bool {
        guard target.hasPrefix("#/components/") else { return false }
        let tokens = target.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false)
        return tokens.count == 3 && tokens.allSatisfy { !$0.isEmpty }
    }

    /// `info.title` and `info.version`, which OpenAPIKit requires as text.
    private mutating func info(_ root: inout [String: JSONValue]) {
        var info = root["info"]?.objectValue ?? [:]
        for (field, fallback) in [("title", "Untitled API"), ("version", "unknown")] {
            switch info[field] {
            case .string?: continue
            case .number(let number)?: info[field] = .string(number.text)
            case .int(let value)?: info[field] = .string(String(value))
            case .double(let value)?: info[field] = .string(JSONValue.double(value).description)
            default:
                info[field] = .string(fallback)
                found("info", "the document's info has no \(field); \"\(fallback)\" is used" as LocalizedMessage)
            }
        }
        // Links OpenAPIKit refuses the whole document for when they are not URLs.
        if case .string(let link)? = info["termsOfService"], !Self.isURL(link) {
            info["termsOfService"] = nil
            found("info", "the document's info › termsOfService is not a URL; it is ignored" as LocalizedMessage)
        }
        for holder in ["contact", "license"] {
            guard var object = info[holder]?.objectValue, case .string(let link)? = object["url"], !Self.isURL(link) else { continue }
            object["url"] = nil
            info[holder] = .object(object)
            found("info", "the document's info › \(holder) › url is not a URL; it is ignored" as LocalizedMessage)
        }
        root["info"] = .object(info)
    }

    /// Whether `text` is a URL as OpenAPIKit reads one: nothing to percent-encode.
    private static func isURL(_ text: String) -> Bool {
        URL(string: text, encodingInvalidCharacters: false) != nil
    }

    private mutating func componentsSection(_ components: inout [String: JSONValue]) {
        edit(&components, "schemas") { normalizer, schemas in
            for name in Array(schemas.keys) { normalizer.schema(&schemas[name], place: ["components", "schemas", name]) }
        }
        edit(&components, "parameters") { normalizer, parameters in
            for name in Array(parameters.keys) {
                if !normalizer.parameter(&parameters[name], place: ["components", "parameters", name]) { parameters[name] = nil }
            }
        }
        edit(&components, "requestBodies") { normalizer, bodies in
            for name in Array(bodies.keys) { normalizer.mediaTypes(in: &bodies[name], place: ["components", "requestBodies", name]) }
        }
        edit(&components, "responses") { normalizer, responses in
            for name in Array(responses.keys) { normalizer.response(&responses[name], place: ["components", "responses", name]) }
        }
        edit(&components, "headers") { normalizer, headers in
            for name in Array(headers.keys) { normalizer.schemaHolder(&headers[name], place: ["components", "headers", name]) }
        }
    }

    private mutating func pathItem(_ item: inout [String: JSONValue], place: [String]) {
        if case .array(let shared)? = item["parameters"] {
            item["parameters"] = .array(parameters(shared, place: place + ["parameters"]))
        }
        for key in Array(item.keys) where Self.methods.contains(key.lowercased()) {
            guard var operation = item[key]?.objectValue else { continue }
            let here = place + [key]
            if case .array(let list)? = operation["parameters"] {
                operation["parameters"] = .array(parameters(list, place: here + ["parameters"]))
            }
            if operation["requestBody"] != nil {
                var body = operation["requestBody"]
                mediaTypes(in: &body, place: here + ["requestBody"])
                operation["requestBody"] = body
            }
            if var responses = operation["responses"]?.objectValue {
                for code in Array(responses.keys) {
                    guard Self.isResponseKey(code) else {
                        responses[code] = nil
                        found("responses", "\(Self.place(here + ["responses"])): the response key \"\(code)\" is not a status code; it is ignored" as LocalizedMessage)
                        continue
                    }
                    // A $ref to another kind of component: OpenAPIKit refuses it in 3.0 and reads
                    // an empty response in 3.1. Nothing can stand in for it.
                    if case .string(let target)? = responses[code]?["$ref"], target.hasPrefix("#/"), !target.hasPrefix("#/components/responses/") {
                        found("operation", "\(Self.place(here)): the response \(code) is a $ref to \(target), which is not a response; the operation is left out" as LocalizedMessage)
                        item[key] = nil
                        break
                    }
                    response(&responses[code], place: here + ["responses", code])
                }
                operation["responses"] = .object(responses)
            } else if is30 {
                operation["responses"] = .object([:])
                found("responses", "\(Self.place(here)) has no responses, which OpenAPI 3.0 requires; none are assumed" as LocalizedMessage)
            }
            if case .array(let requirements)? = operation["security"] {
                operation["security"] = .array(securityRequirements(requirements, place: here + ["security"]))
            }
            guard item[key] != nil else { continue }
            item[key] = .object(operation)
        }
    }

    // MARK: - Parameters, bodies, responses

    private mutating func parameters(_ list: [JSONValue], place: [String]) -> [JSONValue] {
        var kept: [JSONValue] = []
        for (index, entry) in list.enumerated() {
            var value: JSONValue? = entry
            if parameter(&value, place: place + ["\(index)"]), let value { kept.append(value) }
        }
        return kept
    }

    /// Repairs a parameter; `false` when it cannot be sent at all (OpenAPI 2.0's `in: body`).
    private mutating func parameter(_ value: inout JSONValue?, place: [String]) -> Bool {
        guard var parameter = value?.objectValue, parameter["$ref"] == nil else { return true }
        let location = parameter["in"]?.stringValue ?? ""
        if location == "body" || location == "formData" {
            found("parameters", "\(Self.place(place)): a parameter in \(location) is OpenAPI 2.0's; it is ignored (a request body describes it in OpenAPI 3)" as LocalizedMessage)
            return false
        }
        if location == "path", parameter["required"] != .bool(true) {
            parameter["required"] = .bool(true)
            found("path-required", "\(Self.place(place)): a path parameter is always required; it is read as required" as LocalizedMessage)
        }
        schemaHolder(&parameter, place: place)
        value = .object(parameter)
        return true
    }

    /// A response: its media types' schemas and its headers'.
    private mutating func response(_ value: inout JSONValue?, place: [String]) {
        guard var response = value?.objectValue, response["$ref"] == nil else { return }
        if is30, response["description"] == nil {
            response["description"] = .string("")
            found("responses", "\(Self.place(place)) has no description, which OpenAPI 3.0 requires; an empty one is used" as LocalizedMessage)
        }
        var media: JSONValue? = .object(response)
        mediaTypes(in: &media, place: place)
        response = media?.objectValue ?? response
        if var headers = response["headers"]?.objectValue {
            for name in Array(headers.keys) { schemaHolder(&headers[name], place: place + ["headers", name]) }
            response["headers"] = .object(headers)
        }
        value = .object(response)
    }

    /// The schemas of an object with `content` (a request body, a response).
    private mutating func mediaTypes(in value: inout JSONValue?, place: [String]) {
        guard var holder = value?.objectValue, holder["$ref"] == nil, var content = holder["content"]?.objectValue else { return }
        for type in Array(content.keys) {
            guard var media = content[type]?.objectValue else { continue }
            let here = place + ["content", type]
            if media["example"] != nil, media["examples"] != nil {
                media["example"] = nil
                found("examples", "\(Self.place(here)): example and examples cannot stand together; example is ignored" as LocalizedMessage)
            }
            if let examples = media["examples"], examples.objectValue == nil {
                media["examples"] = nil
                found("examples", "\(Self.place(here)): examples must map names to examples; it is ignored" as LocalizedMessage)
            }
            schema(&media["schema"], place: here + ["schema"])
            content[type] = .object(media)
        }
        holder["content"] = .object(content)
        value = .object(holder)
    }

    /// A parameter or header: its `schema`, or the schemas of its `content`.
    private mutating func schemaHolder(_ value: inout JSONValue?, place: [String]) {
        guard var holder = value?.objectValue, holder["$ref"] == nil else { return }
        schemaHolder(&holder, place: place)
        value = .object(holder)
    }

    private mutating func schemaHolder(_ holder: inout [String: JSONValue], place: [String]) {
        if holder["schema"] != nil { schema(&holder["schema"], place: place + ["schema"]) }
        if holder["content"] != nil {
            var inner: JSONValue? = .object(holder)
            mediaTypes(in: &inner, place: place)
            holder = inner?.objectValue ?? holder
        }
    }

    private mutating func securityRequirements(_ requirements: [JSONValue], place: [String]) -> [JSONValue] {
        requirements.map { requirement in
            guard var names = requirement.objectValue else { return requirement }
            for name in Array(names.keys) where !schemes.contains(name) {
                names[name] = nil
                found("security", "\(Self.place(place)): the security requirement names \(name), which the document does not define; it is ignored" as LocalizedMessage)
            }
            return .object(names)
        }
    }

    // MARK: - Schemas

    /// Repairs a schema and everything nested in it.
    private mutating func schema(_ value: inout JSONValue?, place: [String]) {
        switch value {
        case .bool(let accepts)?:
            // JSON Schema's boolean schemas, which OpenAPIKit does not read: valid in 3.1, not in 3.0.
            value = accepts ? .object([:]) : .object(["not": .object([:])])
            if is30 {
                found(
                    "boolean-schema",
                    accepts
                        ? "\(Self.place(place)): a schema written as true is OpenAPI 3.1's; it is read as one that accepts any value" as LocalizedMessage
                        : "\(Self.place(place)): a schema written as false is OpenAPI 3.1's; it is read as one that accepts no value" as LocalizedMessage)
            }
            return
        case .object(var schema)?:
            repair(&schema, place: place)
            value = .object(schema)
        default:
            return
        }
    }

    private mutating func repair(_ schema: inout [String: JSONValue], place: [String]) {
        let here = Self.place(place)
        if case .string(let target)? = schema["$ref"] {
            // 3.1 expands a $ref with its own target alone: what stands beside it goes through allOf.
            let siblings = schema.filter { !Self.refAnnotations.contains($0.key) }
            if !is30, !siblings.isEmpty {
                var kept = siblings
                repair(&kept, place: place)
                var wrapped: [String: JSONValue] = ["allOf": .array([.object(["$ref": .string(target)]), .object(kept)])]
                for key in ["description", "summary"] { wrapped[key] = schema[key] }
                schema = wrapped
                found("ref-siblings", "\(here): the keywords beside $ref (\(siblings.keys.sorted().joined(separator: ", "))) are kept through allOf" as LocalizedMessage)
            }
            return
        }
        types(&schema, place: here)
        bounds(&schema, place: here)
        enumValues(&schema, place: here)
        if let required = schema["required"], required.arrayValue == nil {
            schema["required"] = nil
            found("required", "\(here): required must list property names; \(required.description) is ignored" as LocalizedMessage)
        }
        if schema["readOnly"] == .bool(true), schema["writeOnly"] == .bool(true) {
            schema["readOnly"] = nil
            schema["writeOnly"] = nil
            found("read-write", "\(here): readOnly and writeOnly cannot both be true; both are ignored" as LocalizedMessage)
        }
        if !is30, let examples = schema["examples"], examples.arrayValue == nil {
            schema["examples"] = examples.objectValue.map { .array(Array($0.values)) } ?? .array([examples])
            found("examples", "\(here): a schema's examples is a list in OpenAPI 3.1; it is read as one" as LocalizedMessage)
        }
        // What is nested.
        for key in ["items", "not", "additionalProperties", "contains", "if", "then", "else", "propertyNames"] where schema[key] != nil {
            if key == "additionalProperties", case .bool? = schema[key] { continue }
            self.schema(&schema[key], place: place + [key])
        }
        for key in ["allOf", "anyOf", "oneOf", "prefixItems"] {
            guard case .array(var list)? = schema[key] else { continue }
            for index in list.indices {
                var entry: JSONValue? = list[index]
                self.schema(&entry, place: place + [key, "\(index)"])
                list[index] = entry ?? list[index]
            }
            schema[key] = .array(list)
        }
        for key in ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"] {
            guard case .object(var members)? = schema[key] else { continue }
            for name in Array(members.keys) { self.schema(&members[name], place: place + [key, name]) }
            schema[key] = .object(members)
        }
    }

    /// `type`: 3.1's lists and `null` in a 3.0 document, and types neither version has.
    private mutating func types(_ schema: inout [String: JSONValue], place: String) {
        if !is30, let nullable = schema.removeValue(forKey: "nullable") {
            // 3.0's nullable in a 3.1 document: null joins the type list.
            if nullable == .bool(true), let type = schema["type"] {
                let listed = type.arrayValue ?? [type]
                if !listed.contains(.string("null")) { schema["type"] = .array(listed + [.string("null")]) }
            }
            found("nullable", "\(place): nullable is OpenAPI 3.0's; it is read as OpenAPI 3.1's type null" as LocalizedMessage)
        }
        var names: [String]
        switch schema["type"] {
        case .string(let name)?: names = [name]
        case .array(let list)?: names = list.compactMap(\.stringValue)
        case nil: return
        case let other?:
            schema["type"] = nil
            found("type", "\(place): the type \(other.description) is not a type name; it is ignored" as LocalizedMessage)
            return
        }
        if names.contains("file") {
            names = names.map { $0 == "file" ? "string" : $0 }
            schema["format"] = .string("binary")
            found("type", "\(place): the type file is OpenAPI 2.0's; it is read as a string of format binary" as LocalizedMessage)
        }
        let known = Self.types30.union(is30 ? [] : ["null"])
        let unknown = names.filter { !known.contains($0) && !(is30 && $0 == "null") }
        if !unknown.isEmpty {
            names.removeAll { unknown.contains($0) }
            found("type", "\(place): \(unknown.joined(separator: ", ")) is not a JSON Schema type; it is ignored" as LocalizedMessage)
        }
        if is30 {
            let nullable = names.contains("null")
            names.removeAll { $0 == "null" }
            if nullable { schema["nullable"] = .bool(true) }
            if names.count > 1 || nullable {
                found("type", "\(place): a list of types or the type null is OpenAPI 3.1's; it is read as 3.0's type and nullable" as LocalizedMessage)
            }
            schema["type"] = names.first.map(JSONValue.string)
            if names.count > 1 { schema["type"] = nil }
        } else {
            schema["type"] = names.count == 1 ? .string(names[0]) : names.isEmpty ? nil : .array(names.map(JSONValue.string))
        }
    }

    /// Exclusive bounds in the other version's form, and integer bounds an `Int` cannot hold.
    private mutating func bounds(_ schema: inout [String: JSONValue], place: String) {
        for (exclusive, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
            switch (schema[exclusive], is30) {
            case (.bool(let flag)?, false):
                // 3.0's boolean form in a 3.1 document: the bound itself becomes exclusive.
                schema[exclusive] = flag ? schema[bound] : nil
                if flag, schema[exclusive] != nil { schema[bound] = nil }
                found("exclusive", "\(place): the boolean \(exclusive) of OpenAPI 3.0 is read as OpenAPI 3.1's number" as LocalizedMessage)
            case (let value?, true) where value.boolValue == nil:
                // 3.1's numeric form in a 3.0 document.
                schema[bound] = value
                schema[exclusive] = .bool(true)
                found("exclusive", "\(place): the number \(exclusive) of OpenAPI 3.1 is read as OpenAPI 3.0's bound" as LocalizedMessage)
            default:
                break
            }
        }
        // Counts (lengths, sizes) are whole numbers; a fraction is rounded toward what it allows.
        for keyword in ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"] {
            guard let value = schema[keyword], let number = value.numberValue, number.rounded() != number || !(0...9.0e15).contains(number) else { continue }
            let whole = keyword.hasPrefix("min") ? number.rounded(.up) : number.rounded(.down)
            schema[keyword] = (0...9.0e15).contains(whole) ? .int(Int(whole)) : nil
            found("count", "\(place): \(keyword) \(value.description) is not a whole number of at most 2^53; it is read as \(schema[keyword]?.description ?? "absent")" as LocalizedMessage)
        }
        // After `types`, an integer that may be null has the type list [integer, null].
        let typeNames = schema["type"].map { $0.arrayValue ?? [$0] }?.compactMap(\.stringValue) ?? []
        guard typeNames.contains("integer") else { return }
        for keyword in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"] {
            // An `Int` is one already; a fraction, or a number beyond 64 bits, is not.
            guard let value = schema[keyword], value.boolValue == nil, value.intValue == nil || value.isLargeNumber, let number = value.numberValue
            else { continue }
            if keyword == "multipleOf" {
                schema[keyword] = nil
            } else {
                // The largest Double below 2^63 and -2^63: both convert to an Int exactly.
                let clamped = max(-9_223_372_036_854_775_808.0, min(number, 9_223_372_036_854_774_784.0))
                schema[keyword] = .int(Int(keyword.hasSuffix("inimum") ? clamped.rounded(.up) : clamped.rounded(.down)))
            }
            found("integer-bound", "\(place): the integer \(keyword) \(value.description) is not a 64-bit integer; it is read as the nearest one" as LocalizedMessage)
        }
    }

    /// A string schema's `enum` listing numbers, booleans or `null`.
    private mutating func enumValues(_ schema: inout [String: JSONValue], place: String) {
        guard schema["type"]?.stringValue == "string", case .array(let values)? = schema["enum"] else { return }
        let alreadyNullable = schema["nullable"] == .bool(true)
        var changed = false
        var sawNull = false
        let texts: [JSONValue] = values.compactMap { value in
            switch value {
            case .string: return value
            case .null:
                sawNull = true
                return is30 ? value : nil
            default:
                changed = true
                return .string(value.description)
            }
        }
        if sawNull {
            if is30 {
                schema["nullable"] = .bool(true)
            } else {
                schema["type"] = .array(["string", "null"])
                schema["enum"] = .array(texts + [.null])
            }
        }
        if changed || (sawNull && !(is30 && alreadyNullable)) {
            found("enum", "\(place): the string enum lists values that are not strings; they are read as their text" as LocalizedMessage)
        }
        if !sawNull || is30 { schema["enum"] = .array(texts) }
    }

    // MARK: - Helpers

    mutating func found(_ kind: String, _ message: LocalizedMessage) {
        findings.append(Finding(kind: kind, message: message))
    }

    /// Edits a member of `object` in place, as an object.
    private mutating func edit(
        _ object: inout [String: JSONValue], _ key: String, _ body: (inout DocumentNormalizer, inout [String: JSONValue]) -> Void
    ) {
        guard var member = object[key]?.objectValue else { return }
        body(&self, &member)
        object[key] = .object(member)
    }

    /// A response key OpenAPIKit reads: a status code, a range (`2XX`) or `default`.
    static func isResponseKey(_ key: String) -> Bool {
        if key == "default" { return true }
        let bytes = Array(key.utf8)
        guard bytes.count == 3, (0x31...0x35).contains(bytes[0]) else { return false }
        return bytes.dropFirst().allSatisfy { (0x30...0x39).contains($0) } || bytes.dropFirst().allSatisfy { $0 == UInt8(ascii: "X") || $0 == UInt8(ascii: "x") }
    }

    /// A place for a message: `GET /pets › parameters › 0 › schema`, `components › schemas › Pet`.
    static func place(_ path: [String]) -> String {
        if path.count >= 3, path[0] == "paths", methods.contains(path[2].lowercased()) {
            return ([path[2].uppercased() + " " + path[1]] + path.dropFirst(3)).joined(separator: " › ")
        }
        return path.joined(separator: " › ")
    }
}

extension JSONValue {
    /// The value as a `Double`, when it is a number.
    fileprivate var numberValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        case .number(let number): number.doubleValue ?? (number.text.hasPrefix("-") ? -Double.greatestFiniteMagnitude : Double.greatestFiniteMagnitude)
        default: nil
        }
    }

    /// Whether it is a number written beyond what `Int` holds.
    fileprivate var isLargeNumber: Bool {
        if case .number(let number) = self { return number.intValue == nil }
        return false
    }

}
