/// What a response body is written in, for decoding (RFAPI's `Response Serializer`).
///
/// A property-list body is read through the same bounded reader as property-list definitions
/// files, then decoded, validated and unwrapped from its envelope exactly as a JSON body is: the
/// same `Decodable` types, the same decoder and the same response types. Dates become seconds
/// since 2001-01-01 and data Base64 text, which is how a `JSONDecoder` with its default
/// strategies reads `Date` and `Data` back.
///
/// ```swift
/// var request = Request.get("settings.plist")
/// request.responseFormat = .propertyList      // asks for application/x-plist
/// let settings = try await client.send(request).decode(Settings.self)
/// ```
///
/// In a definitions file: `Response Serializer: AFPropertyListResponseSerializer`, or
/// `responseFormat: propertyList`.
public struct ResponseFormat: Hashable, Sendable, CustomStringConvertible {
    private enum Base: String, Sendable, CaseIterable {
        case json, propertyList
    }

    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// JSON (RFC 8259). The default.
    public static let json = ResponseFormat(.json)
    /// An XML or binary property list (`application/x-plist`).
    public static let propertyList = ResponseFormat(.propertyList)

    /// The media type asked for with `Accept`.
    var mediaType: String {
        switch base {
        case .json: "application/json"
        case .propertyList: "application/x-plist"
        }
    }

    /// Reads a format as a definitions file names it: the words, or AFNetworking's serializer
    /// classes that have a meaning here.
    init?(name: String) {
        switch name {
        case "json", "AFJSONResponseSerializer": self = .json
        case "propertyList", "plist", "AFPropertyListResponseSerializer": self = .propertyList
        default: return nil
        }
    }

    /// The words a definitions file accepts.
    static let names = Base.allCases.map(\.rawValue)

    public var description: String { base.rawValue }
}
