import Foundation

/// Turns a request's parameters into a body of one content type.
///
/// Register your own for a custom media type, or replace a built-in one:
///
/// ```swift
/// struct XMLEncoder: ParameterEncoder {
///     func encode(_ parameters: Parameters) throws -> RequestBody {
///         .data(Data(makeXML(parameters).utf8), contentType: "application/xml")
///     }
/// }
/// configuration.encoders[.custom("application/xml")] = XMLEncoder()
/// ```
public protocol ParameterEncoder: Sendable {
    /// Encodes the parameters as a body. Throw any error; Callsign reports it as
    /// ``APIError/Code/encoding``.
    func encode(_ parameters: Parameters) throws -> RequestBody
}

/// The table of parameter encoders by content type, which users can extend or override.
///
/// Defaults: ``ContentType/formURLEncoded`` → ``FormURLEncoder``, ``ContentType/json`` →
/// ``JSONParameterEncoder``, ``ContentType/text`` → ``TextParameterEncoder``,
/// ``ContentType/multipartFormData`` → ``MultipartParameterEncoder``. ``ContentType/query``
/// has no body encoder: its parameters always go to the query string, encoded by ``queryEncoder``.
public struct ParameterEncoders: Sendable {
    private var table: [ContentType: any ParameterEncoder]
    /// How query strings are written (also used by ``FormURLEncoder`` by default).
    public var queryEncoder: QueryEncoder

    /// The built-in table.
    public static let `default` = ParameterEncoders()

    /// Creates the built-in table.
    public init() {
        queryEncoder = QueryEncoder()
        table = [
            .formURLEncoded: FormURLEncoder(),
            .json: JSONParameterEncoder(),
            .text: TextParameterEncoder(),
            .multipartFormData: MultipartParameterEncoder(),
        ]
    }

    /// The encoder for a content type, or `nil` if none is registered.
    public subscript(contentType: ContentType) -> (any ParameterEncoder)? {
        get { table[contentType] }
        set { table[contentType] = newValue }
    }
}

/// Writes parameters as an RFC 3986 query string.
///
/// Only unreserved characters (`A–Z a–z 0–9 - . _ ~`) pass unencoded, so `+`, `&`, `=`, `#`,
/// `/`, `?` and spaces in names or values are percent-encoded and never change the query's
/// structure. Keys are written in sorted order, so equal parameters give equal URLs.
///
/// - Arrays: `tags[]=a&tags[]=b` (``ArrayStyle/brackets``, the default, as AFNetworking and
///   Rails write them) or `tags=a&tags=b` (``ArrayStyle/repeatedKey``).
/// - Nested objects: `user[name]=Ann&user[age]=3`.
/// - Booleans: `true` / `false`; `null`: an empty value (`x=`).
///
/// ```swift
/// QueryEncoder().encode(["q": "a&b", "tags": ["x", "y"]])   // "q=a%26b&tags%5B%5D=x&tags%5B%5D=y"
/// ```
public struct QueryEncoder: Sendable {
    /// How arrays are written.
    public enum ArrayStyle: Sendable {
        /// `key[]=a&key[]=b`
        case brackets
        /// `key=a&key=b`
        case repeatedKey
    }

    /// How arrays are written. Default ``ArrayStyle/brackets``.
    public var arrayStyle: ArrayStyle

    /// Creates an encoder.
    public init(arrayStyle: ArrayStyle = .brackets) { self.arrayStyle = arrayStyle }

    /// The encoded query string, without the leading `?`.
    public func encode(_ parameters: Parameters) -> String {
        var pairs: [(String, String)] = []
        for key in parameters.keys.sorted() {
            // Force-unwrap-free: the key comes from the dictionary itself.
            guard let value = parameters[key] else { continue }
            append(key: key, value: value, to: &pairs)
        }
        return pairs.map { "\(Self.percentEncode($0.0))=\(Self.percentEncode($0.1))" }.joined(separator: "&")
    }

    private func append(key: String, value: JSONValue, to pairs: inout [(String, String)]) {
        switch value {
        case .array(let elements):
            for element in elements {
                append(key: arrayStyle == .brackets ? "\(key)[]" : key, value: element, to: &pairs)
            }
        case .object(let members):
            for member in members.keys.sorted() {
                guard let nested = members[member] else { continue }
                append(key: "\(key)[\(member)]", value: nested, to: &pairs)
            }
        default:
            pairs.append((key, value.scalarText ?? ""))
        }
    }

    /// Percent-encodes every byte outside RFC 3986's unreserved set.
    static func percentEncode(_ text: String) -> String {
        PercentEncoding.encode(text) { isUnreserved($0) }
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}

/// Encodes parameters as `application/x-www-form-urlencoded`, with the same rules as
/// ``QueryEncoder`` (spaces as `%20`, which every form decoder accepts).
public struct FormURLEncoder: ParameterEncoder {
    /// The query rules used for the body.
    public var queryEncoder: QueryEncoder
    /// Creates an encoder.
    public init(queryEncoder: QueryEncoder = QueryEncoder()) { self.queryEncoder = queryEncoder }

    public func encode(_ parameters: Parameters) throws -> RequestBody {
        .data(Data(queryEncoder.encode(parameters).utf8), contentType: ContentType.formURLEncoded.mediaType)
    }
}

/// Encodes parameters as a JSON object (keys sorted).
public struct JSONParameterEncoder: ParameterEncoder {
    /// Creates an encoder.
    public init() {}

    public func encode(_ parameters: Parameters) throws -> RequestBody {
        .json(.object(parameters))
    }
}

/// Encodes parameters as `text/plain`: a lone `text` parameter as it is, otherwise one
/// `key=value` line per parameter.
public struct TextParameterEncoder: ParameterEncoder {
    /// Creates an encoder.
    public init() {}

    public func encode(_ parameters: Parameters) throws -> RequestBody {
        if parameters.count == 1, let text = parameters["text"]?.stringValue { return .text(text) }
        let lines = parameters.keys.sorted().map { key in
            let value = parameters[key] ?? .null
            return "\(key)=\(value.scalarText ?? value.description)"
        }
        return .text(lines.joined(separator: "\n"))
    }
}

/// Encodes parameters as `multipart/form-data` text fields.
public struct MultipartParameterEncoder: ParameterEncoder {
    /// Creates an encoder.
    public init() {}

    public func encode(_ parameters: Parameters) throws -> RequestBody {
        var form = MultipartFormData()
        form.appendFields(parameters)
        return .multipart(form)
    }
}

/// Percent-encoding with a choice of bytes that pass.
enum PercentEncoding {
    /// Encodes every byte for which `passes` is false; `keepsEscapes` leaves valid `%XX` as they are.
    static func encode(_ text: String, keepsEscapes: Bool = false, passes: (UInt8) -> Bool) -> String {
        // Most text needs nothing: checked without copying it.
        guard text.utf8.contains(where: { !passes($0) }) else { return text }
        let bytes = Array(text.utf8)
        var result = [UInt8]()
        result.reserveCapacity(bytes.count * 3)
        let hex = Array("0123456789ABCDEF".utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if keepsEscapes, byte == UInt8(ascii: "%"), index + 2 < bytes.count, bytes[index + 1].isHexDigit,
                bytes[index + 2].isHexDigit
            {
                result.append(contentsOf: bytes[index...(index + 2)])
                index += 3
                continue
            }
            if passes(byte) {
                result.append(byte)
            } else {
                result.append(UInt8(ascii: "%"))
                result.append(hex[Int(byte >> 4)])
                result.append(hex[Int(byte & 0x0F)])
            }
            index += 1
        }
        return String(decoding: result, as: UTF8.self)
    }
}
