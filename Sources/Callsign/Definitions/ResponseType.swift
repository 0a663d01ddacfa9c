/// What a response body holds, as a definition declares it (RFAPI's "Response Type").
///
/// In a definitions file, write a word (`void`, `object`, `objects`, `raw`) or RFAPI's number
/// (0 raw, 1 void, 2 object, 3 objects).
public struct ResponseType: Hashable, Sendable, Codable, CustomStringConvertible {
    private enum Kind: String, Sendable, Codable {
        case raw, void, object, objects
    }

    private let kind: Kind

    /// No expectation: the body is handed over as it is (RFAPI 0, "default").
    public static let raw = ResponseType(kind: .raw)
    /// Only success matters; the body is ignored (RFAPI 1, "success").
    public static let void = ResponseType(kind: .void)
    /// One object (RFAPI 2).
    public static let object = ResponseType(kind: .object)
    /// An array of objects (RFAPI 3).
    public static let objects = ResponseType(kind: .objects)

    public var description: String { kind.rawValue }

    /// Reads a word (`void`, `object`, `objects`, `raw`, also `success`/`default`) or RFAPI's number.
    public init?(name: String) {
        switch name.lowercased() {
        case "raw", "default", "0": self = .raw
        case "void", "success", "none", "1": self = .void
        case "object", "2": self = .object
        case "objects", "array", "3": self = .objects
        default: return nil
        }
    }

    private init(kind: Kind) { self.kind = kind }
}
