import Foundation

/// Who gets the client's credentials: the one rule, for every way of calling.
///
/// A request carries the ``Authentication`` only when both hold:
///
/// 1. it **asks** for credentials: ``CallOptions/needsAuthorization`` is `true`, or it is
///    `nil` and the request goes to the client's own origin (its configuration's
///    ``APIClient/Configuration/baseURL``);
/// 2. it goes to a **trusted origin** and has not been redirected away from its own: the
///    ``MiddlewareStage/authentication`` stage checks this for every scheme, so no scheme, built
///    in or your own, can skip it.
///
/// What a request asks for when the caller says nothing depends on how it was made, and
/// ``defaultNeedsAuthorization(for:)`` is the table:
///
/// | Way of calling                              | Default | Why |
/// |---------------------------------------------|---------|-----|
/// | ``WayOfCalling/definition`` (a call by name)| `false` | a definition says `needsAuthorization: true` for the APIs that need it (RFAPI's `Authorization`) |
/// | ``WayOfCalling/request``, ``WayOfCalling/builder``, ``WayOfCalling/endpoint`` | `nil` | no definition speaks for them: the client's own origin gets credentials, any other origin only when asked |
/// | ``WayOfCalling/openAPIOperation``           | `true`  | an OpenAPI document declares `security` per operation, so the document decides; an operation with empty `security` asks for none |
/// | ``WayOfCalling/commandLine``                | `true`  | credentials named on the command line (`--user`, `--token`, …) are for the request typed beside them |
///
/// Callbacks (``APIClient/request(_:configure:)-(String,_)``) follow what they start: a name, a
/// ``Request`` or an ``Endpoint``.
///
/// ```swift
/// CredentialRule.defaultNeedsAuthorization(for: .definition)        // false
/// CredentialRule.defaultNeedsAuthorization(for: .builder)           // nil: the client's own origin
/// CredentialRule.defaultNeedsAuthorization(for: .openAPIOperation)  // true: the document's security decides
/// ```
public enum CredentialRule {
    /// How a request was made; each way has one default for whether it asks for credentials.
    public enum WayOfCalling: String, Sendable, Hashable, CaseIterable {
        /// A call by name, built from its ``APIDefinition`` (code or a definitions file).
        case definition
        /// A ``Request`` value made by hand and sent with ``APIClient/send(_:)-(Request)``.
        case request
        /// The ``RequestBuilder`` (`client.get("me")`).
        case builder
        /// An ``Endpoint`` value.
        case endpoint
        /// An operation of an OpenAPI document (CallsignOpenAPI).
        case openAPIOperation
        /// The `callsign` command with credentials given on its command line.
        case commandLine
    }

    /// What ``CallOptions/needsAuthorization`` holds when the caller of `way` says nothing:
    /// `true` or `false`, or `nil` for "the client's own origin only".
    public static func defaultNeedsAuthorization(for way: WayOfCalling) -> Bool? {
        switch way {
        case .definition: false
        case .request, .builder, .endpoint: nil
        case .openAPIOperation, .commandLine: true
        }
    }

    /// Whether a request asks for credentials: what it says, or, when it says nothing, whether it
    /// goes to the client's own origin. Not an ``Endpoint``'s own base URL: an app that calls a
    /// second API through `Endpoint` values must not hand that API its credentials unasked.
    static func asks(_ request: Request, ownOrigin: Origin?) -> Bool {
        if let needsAuthorization = request.needsAuthorization { return needsAuthorization }
        guard let ownOrigin, let origin = Origin(request.path) else { return false }
        return origin == ownOrigin
    }

    /// The check the authentication stage makes before any scheme sees a request: it asks, it
    /// has not left its origin through a redirect, and its origin is trusted.
    struct Gate: Sendable {
        /// The origins that may receive credentials.
        let trustedOrigins: Set<Origin>
        /// The client's own origin (its configuration's base URL).
        let ownOrigin: Origin?

        init(trustedOrigins: Set<Origin>, ownOrigin: Origin?) {
            self.trustedOrigins = trustedOrigins
            self.ownOrigin = ownOrigin
        }

        /// The trusted origins: the configuration's base URL, the base URLs and absolute paths of
        /// definitions that are trusted (``APIDefinitions/trustsItsOrigins``: code and local
        /// files, not fetched definitions), and the authentication's additional origins.
        init(_ configuration: APIClient.Configuration, _ definitions: APIDefinitions) {
            var urls: [URL] = []
            if let base = configuration.baseURL { urls.append(base) }
            if definitions.trustsItsOrigins {
                if let base = definitions.defaultDefinition.baseURL { urls.append(base) }
                urls += definitions.definitions.values.compactMap(\.baseURL)
                urls += definitions.definitions.values.compactMap { definition in
                    definition.path.flatMap { APIDefinition.hasScheme($0) ? URL(string: $0) : nil }
                }
            }
            urls += configuration.authentication?.additionalOrigins ?? []
            self.init(trustedOrigins: Set(urls.compactMap(Origin.init)), ownOrigin: configuration.baseURL.flatMap(Origin.init))
        }

        /// Whether `request` may receive credentials.
        func admits(_ request: Request, context: MiddlewareContext) -> Bool {
            // A redirect to another origin marks the request (RedirectStage): from then on no
            // credential is added to that call again, whatever it asked for.
            guard CredentialRule.asks(request, ownOrigin: ownOrigin), !request.credentialsStripped, let origin = Origin(request.path)
            else { return false }
            return trustedOrigins.contains(origin) || origin == Self.vouchedOrigin(context)
        }

        /// The origin an ``Endpoint``'s own base URL vouches for: the code that built the request
        /// named it.
        private static func vouchedOrigin(_ context: MiddlewareContext) -> Origin? {
            guard let endpoint = context.fields.endpoint else { return nil }
            return type(of: endpoint).baseURL.flatMap(Origin.init)
        }
    }
}

extension Request {
    /// Whether the request asks for the client's credentials (``CredentialRule``).
    func wantsCredentials(ownOrigin: Origin?) -> Bool { CredentialRule.asks(self, ownOrigin: ownOrigin) }
}
