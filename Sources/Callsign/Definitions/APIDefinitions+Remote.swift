public import Foundation

extension APIDefinitions {
    /// Loads definitions from a server, as RFAPI could: the format comes from the response's
    /// `Content-Type` (JSON, property list or YAML), else from the URL's extension.
    ///
    /// ```swift
    /// let definitions = try await APIDefinitions.fetch(from: URL(string: "https://example.com/api.yaml")!)
    /// ```
    /// Fetched definitions grant no credentials: their base URLs are not trusted origins
    /// (``trustsItsOrigins`` is `false`) unless you pass `trustingOrigins: true`, so whoever
    /// controls the definitions server cannot point your credentials at a host of theirs. The
    /// client's own ``APIClient/Configuration/baseURL`` and ``Authentication/additionalOrigins``
    /// stay trusted either way.
    ///
    /// - Parameters:
    ///   - url: where the definitions document is.
    ///   - client: the client that fetches it. Default ``APIClient/shared``.
    ///   - trustingOrigins: whether the fetched base URLs may receive credentials. Default `false`.
    /// - Throws: ``APIError`` for a transport failure, a non-2xx status, an unknown format or a
    ///   malformed document.
    public static func fetch(
        from url: URL, using client: APIClient = .shared, trustingOrigins: Bool = false
    ) async throws(APIError) -> APIDefinitions {
        let response = try await client.send(.get(url.absoluteString)).validate()
        let format: Format
        switch response.mediaType ?? "" {
        case let type where type.contains("json"): format = .json
        case let type where type.contains("yaml") || type.contains("yml"): format = .yaml
        case let type where type.contains("plist") || type.contains("property-list"): format = .plist
        default:
            guard let byExtension = Format(pathExtension: url.pathExtension) else {
                throw APIError(
                    .invalidDefinition,
                    localized: "cannot tell the format of the definitions at \(url.absoluteString): the server sent \(response.mediaType ?? "no content type")",
                    response: response)
            }
            format = byExtension
        }
        var definitions = try APIDefinitions(data: response.body, format: format, limits: client.configuration.limits)
        definitions.trustsItsOrigins = trustingOrigins
        return definitions
    }
}
