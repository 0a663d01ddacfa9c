public import Foundation

/// A JSON-like value: the type of request parameters and of untyped response bodies.
///
/// Literals of every JSON kind work, so parameters read like a dictionary literal:
///
/// ```swift
/// let parameters: Parameters = ["page": 1, "tags": ["a", "b"], "on": true, "ratio": 0.5, "x": nil]
/// ```
///
/// `JSONValue` is `Codable`: it encodes to and decodes from exactly the JSON it describes.
/// ``init(parsing:)`` keeps every number as written: one that `Int` or `Double` would rewrite
/// (`12345678901234567890`, `1.50`) becomes ``number(_:)`` and is sent back unchanged.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    /// A number kept as its JSON text, for numbers `Int` and `Double` would rewrite.
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

/// Named parameters of a call: path template values, query items or body fields.
public typealias Parameters = [String: JSONValue]

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByStringInterpolation
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "not a JSON value (a date or data in a property list?)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .number(let value):
            // Another encoder cannot write raw text: the closest value it can hold.
            if let whole = Int(value.text) {
                try container.encode(whole)
            } else if value.isInteger, let decimal = Decimal(string: value.text) {
                try container.encode(decimal)
            } else if let double = value.doubleValue {
                try container.encode(double)
            } else {
                try container.encode(value.text)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSONValue {
    /// Creates a value from any `Encodable` by encoding it to JSON and reading it back.
    ///
    /// ```swift
    /// let parameters = try JSONValue(encoding: NewBoard(title: "Balsa Fish"))
    /// ```
    /// - Throws: ``APIError`` with code ``APIError/Code/encoding`` if the value cannot be encoded.
    public init(encoding value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws(APIError) {
        do {
            let data = try encoder.encode(value)
            self = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw APIError(.encoding, localized: "the value could not be encoded as JSON: \(error)", underlyingError: error)
        }
    }

    /// Parses JSON data into a value, keeping numbers as written (see ``number(_:)``).
    ///
    /// - Throws: ``APIError`` with code ``APIError/Code/decoding`` when the data is not JSON or
    ///   nests deeper than ``Limits/maximumJSONDepth``.
    public init(parsing data: Data) throws(APIError) {
        do throws(JSONTextError) {
            self = try JSONValue(parsingText: data, maximumDepth: Limits.default.maximumJSONDepth)
        } catch {
            throw APIError(.decoding, localized: "the body is not valid JSON: \(error)", underlyingError: error)
        }
    }

    /// The JSON text of this value, with keys sorted so equal values give equal bytes, and
    /// numbers of ``number(_:)`` exactly as written. Infinities and NaN, which JSON cannot carry,
    /// are written as `null`.
    public func jsonData(prettyPrinted: Bool = false) -> Data {
        var output: [UInt8] = []
        write(to: &output, pretty: prettyPrinted)
        return Data(output)
    }

    /// The value as a string, if it is one.
    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }
    /// The value as an integer, if it is one (a whole double counts too).
    public var intValue: Int? {
        switch self {
        case .int(let value): value
        case .double(let value) where value.rounded() == value && abs(value) < 9.0e15: Int(value)
        case .number(let value): value.intValue
        default: nil
        }
    }
    /// The value as a `Double`, if it is a number (a large integer or a long decimal may round).
    ///
    /// ```swift
    /// let seconds = entry["time"]?.doubleValue ?? 0
    /// ```
    public var doubleValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        case .number(let value): value.doubleValue
        default: nil
        }
    }
    /// The value as a Boolean, if it is one.
    public var boolValue: Bool? { if case .bool(let value) = self { value } else { nil } }
    /// The value as an array, if it is one.
    public var arrayValue: [JSONValue]? { if case .array(let value) = self { value } else { nil } }
    /// The value as an object, if it is one.
    public var objectValue: [String: JSONValue]? { if case .object(let value) = self { value } else { nil } }
    /// Whether the value is `null`.
    public var isNull: Bool { self == .null }

    /// Member access for objects: `json["data"]?["id"]`.
    public subscript(key: String) -> JSONValue? { objectValue?[key] }
    /// Element access for arrays; `nil` when out of range.
    public subscript(index: Int) -> JSONValue? {
        guard let array = arrayValue, array.indices.contains(index) else { return nil }
        return array[index]
    }

    /// The text a scalar contributes to a query string or form: strings as is, numbers in
    /// their shortest form, Booleans as `true`/`false`, `null` as the empty string.
    var scalarText: String? {
        switch self {
        case .null: ""
        case .bool(let value): value ? "true" : "false"
        case .int(let value): String(value)
        case .double(let value): value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
        case .number(let value): value.text
        case .string(let value): value
        case .array, .object: nil
        }
    }

    /// A short name of the kind of value, for error messages.
    var kindName: LocalizedMessage {
        switch self {
        case .null: "null" as LocalizedMessage
        case .bool: "a Boolean" as LocalizedMessage
        case .int, .double, .number: "a number" as LocalizedMessage
        case .string: "a string" as LocalizedMessage
        case .array: "an array" as LocalizedMessage
        case .object: "an object" as LocalizedMessage
        }
    }
}

extension JSONValue: CustomStringConvertible {
    public var description: String { String(decoding: jsonData(), as: UTF8.self) }
}
