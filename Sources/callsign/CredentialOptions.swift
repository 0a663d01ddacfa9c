import ArgumentParser
import Callsign
import CallsignOpenAPI
import Foundation

/// `--user`, `--bearer`, `--api-key` and `--security-scheme`, shared by the commands that send requests.
struct CredentialOptions: ParsableArguments {
    @Option(name: [.short, .long], help: .localized("HTTP basic credentials: USER:PASSWORD."))
    var user: String?

    @Option(help: .localized("A bearer token, or @FILE to read it from a file (so it stays out of `ps` and shell history)."))
    var bearer: String?

    @Option(name: .customLong("bearer-env"), help: .localized("The name of an environment variable that holds a bearer token."))
    var bearerEnvironment: String?

    @Option(
        name: .customLong("api-key"),
        help: .localized("An API key, or @FILE, sent as the OpenAPI document's apiKey security scheme (in its header, query parameter or cookie)."))
    var apiKey: String?

    @Option(name: .customLong("api-key-env"), help: .localized("The name of an environment variable that holds an API key."))
    var apiKeyEnvironment: String?

    @Option(
        name: .customLong("security-scheme"),
        help: .localized("The OpenAPI document's security scheme that sends --api-key, --bearer or --user, when it has several."))
    var securityScheme: String?

    /// The bearer token from `--bearer TOKEN`, `--bearer @FILE` or `--bearer-env NAME`.
    func bearerToken(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        try Self.secret(bearer, variable: bearerEnvironment, option: "bearer", environment: environment)
    }

    /// A secret given as `--OPTION VALUE`, `--OPTION @FILE` or `--OPTION-env NAME`.
    private static func secret(_ value: String?, variable: String?, option: String, environment: [String: String]) throws -> String? {
        switch (value, variable) {
        case (.some, .some):
            throw ValidationError(localized("give --\(option) or --\(option)-env, not both"))
        case (let value?, nil):
            guard value.hasPrefix("@") else { return value }
            let path = String(value.dropFirst())
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                throw ValidationError(localized("--\(option) @\(path): the file cannot be read as text"))
            }
            let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !secret.isEmpty else { throw ValidationError(localized("--\(option) @\(path): the file is empty")) }
            return secret
        case (nil, let name?):
            guard let secret = environment[name], !secret.isEmpty else {
                throw ValidationError(localized("--\(option)-env \(name): the environment variable is not set"))
            }
            return secret
        case (nil, nil):
            return nil
        }
    }

    /// Whether any credential was given on the command line.
    var given: Bool { user != nil || bearer != nil || bearerEnvironment != nil || apiKey != nil || apiKeyEnvironment != nil }

    /// The credentials given on the command line for a request to `path`: when it is an absolute
    /// http(s) URL, its origin may receive them too — naming both is asking for it.
    func authentication(sendingTo path: String, openAPI: OpenAPIOperations? = nil) throws -> Authentication? {
        guard var explicit = try authentication(openAPI: openAPI) else { return nil }
        let lowered = path.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://"), let url = URL(string: path) {
            explicit.additionalOrigins.append(url)
        }
        return explicit
    }

    /// The credentials given on the command line, if any. With an OpenAPI document, `--api-key`
    /// and `--security-scheme` send the secret as one of its security schemes.
    func authentication(openAPI: OpenAPIOperations? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Authentication? {
        let key = try Self.secret(apiKey, variable: apiKeyEnvironment, option: "api-key", environment: environment)
        let token = try bearerToken(environment: environment)
        let given = [user.map { _ in "--user" }, token.map { _ in "--bearer" }, key.map { _ in "--api-key" }].compactMap { $0 }
        guard given.count <= 1 else { throw ValidationError(localized("give one of --user, --bearer and --api-key, not \(given.joined(separator: " and "))")) }
        if key != nil || securityScheme != nil {
            guard let openAPI else {
                throw ValidationError(localized("--api-key and --security-scheme need an OpenAPI document (-D) that defines the security scheme"))
            }
            guard let secret = key ?? token ?? user else { throw ValidationError(localized("--security-scheme needs --api-key, --bearer or --user")) }
            return try openAPI.authentication(scheme: securityScheme ?? Self.onlyKeyScheme(of: openAPI), secret: secret)
        }
        if let user {
            guard let colon = user.firstIndex(of: ":") else { throw ValidationError(localized("--user takes USER:PASSWORD")) }
            return .basic(username: String(user[..<colon]), password: String(user[user.index(after: colon)...]))
        }
        return token.map { .bearer($0) }
    }

    /// The document's one apiKey scheme, which `--api-key` uses unless `--security-scheme` names another.
    private static func onlyKeyScheme(of openAPI: OpenAPIOperations) throws -> String {
        let keys = openAPI.securitySchemes.filter { _, scheme in
            switch scheme {
            case .headerKey, .queryKey, .cookieKey: true
            default: false
            }
        }.keys.sorted()
        guard let only = keys.first else { throw ValidationError(localized("--api-key: the OpenAPI document defines no apiKey security scheme")) }
        guard keys.count == 1 else {
            throw ValidationError(localized("--api-key: the OpenAPI document has several apiKey security schemes (\(keys.joined(separator: ", "))); choose one with --security-scheme"))
        }
        return only
    }
}
