import Foundation

/// Swift types by the names definitions give them in `Response Class` / `responseClass`
/// (RFAPI's model classes), so a call can decode its answer without naming the type where it
/// is made.
///
/// ```swift
/// configuration.responses.classes.register(Profile.self)              // as "Profile"
/// configuration.responses.classes.register(Topic.self, as: "RFTopic")  // RFAPI's class name
///
/// client.request("UserProfile") { c in
///     c.decoded { value in
///         if let profile = value as? Profile { show(profile) }
///     }
/// }
/// let value = try await client.call("UserProfile").decodeResponseClass()   // any Sendable
/// ```
///
/// With `Response Type: objects` (`3`) the value is an array of the class. A client whose
/// registry is not empty warns (through its logger, and in ``APIClient/warnings``) about every
/// definition that names a class it does not know. Naming the type where you call —
/// `client.call(name, as: Profile.self)` — stays the checked way; the registry is for code
/// moved from RFAPI, where the definition file chose the model class.
public struct ResponseClasses: Sendable {
    // Untyped `throws`: a typed-throws closure made in a generic function crashes Swift 6.3.1's
    // SILGen; the caller turns the error back into an APIError.
    typealias Decode = @Sendable (Response, _ many: Bool) throws -> any Sendable
    private var decoders: [String: Decode] = [:]
    /// The same types read from an error body (``ErrorClasses``), whatever the status.
    typealias DecodeError = @Sendable (Response) throws -> any Sendable
    private var errorDecoders: [String: DecodeError] = [:]

    /// An empty registry.
    public init() {}

    /// Registers `type` under `name` (default: the type's own name).
    public mutating func register<T: Decodable & Sendable>(_ type: T.Type, as name: String? = nil) {
        decoders[name ?? String(describing: type)] = { response, many in
            try Self.decode(T.self, from: response, many: many)
        }
        errorDecoders[name ?? String(describing: type)] = { response in
            let value: T = try response.decodeErrorBody(T.self)
            return value
        }
    }

    private static func decode<T: Decodable & Sendable>(_ type: T.Type, from response: Response, many: Bool) throws(APIError) -> any Sendable {
        if many {
            let values: [T] = try response.decode([T].self)
            return values
        }
        let value: T = try response.decode(T.self)
        return value
    }

    /// The registered names, sorted.
    public var names: [String] { decoders.keys.sorted() }

    /// Whether a type is registered under `name`.
    public func contains(_ name: String) -> Bool { decoders[name] != nil }

    /// Whether nothing is registered.
    public var isEmpty: Bool { decoders.isEmpty }

    func decoder(for name: String) -> Decode? { decoders[name] }

    func errorDecoder(for name: String) -> DecodeError? { errorDecoders[name] }

    /// Warnings for definitions that name a class this registry does not know (none while
    /// the registry is empty: then the feature is not in use).
    func warnings(for definitions: APIDefinitions) -> [LocalizedMessage] {
        guard !isEmpty else { return [] }
        return definitions.names.flatMap { name -> [LocalizedMessage] in
            var warnings: [LocalizedMessage] = []
            if let className = definitions[name]?.responseClass, !contains(className) {
                warnings.append("\(name): its Response Class \"\(className)\" is not registered (registered: \(names.joined(separator: ", ")))" as LocalizedMessage)
            }
            for className in definitions[name]?.errorClasses?.names ?? [] where !contains(className) && className != "ProblemDetails" {
                warnings.append("\(name): its Error Class \"\(className)\" is not registered (registered: \(names.joined(separator: ", ")))" as LocalizedMessage)
            }
            return warnings
        }
    }
}

extension Response {
    /// Decodes the body as the type registered under the request's ``CallOptions/responseClass``
    /// (an array of it for `objects`), after the same checks as ``decode(_:decoder:)``.
    ///
    /// ```swift
    /// let value = try await client.call("UserProfile").decodeResponseClass()
    /// let profile = value as? Profile
    /// ```
    /// - Throws: ``APIError/Code/decoding`` when the request names no class or an unregistered
    ///   one, or the body does not decode; the status and envelope errors of `decode`.
    public func decodeResponseClass() throws(APIError) -> any Sendable {
        guard let className = self.request.responseClass else {
            throw APIError(.decoding, localized: "the request names no Response Class", request: self.request, response: self)
        }
        guard let decode = self.settings.classes.decoder(for: className) else {
            throw APIError(
                .decoding, localized: "no type is registered for the Response Class \"\(className)\" (configuration.responses.classes)",
                request: self.request, response: self)
        }
        do {
            return try decode(self, self.request.responseType == .objects)
        } catch {
            throw APIError.wrap(error, request: self.request)
        }
    }
}
