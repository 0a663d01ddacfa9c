/// Where common parameters (and authorization parameters) go.
///
/// In a definitions file: `commonParameterPlacement: query` (or `parameters`).
public enum CommonParameterPlacement: String, Sendable, Hashable, CaseIterable {
    /// Always in the query string, whatever the method.
    case query
    /// With the call's parameters: the query for GET, HEAD and DELETE, the body otherwise.
    case parameters

    /// Reads a placement's name as written in a definitions file.
    init?(name: String) { self.init(rawValue: name) }

    /// The names a definitions file accepts.
    static let names = allCases.map(\.rawValue)
}
