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
    /// **Kept for offline starts.** With `keepingCopyAt`, the last document that loaded is kept
    /// in that file (owner-only, replaced in one step, never through a link), with its `ETag` and
    /// `Last-Modified`. The next fetch sends them back (`If-None-Match`, `If-Modified-Since`): a
    /// `304 Not Modified` loads the kept copy without sending the document again. When the server
    /// cannot be reached, or answers with a 5xx status, the kept copy loads instead, with a
    /// warning in ``warnings`` saying so — an app starts offline with the definitions it last had.
    /// A document that does not load, or does not match `expectedSHA256`, never replaces the
    /// kept copy.
    ///
    /// ```swift
    /// let folder = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
    /// let kept = folder.appendingPathComponent("api-definitions.callsign")
    /// let definitions = try await APIDefinitions.fetch(from: definitionsURL, keepingCopyAt: kept)
    /// ```
    ///
    /// **Pinned.** With `expectedSHA256` (the hex SHA-256 of the document's bytes, as
    /// `shasum -a 256 api.yaml` prints it), any other document is refused — a server or proxy
    /// that altered it cannot change which hosts the app calls.
    ///
    /// - Parameters:
    ///   - url: where the definitions document is.
    ///   - client: the client that fetches it. Default ``APIClient/shared``.
    ///   - trustingOrigins: whether the fetched base URLs may receive credentials. Default `false`.
    ///   - keptCopy: the file that keeps the last document that loaded. Default `nil`: none.
    ///   - expectedSHA256: the SHA-256 the document must have, as 64 hex digits. Default `nil`:
    ///     any document.
    /// - Throws: ``APIError`` for a transport failure with no kept copy, a non-2xx status, an
    ///   unknown format, a malformed document, or (``APIError/Code/invalidDefinition``) a document
    ///   whose SHA-256 is not the expected one.
    public static func fetch(
        from url: URL, using client: APIClient = .shared, trustingOrigins: Bool = false, keepingCopyAt keptCopy: URL? = nil,
        expectedSHA256: String? = nil
    ) async throws(APIError) -> APIDefinitions {
        let limits = client.configuration.limits
        let expected = try expectedSHA256.map { (text) throws(APIError) in try KeptDefinitions.digest(parsing: text) }
        // A kept copy that cannot be read (damaged, not this user's) is as good as none; the
        // definitions that replace it say so.
        var kept: KeptDefinitions? = nil
        var keptProblem: APIError? = nil
        if let keptCopy {
            do { kept = try KeptDefinitions.read(from: keptCopy, for: url, limits: limits) } catch { keptProblem = error }
        }
        var request = Request.get(url.absoluteString)
        if let etag = kept?.etag { request.headers["If-None-Match"] = etag }
        if let lastModified = kept?.lastModified { request.headers["If-Modified-Since"] = lastModified }

        let response: Response
        do {
            response = try await client.send(request)
        } catch {
            guard error.isUnreachable, let kept, let keptCopy else { throw error }
            return try kept.definitions(
                trustingOrigins: trustingOrigins, expected: expected, limits: limits,
                warning: "the definitions server at \(url.absoluteString) could not be reached (\(error.text)); loaded the copy kept at \(keptCopy.path) from \(HTTPDate.format(kept.fetched))" as LocalizedMessage)
        }
        if response.status.code == 304, let kept, let keptCopy {
            let definitions = try kept.definitions(trustingOrigins: trustingOrigins, expected: expected, limits: limits, warning: nil)
            // A 304 may carry newer validators (RFC 9110 §15.4.5): the next request sends them.
            var renewed = kept
            renewed.etag = response.headers[.eTag] ?? kept.etag
            renewed.lastModified = response.headers[.lastModified] ?? kept.lastModified
            if renewed.etag != kept.etag || renewed.lastModified != kept.lastModified { try? renewed.write(to: keptCopy) }
            return definitions
        }
        if (500...599).contains(response.status.code), let kept, let keptCopy {
            return try kept.definitions(
                trustingOrigins: trustingOrigins, expected: expected, limits: limits,
                warning: "the definitions server at \(url.absoluteString) answered \(response.status.code); loaded the copy kept at \(keptCopy.path) from \(HTTPDate.format(kept.fetched))" as LocalizedMessage)
        }
        try response.validate()
        let format = try format(of: response, at: url)
        let digest = Digest.sha256Hex(response.body)
        if let expected, digest != expected {
            throw APIError(
                .invalidDefinition,
                localized: "the definitions at \(url.absoluteString) are not the expected document: their SHA-256 is \(digest), expected \(expected); the document was refused",
                response: response)
        }
        var definitions = try APIDefinitions(data: response.body, format: format, limits: limits)
        definitions.trustsItsOrigins = trustingOrigins
        if let keptProblem { definitions.warningMessages.append(keptProblem.text) }
        if let keptCopy {
            let copy = KeptDefinitions(
                url: url.absoluteString, format: format.rawValue, etag: response.headers[.eTag],
                lastModified: response.headers[.lastModified], fetched: Date(), sha256: digest, document: response.body)
            do {
                try copy.write(to: keptCopy)
            } catch {
                definitions.warningMessages.append("the definitions could not be kept for offline starts: \(error.text)" as LocalizedMessage)
            }
        }
        return definitions
    }

    /// The format of a fetched document: its `Content-Type`, else the URL's extension.
    private static func format(of response: Response, at url: URL) throws(APIError) -> Format {
        switch response.mediaType ?? "" {
        case let type where type.contains("json"): return .json
        case let type where type.contains("yaml") || type.contains("yml"): return .yaml
        case let type where type.contains("plist") || type.contains("property-list"): return .plist
        default:
            guard let byExtension = Format(pathExtension: url.pathExtension) else {
                throw APIError(
                    .invalidDefinition,
                    localized: "cannot tell the format of the definitions at \(url.absoluteString): the server sent \(response.mediaType ?? "no content type")",
                    response: response)
            }
            return byExtension
        }
    }
}

/// The last definitions document that loaded from a server, with what revalidates it: the file
/// ``APIDefinitions/fetch(from:using:trustingOrigins:keepingCopyAt:expectedSHA256:)`` keeps.
///
/// One JSON file, written whole through ``FileWriter/replacePrivate(_:with:sync:)`` (owner-only,
/// atomic, never through a link) and read back through ``FileWriter/readPrivate(_:limit:)``; the
/// document inside loads through the definitions' bounded reader like any other.
struct KeptDefinitions: Codable, Equatable {
    /// The layout of this file; another is ignored.
    var version = 1
    /// The URL the document came from: a copy kept for another URL is not used.
    var url: String
    var format: String
    var etag: String?
    var lastModified: String?
    var fetched: Date
    /// The SHA-256 of ``document``, checked when it is read back.
    var sha256: String
    var document: Data

    /// The copy kept at `file` for `url`, or `nil` when there is none.
    ///
    /// - Throws: ``APIError`` for a file that is not Callsign's, too large, or damaged.
    static func read(from file: URL, for url: URL, limits: Limits) throws(APIError) -> KeptDefinitions? {
        // The document as Base64 (4 bytes for 3) inside a small JSON object.
        let (scaled, overflow) = max(0, limits.maximumResponseBodySize / 3).multipliedReportingOverflow(by: 4)
        let limit = overflow ? Int.max : scaled.addingReportingOverflow(64 * 1024).overflow ? Int.max : scaled + 64 * 1024
        guard let data = try FileWriter.readPrivate(file, limit: limit) else { return nil }
        try JSONDepth.check(data, limit: 4)
        let kept: KeptDefinitions
        do {
            kept = try KeptJSON.decoder().decode(KeptDefinitions.self, from: data)
        } catch {
            throw APIError(.storage, localized: "the kept definitions at \(file.path) are damaged; they are fetched again", underlyingError: error)
        }
        guard kept.version == 1, kept.url == url.absoluteString else { return nil }
        guard kept.document.count <= limits.maximumResponseBodySize, Digest.sha256Hex(kept.document) == kept.sha256,
            APIDefinitions.Format(rawValue: kept.format) != nil
        else {
            throw APIError(.storage, localized: "the kept definitions at \(file.path) are damaged; they are fetched again")
        }
        return kept
    }

    /// Replaces the kept copy at `file`.
    func write(to file: URL) throws(APIError) {
        let data: Data
        do {
            data = try KeptJSON.encoder().encode(self)
        } catch {
            throw APIError(.storage, localized: "the kept definitions at \(file.path) cannot be written", underlyingError: error)
        }
        try FileWriter.replacePrivate(file, with: data)
    }

    /// The kept document's definitions, when it is the expected one.
    func definitions(trustingOrigins: Bool, expected: String?, limits: Limits, warning: LocalizedMessage?) throws(APIError) -> APIDefinitions {
        if let expected, sha256 != expected {
            throw APIError(
                .invalidDefinition,
                localized: "the definitions kept from \(url) are not the expected document: their SHA-256 is \(sha256), expected \(expected)")
        }
        guard let format = APIDefinitions.Format(rawValue: format) else {
            throw APIError(.storage, localized: "the kept definitions from \(url) are damaged; they are fetched again")
        }
        var definitions = try APIDefinitions(data: document, format: format, limits: limits)
        definitions.trustsItsOrigins = trustingOrigins
        if let warning { definitions.warningMessages.append(warning) }
        return definitions
    }

    /// An expected SHA-256 in lowercase hex.
    static func digest(parsing text: String) throws(APIError) -> String {
        let digest = text.lowercased()
        guard digest.utf8.count == 64, digest.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw APIError(.invalidRequest, localized: "the expected SHA-256 of the definitions must be 64 hex digits")
        }
        return digest
    }
}
