package import Foundation
import Yams

/// A definitions file read into values, with the line of each API and key where known.
package struct DefinitionDocument {
    /// API name → its fields.
    package var root: [String: JSONValue]
    /// API name → key → line (1-based); the key `""` holds the line of the API name itself.
    var lines: [String: [String: Int]]

    init(root: [String: JSONValue], lines: [String: [String: Int]]) {
        self.root = root
        self.lines = lines
    }

    package init(data: Data, format: APIDefinitions.Format, limits: Limits = .default) throws(APIError) {
        switch format {
        case .json: try self.init(json: data, limits: limits)
        case .plist: try self.init(plist: data, limits: limits)
        case .yaml: try self.init(yaml: data, limits: limits)
        }
    }

    private init(json data: Data, limits: Limits) throws(APIError) {
        let value: JSONValue
        // Callsign's own reader: bounded depth, numbers kept as written.
        do throws(JSONTextError) {
            value = try JSONValue(parsingText: data, maximumDepth: limits.maximumJSONDepth)
        } catch {
            let (line, column) = error.position(in: data)
            throw APIError(
                .invalidDefinition,
                localized: "the definitions file is not valid JSON: \(error.problem) (line \(line), column \(column))",
                underlyingError: error)
        }
        guard case .object(let root) = value else {
            throw APIError(
                .invalidDefinition, localized: "the definitions file must be a dictionary of API names, not \(value.kindName)")
        }
        self.init(root: root, lines: JSONLineScanner.lines(in: data))
    }

    private init(plist data: Data, limits: Limits) throws(APIError) {
        let object: Any
        do throws(PropertyListReader.Problem) {
            object = try PropertyListReader.object(
                data, maximumDepth: limits.maximumJSONDepth, maximumValues: limits.maximumDefinitionNodes)
        } catch {
            switch error {
            case .malformed(let underlying):
                throw APIError(
                    .invalidDefinition, localized: "the definitions file is not a valid property list: \(underlying.localizedDescription)",
                    underlyingError: underlying)
            case .tooDeep(let limit):
                throw APIError(.invalidDefinition, localized: "the definitions file nests deeper than \(limit) levels (Limits.maximumJSONDepth)")
            default:
                throw APIError(
                    .invalidDefinition, localized: "the definitions file cannot be read: \(error.reason) (Limits.maximumDefinitionNodes)")
            }
        }
        guard let dictionary = object as? [String: Any] else {
            throw APIError(.invalidDefinition, localized: "the definitions file must be a dictionary of API names")
        }
        var root: [String: JSONValue] = [:]
        for (name, value) in dictionary {
            guard let converted = JSONValue(foundationValue: value) else {
                throw APIError(
                    .invalidDefinition,
                    localized: "definition \"\(name)\": holds a date, data or other value that is not a string, number, Boolean, array or dictionary")
            }
            root[name] = converted
        }
        self.init(root: root, lines: [:])
    }

    private init(yaml data: Data, limits: Limits) throws(APIError) {
        guard let text = String(data: data, encoding: .utf8) else {
            throw APIError(.invalidDefinition, localized: "the definitions file is not UTF-8 text")
        }
        // libyaml (inside Yams) refuses nesting past 1,000 levels; aliases can nest further once
        // expanded, which the node budget's depth check below stops.
        let node: Node?
        do {
            // Without resolving tags: Yams's default resolver runs regular expressions over every
            // scalar (and every key, to look for duplicates), which was a quarter of the load of a
            // large document. `implicitTag(of:)` resolves the plain scalars that need it.
            node = try Yams.compose(yaml: text, .basic)
        } catch let error as YamlError {
            throw APIError(
                .invalidDefinition, localized: "the definitions file is not valid YAML: \(Self.describe(yaml: error))",
                underlyingError: error)
        } catch {
            throw APIError(.invalidDefinition, localized: "the definitions file is not valid YAML: \(error)", underlyingError: error)
        }
        guard let node else {
            self.init(root: [:], lines: [:])
            return
        }
        guard let mapping = node.mapping else {
            throw APIError(
                .invalidDefinition,
                localized: "the definitions file must be a dictionary of API names (line \(node.mark?.line ?? 1))")
        }
        var root: [String: JSONValue] = [:]
        var lines: [String: [String: Int]] = [:]
        var budget = NodeBudget(remaining: limits.maximumDefinitionNodes, maximumDepth: limits.maximumJSONDepth)
        // An OpenAPI document is read as YAML 1.2 reads booleans, as the specification asks:
        // only true and false are, and a status `off` or a country `NO` stays text.
        let openAPI = mapping.keys.contains { $0.string == "openapi" }
        for (keyNode, valueNode) in mapping {
            guard let name = keyNode.string else { continue }
            var apiLines: [String: Int] = [:]
            apiLines[""] = keyNode.mark?.line
            if let fields = valueNode.mapping {
                for (fieldKey, _) in fields {
                    if let key = fieldKey.string { apiLines[key] = fieldKey.mark?.line }
                }
            }
            lines[name] = apiLines
            root[name] = try Self.value(of: valueNode, api: name, budget: &budget, onlyTrueAndFalse: openAPI)
        }
        self.init(root: root, lines: lines)
    }

    /// Converts a YAML node, using the tag the resolver gave each scalar.
    private static func value(of node: Node, api: String, budget: inout NodeBudget, onlyTrueAndFalse: Bool) throws(APIError) -> JSONValue {
        // Every alias is expanded here as a copy: counting each value bounds the expansion, and
        // the depth bounds this recursion (an alias can hold a deep value inside a deep value).
        guard budget.take() else {
            throw APIError(
                .invalidDefinition,
                localized: "the definitions file expands to more than \(budget.limit) values (YAML aliases count once per use; Limits.maximumDefinitionNodes)")
        }
        guard budget.enter() else {
            throw APIError(
                .invalidDefinition,
                localized: "the definitions file nests deeper than \(budget.maximumDepth) levels (Limits.maximumJSONDepth)")
        }
        defer { budget.leave() }
        switch node {
        case .scalar(var scalar):
            // A plain scalar without a tag has the type its text spells (YAML's implicit types);
            // a quoted or tagged one has its tag.
            let tag: Tag.Name
            if scalar.tag.rawValue.isEmpty {
                tag = implicitTag(of: scalar.string)
                // Most scalars are words: text at once.
                if tag == .str { return .string(scalar.string) }
                scalar = Node.Scalar(scalar.string)
            } else {
                tag = Tag.Name(rawValue: node.tag.rawValue)
            }
            let node = Node.scalar(scalar)
            switch tag {
            case .null: return .null
            case .bool:
                let written = scalar.string
                let core = ["true", "True", "TRUE", "false", "False", "FALSE"].contains(written)
                if onlyTrueAndFalse && !core { return .string(written) }
                if let value = node.bool { return .bool(value) }
            // A number in JSON's own spelling keeps its text (12345678901234567890, 1.50);
            // YAML's other spellings (0x1F, +5, .inf) are read as YAML reads them.
            case .int, .float:
                if let number = JSONNumber(scalar.string) { return number.value }
                // YAML 1.1's base-60 integers (`1:30`) are computed by Yams without overflow
                // checks: `6444444444444444444:40` would trap. Definitions need none of them, so
                // such a value stays the text it was written as.
                if scalar.string.contains(":") { return .string(scalar.string) }
                if let value = node.int { return .int(value) }
                if let value = node.float, value.isFinite { return .double(value) }
            default: break
            }
            return .string(scalar.string)
        case .sequence(let sequence):
            var result: [JSONValue] = []
            result.reserveCapacity(sequence.count)
            for element in sequence { result.append(try value(of: element, api: api, budget: &budget, onlyTrueAndFalse: onlyTrueAndFalse)) }
            return .array(result)
        case .mapping(let mapping):
            // Sized once: a table grown step by step keeps up to twice the room it needs.
            var result: [String: JSONValue] = [:]
            result.reserveCapacity(mapping.count)
            for (key, element) in mapping {
                guard let name = key.string else {
                    throw DefinitionParser.error(api, key: nil, line: key.mark?.line, localized: "a key is not a string")
                }
                result[name] = try value(of: element, api: api, budget: &budget, onlyTrueAndFalse: onlyTrueAndFalse)
            }
            return .object(result)
        case .alias:
            throw DefinitionParser.error(api, key: nil, line: node.mark?.line, localized: "YAML aliases are not supported")
        }
    }

    /// The words YAML 1.1 reads as Booleans or null, as Yams's default resolver does.
    private static let typedWords: Set<String> = [
        "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE",
        "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL",
    ]

    /// The type Yams's default resolver gives a plain scalar's text; its regular expressions run
    /// only for text that can match one of them (most scalars are words, which cannot).
    static func implicitTag(of text: String) -> Tag.Name {
        guard let first = text.utf8.first else { return .null }
        switch first {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "~"),
            UInt8(ascii: "<"), UInt8(ascii: "="):
            break
        default:
            guard text.utf8.count <= 5, typedWords.contains(text) else { return .str }
        }
        return Resolver.default.resolveTag(of: Node.scalar(Node.Scalar(text)))
    }

    private static func describe(yaml error: YamlError) -> String {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _),
            .composer(_, let problem, let mark, _):
            return "\(problem) (line \(mark.line), column \(mark.column))"
        default:
            return "\(error)".split(separator: "\n").first.map(String.init) ?? "unknown error"
        }
    }

    /// A one-line description of a JSON parsing error, with the line where Foundation gives it.
    static func describe(_ error: any Error) -> String {
        if case DecodingError.dataCorrupted(let context) = error {
            if let underlying = context.underlyingError {
                let text = "\(underlying)"
                if let range = text.range(of: "line \\d+, column \\d+", options: .regularExpression) {
                    return "syntax error around \(text[range])"
                }
                return (underlying as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? context.debugDescription
            }
            return context.debugDescription
        }
        return "\(error)"
    }
}

/// Counts the values a document expands to and how deep it nests, against
/// ``Limits/maximumDefinitionNodes`` and ``Limits/maximumJSONDepth``.
struct NodeBudget {
    let limit: Int
    let maximumDepth: Int
    private var used = 0
    private var depth = 0

    init(remaining limit: Int, maximumDepth: Int) {
        self.limit = limit
        self.maximumDepth = maximumDepth
    }

    mutating func take() -> Bool {
        used += 1
        return used <= limit
    }

    mutating func enter() -> Bool {
        depth += 1
        return depth <= maximumDepth
    }

    mutating func leave() { depth -= 1 }
}

/// Finds the lines of API names and their keys in JSON text without a full parser: it tracks
/// strings and nesting, and records every string followed by `:` at depth 1 (an API) and 2 (a key).
enum JSONLineScanner {
    static func lines(in data: Data) -> [String: [String: Int]] {
        var result: [String: [String: Int]] = [:]
        let bytes = [UInt8](data)
        var index = 0
        var line = 1
        var depth = 0
        var currentAPI: String?
        var lastString: (text: String, line: Int)?
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\n"):
                line += 1
            case UInt8(ascii: "\""):
                var text = [UInt8]()
                let startLine = line
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count {
                        index += 1
                    }
                    text.append(bytes[index])
                    index += 1
                }
                lastString = (String(decoding: text, as: UTF8.self), startLine)
            case UInt8(ascii: ":"):
                if let key = lastString {
                    if depth == 1 {
                        currentAPI = key.text
                        result[key.text, default: [:]][""] = key.line
                    } else if depth == 2, let api = currentAPI {
                        result[api, default: [:]][key.text] = key.line
                    }
                }
                lastString = nil
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                lastString = nil
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                lastString = nil
            case UInt8(ascii: ","):
                lastString = nil
            default:
                break
            }
            index += 1
        }
        return result
    }
}
