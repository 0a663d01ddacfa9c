/// Where common parameters (and authorization parameters) go.
public enum CommonParameterPlacement: Sendable, Hashable {
    /// Always in the query string, whatever the method.
    case query
    /// With the call's parameters: the query for GET, HEAD and DELETE, the body otherwise.
    case parameters
}
