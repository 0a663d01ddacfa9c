public import Foundation

/// How a definitions file says where credentials come from — never the secret itself.
///
/// In the `DEFAULT` definition:
///
/// ```yaml
/// DEFAULT:
///   authentication:
///     scheme: bearer               # bearer | basic | authorization
///     tokenEnvironment: API_TOKEN  # bearer: the token; authorization: the whole header value
/// ```
///
/// ```yaml
///   authentication: { scheme: basic, userEnvironment: API_USER, passwordEnvironment: API_PASSWORD }
/// ```
///
/// A file that holds a secret (`token:`, `password:`, `value:`) is refused when it loads.
public struct AuthenticationSource: Sendable, Hashable {
    /// The scheme.
    public enum Scheme: String, Sendable, Hashable, CaseIterable {
        case bearer, basic, authorization
    }

    /// The scheme.
    public var scheme: Scheme
    /// For `bearer` and `authorization`: the environment variable holding the token or value.
    public var tokenEnvironment: String?
    /// For `basic`: the environment variable holding the user name.
    public var userEnvironment: String?
    /// For `basic`: the environment variable holding the password.
    public var passwordEnvironment: String?

    /// Creates a source.
    public init(scheme: Scheme, tokenEnvironment: String? = nil, userEnvironment: String? = nil, passwordEnvironment: String? = nil) {
        self.scheme = scheme
        self.tokenEnvironment = tokenEnvironment
        self.userEnvironment = userEnvironment
        self.passwordEnvironment = passwordEnvironment
    }

    /// Reads the credentials from the environment.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/authentication``) naming the variable that is unset or empty.
    public func authentication(environment: [String: String] = ProcessInfo.processInfo.environment) throws(APIError)
        -> Authentication
    {
        func read(_ name: String?, _ role: String) throws(APIError) -> String {
            guard let name else {
                throw APIError(.authentication, localized: "the \(scheme.rawValue) authentication needs \(role)Environment in the definitions")
            }
            guard let value = environment[name], !value.isEmpty else {
                throw APIError(.authentication, localized: "the environment variable \(name) (\(role)Environment of the \(scheme.rawValue) authentication) is not set")
            }
            return value
        }
        switch scheme {
        case .bearer: return .bearer(try read(tokenEnvironment, "token"))
        case .authorization: return .authorization(try read(tokenEnvironment, "token"))
        case .basic: return .basic(username: try read(userEnvironment, "user"), password: try read(passwordEnvironment, "password"))
        }
    }
}
