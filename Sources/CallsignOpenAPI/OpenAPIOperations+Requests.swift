public import Callsign
import Foundation

// Building requests for operations: where each parameter goes, and what it must be.
extension OpenAPIOperations {
    /// A request for operation `name`, its parameters placed where the document says and checked
    /// first: a missing required parameter, a value of the wrong type or outside the `enum` is an
    /// `APIError` (`APIError.Code.invalidRequest`) naming the parameter. Values that are not
    /// parameters go into the body.
    ///
    /// Text values are read as the schema's type (`"7"` for an integer), as a command line gives them.
    public func request(_ name: String, parameters: Parameters = [:]) throws(APIError) -> Request {
        let operation = try operation(named: name)
        var values = parameters
        var request = try definitions.definition(named: name).request()
        var pathValues: Parameters = [:]
        for parameter in operation.parameters {
            guard let given = values[parameter.name] else {
                if parameter.required {
                    throw APIError(
                        .invalidRequest,
                        localized: "\(name) needs the \(parameter.location.rawValue) parameter \"\(parameter.name)\"")
                }
                continue
            }
            values[parameter.name] = nil
            let value = try Self.checked(given, for: parameter, operation: name)
            switch parameter.location {
            case .path:
                pathValues[parameter.name] = value
            case .query:
                for (key, item) in Self.queryPairs(value, for: parameter) { request.query[key] = item }
            case .header:
                request.headers[parameter.name] = Self.text(value, separator: ",")
            case .cookie:
                let pair = try Self.cookiePair(parameter.name, value: value, operation: name)
                request.headers["Cookie"] = request.headers["Cookie"].map { $0 + "; " + pair } ?? pair
            }
        }
        if operation.bodyContentType == nil, !values.isEmpty, let extra = values.keys.sorted().first {
            throw APIError(.invalidRequest, localized: "\(name) has no parameter \"\(extra)\" and takes no body")
        }
        if operation.bodyRequired && values.isEmpty {
            throw APIError(.invalidRequest, localized: "\(name) needs a request body")
        }
        request.parameters = pathValues.merging(values) { path, _ in path }
        return request
    }

    // MARK: - Checking and placing values

    static func checked(_ value: JSONValue, for parameter: Parameter, operation: String) throws(APIError) -> JSONValue {
        var value = value
        switch (parameter.type, value) {
        case ("integer"?, .string(let text)):
            // Kept as written: an id past Int's range is still an integer on the wire.
            if let number = JSONNumber(text), number.isInteger {
                value = number.value
            } else if let number = Int(text) {
                value = .int(number)
            } else {
                throw APIError(.invalidRequest, localized: "\(operation): the parameter \"\(parameter.name)\" must be an integer, not \"\(text)\"")
            }
        case ("integer"?, .int), ("number"?, .int), ("number"?, .double), ("number"?, .number), ("string"?, .string), ("boolean"?, .bool),
            ("array"?, .array), ("object"?, .object), (nil, _):
            break
        case ("integer"?, .number(let number)) where number.isInteger:
            break
        case ("number"?, .string(let text)):
            if let number = JSONNumber(text) {
                value = number.value
            } else if let number = Double(text), number.isFinite {
                value = .double(number)
            } else {
                throw APIError(.invalidRequest, localized: "\(operation): the parameter \"\(parameter.name)\" must be a number, not \"\(text)\"")
            }
        case ("boolean"?, .string(let text)) where text == "true" || text == "false":
            value = .bool(text == "true")
        case ("array"?, .string(let text)):
            value = .array(text.split(separator: ",").map { .string(String($0)) })
        case ("string"?, .int(let number)):
            value = .string(String(number))
        case ("string"?, .number(let number)):
            value = .string(number.text)
        default:
            throw APIError(
                .invalidRequest, localized: "\(operation): the parameter \"\(parameter.name)\" must be \(parameter.type ?? "a value"), not \(value.description)")
        }
        if let allowed = parameter.allowedValues, !allowed.contains(text(value, separator: ",")) {
            throw APIError(
                .invalidRequest,
                localized: "\(operation): the parameter \"\(parameter.name)\" must be one of \(allowed.joined(separator: ", ")), not \(text(value, separator: ","))")
        }
        return value
    }

    /// The query entries of a value, by the parameter's style. An exploded `form` array stays an
    /// array: the client's query encoder writes it (``QueryEncoder/ArrayStyle/repeatedKey`` writes
    /// `id=1&id=2`, as OpenAPI means; ``OpenAPIOperations/clientConfiguration(_:)`` sets it).
    static func queryPairs(_ value: JSONValue, for parameter: Parameter) -> [(String, JSONValue)] {
        switch value {
        case .array(let items):
            let texts = items.map { text($0, separator: ",") }
            switch (parameter.style, parameter.explode) {
            case ("spaceDelimited", _): return [(parameter.name, .string(texts.joined(separator: " ")))]
            case ("pipeDelimited", _): return [(parameter.name, .string(texts.joined(separator: "|")))]
            case (_, false): return [(parameter.name, .string(texts.joined(separator: ",")))]
            default: return [(parameter.name, .array(texts.map(JSONValue.string)))]
            }
        case .object(let members):
            let keys = members.keys.sorted()
            if parameter.style == "deepObject" {
                return keys.map { ("\(parameter.name)[\($0)]", .string(text(members[$0] ?? .null, separator: ","))) }
            }
            if parameter.explode { return keys.map { ($0, .string(text(members[$0] ?? .null, separator: ","))) } }
            let flat = keys.flatMap { [$0, text(members[$0] ?? .null, separator: ",")] }.joined(separator: ",")
            return [(parameter.name, .string(flat))]
        default:
            return [(parameter.name, .string(text(value, separator: ",")))]
        }
    }

    /// `configuration` as OpenAPI's serialization asks: exploded query arrays as repeated keys.
    ///
    /// ```swift
    /// let client = APIClient(definitions: petstore.definitions, configuration: OpenAPIOperations.clientConfiguration(.init()))
    /// ```
    public static func clientConfiguration(_ configuration: APIClient.Configuration) -> APIClient.Configuration {
        var configuration = configuration
        configuration.encoders.queryEncoder.arrayStyle = .repeatedKey
        return configuration
    }

    /// `name=value` for the `Cookie` field: the one place a cookie parameter or a cookie API key
    /// is written. A value that is a valid cookie (RFC 6265 `cookie-octet`s: no control
    /// character, space, `"`, `,`, `;` or `\`) is sent byte for byte; any other byte is
    /// percent-encoded, as OpenAPI's `form` style (RFC 6570) and cookie parsers expect — so a
    /// value can never end its cookie or start another, and any value can still be sent. An
    /// array's items are joined by `,` (the `form` style), each item with its `=` encoded too, so
    /// not even a parser that splits cookies at commas sees a second one. A name that is not a
    /// token is refused.
    ///
    /// - Throws: ``APIError/Code/invalidRequest`` naming the operation and the name.
    static func cookiePair(_ name: String, value: JSONValue, operation: String) throws(APIError) -> String {
        do {
            try CookiePair.checkName(name)
        } catch {
            throw APIError(
                .invalidRequest,
                localized: "\(operation): the cookie name \(String(reflecting: name)) is not a token (RFC 6265), so it cannot be sent")
        }
        let encoded: String
        switch value {
        case .array(let items):
            encoded = items.map { CookiePair.encoded(text($0, separator: ","), encodingEquals: true) }.joined(separator: ",")
        default: encoded = CookiePair.encoded(text(value, separator: ","))
        }
        return "\(name)=\(encoded)"
    }

    static func text(_ value: JSONValue, separator: String) -> String {
        switch value {
        case .string(let text): text
        case .array(let items): items.map { text($0, separator: separator) }.joined(separator: separator)
        default: value.description
        }
    }

}
