public import Foundation
import Synchronization

/// How a definitions file says where credentials come from — never the secret itself.
///
/// In the `DEFAULT` definition:
///
/// ```yaml
/// DEFAULT:
///   authentication:
///     scheme: bearer               # bearer | basic | authorization | apiKey | one your app registers
///     tokenEnvironment: API_TOKEN  # bearer: the token; authorization: the whole header value; apiKey: the key
/// ```
///
/// ```yaml
///   authentication: { scheme: basic, userEnvironment: API_USER, passwordEnvironment: API_PASSWORD }
///   authentication: { scheme: apiKey, in: header, name: X-API-Key, tokenEnvironment: API_KEY }
///   authentication: { scheme: apiKey, in: query, name: api_key, tokenEnvironment: API_KEY }
///   authentication: { scheme: hmac, tokenEnvironment: HMAC_KEY }   # registered by the app
/// ```
///
/// The schemes are an open set: besides the built-in ones, an app registers its own by name with
/// ``register(scheme:_:)`` before it loads the file. A name that is neither is refused when the
/// file loads, and so is a file that holds a secret (`token:`, `password:`, `value:`). Whatever
/// the scheme, credentials go only where ``CredentialRule`` lets them.
public struct AuthenticationSource: Sendable, Hashable {
    /// A scheme's name: a built-in one (``bearer``, ``basic``, ``authorization``, ``apiKey``) or
    /// one registered with ``AuthenticationSource/register(scheme:_:)``. Names are compared
    /// without regard to case.
    public struct Scheme: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The name, lowercased.
        public let rawValue: String

        /// A scheme by name.
        public init(rawValue: String) { self.rawValue = rawValue.lowercased() }

        /// A scheme by name, written as a string literal.
        public init(stringLiteral value: String) { self.init(rawValue: value) }

        /// The name, lowercased, as errors show it.
        public var description: String { rawValue }

        /// A bearer token (RFC 6750) from `tokenEnvironment`.
        public static let bearer = Scheme(rawValue: "bearer")
        /// HTTP basic authentication (RFC 7617) from `userEnvironment` and `passwordEnvironment`.
        public static let basic = Scheme(rawValue: "basic")
        /// A whole `Authorization` value from `tokenEnvironment`.
        public static let authorization = Scheme(rawValue: "authorization")
        /// A key from `tokenEnvironment` in the header, query parameter or cookie `name`
        /// (OpenAPI's `apiKey`, `in: header | query | cookie`).
        public static let apiKey = Scheme(rawValue: "apikey")

        /// The built-in schemes, in the order errors list them.
        public static let builtIn: [Scheme] = [.bearer, .basic, .authorization, .apiKey]
    }

    /// Makes the ``Authentication`` of a registered scheme from the file's source and the
    /// environment; throw an ``APIError`` (``APIError/Code/authentication``) when something it
    /// needs is missing (``secret(_:environment:)`` does that for you).
    public typealias Factory = @Sendable (_ source: AuthenticationSource, _ environment: [String: String]) throws(APIError) -> Authentication

    /// Which environment variable of the source holds a secret.
    public enum Role: String, Sendable, Hashable, CaseIterable {
        /// `tokenEnvironment`.
        case token
        /// `userEnvironment`.
        case user
        /// `passwordEnvironment`.
        case password
    }

    /// The scheme.
    public var scheme: Scheme
    /// For `bearer`, `authorization` and `apiKey`: the environment variable holding the token,
    /// value or key.
    public var tokenEnvironment: String?
    /// For `basic`: the environment variable holding the user name.
    public var userEnvironment: String?
    /// For `basic`: the environment variable holding the password.
    public var passwordEnvironment: String?
    /// For `apiKey`: where the key goes (the file's `in`).
    public var location: APIKeyAuthentication.Location?
    /// For `apiKey`: the header, query parameter or cookie name (the file's `name`).
    public var name: String?

    /// Creates a source.
    public init(
        scheme: Scheme, tokenEnvironment: String? = nil, userEnvironment: String? = nil, passwordEnvironment: String? = nil,
        location: APIKeyAuthentication.Location? = nil, name: String? = nil
    ) {
        self.scheme = scheme
        self.tokenEnvironment = tokenEnvironment
        self.userEnvironment = userEnvironment
        self.passwordEnvironment = passwordEnvironment
        self.location = location
        self.name = name
    }

    /// The value of the environment variable the source names for `role`.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/authentication``) naming the key the file lacks or
    ///   the variable that is unset or empty — never its value.
    public func secret(_ role: Role, environment: [String: String] = ProcessInfo.processInfo.environment) throws(APIError) -> String {
        let variable =
            switch role {
            case .token: tokenEnvironment
            case .user: userEnvironment
            case .password: passwordEnvironment
            }
        guard let variable else {
            throw APIError(.authentication, localized: "the \(scheme.rawValue) authentication needs \(role.rawValue)Environment in the definitions")
        }
        guard let value = environment[variable], !value.isEmpty else {
            throw APIError(
                .authentication,
                localized: "the environment variable \(variable) (\(role.rawValue)Environment of the \(scheme.rawValue) authentication) is not set")
        }
        return value
    }

    /// Reads the credentials from the environment.
    ///
    /// - Throws: ``APIError`` (``APIError/Code/authentication``) naming the variable that is unset
    ///   or empty, or a scheme that is neither built in nor registered.
    public func authentication(environment: [String: String] = ProcessInfo.processInfo.environment) throws(APIError)
        -> Authentication
    {
        switch scheme {
        case .bearer: return .bearer(try secret(.token, environment: environment))
        case .authorization: return .authorization(try secret(.token, environment: environment))
        case .basic: return .basic(username: try secret(.user, environment: environment), password: try secret(.password, environment: environment))
        case .apiKey:
            guard let location, let name, !name.isEmpty else {
                throw APIError(.authentication, localized: "the apikey authentication needs in and name in the definitions")
            }
            return .apiKey(try secret(.token, environment: environment), name: name, in: location)
        default:
            guard let factory = Self.factory(for: scheme) else {
                throw APIError(.authentication, localized: "the authentication scheme \"\(scheme.rawValue)\" is not registered")
            }
            return try factory(self, environment)
        }
    }
}

extension AuthenticationSource {
    /// The schemes apps registered, by lowercased name.
    private static let registry = Mutex<[String: Factory]>([:])

    /// Registers a scheme a definitions file may name (`scheme: hmac`), for the whole process.
    /// Register before loading the file: a name that is not known when it loads is a load error.
    /// Registering a name again replaces its factory.
    ///
    /// ```swift
    /// try AuthenticationSource.register(scheme: "hmac") { source, environment in
    ///     let key = try source.secret(.token, environment: environment)
    ///     return Authentication(HMACSigning(keyID: "app-1", key: SymmetricKey(data: Data(key.utf8))))
    /// }
    /// let definitions = try APIDefinitions(contentsOf: url)   // DEFAULT: authentication: {scheme: hmac, tokenEnvironment: HMAC_KEY}
    /// configuration.authentication = try definitions.authenticationSource?.authentication()
    /// ```
    ///
    /// - Throws: ``APIError`` (``APIError/Code/invalidRequest``) when the name is empty, not one
    ///   word of letters, digits, `-` and `_`, or a built-in scheme's.
    public static func register(scheme name: String, _ factory: @escaping Factory) throws(APIError) {
        let scheme = Scheme(rawValue: name)
        guard !name.isEmpty, name.count <= 64, name.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_") })
        else {
            throw APIError(.invalidRequest, localized: "an authentication scheme's name must be one word of letters, digits, - and _")
        }
        guard !Scheme.builtIn.contains(scheme) else {
            throw APIError(.invalidRequest, localized: "\"\(name)\" is a built-in authentication scheme")
        }
        registry.withLock { $0[scheme.rawValue] = factory }
    }

    /// The factory registered for `scheme`, if any.
    static func factory(for scheme: Scheme) -> Factory? { registry.withLock { $0[scheme.rawValue] } }

    /// Every scheme a file may name: the built-in ones, then the registered ones (sorted).
    static var knownSchemeNames: [String] {
        Scheme.builtIn.map { $0 == .apiKey ? "apiKey" : $0.rawValue } + registry.withLock { $0.keys.sorted() }
    }
}
