import Foundation
import HTTPTypes
import Synchronization

/// A request ready for a transport: the head, the body and the URL.
struct PreparedRequest: Sendable {
    var head: HTTPRequest
    var body: TransportBody?
    var url: URL
    /// Every header sent: the configuration's, the request's and the body's content type.
    var headers: Headers
}

/// Turns a ``Request`` value into bytes-on-the-wire form, checking everything that could make
/// it mean something other than what was written. A client makes one from its configuration.
struct RequestFactory: Sendable {
    /// The few settings a request's wire form depends on.
    struct Settings: Sendable {
        /// The base URL for relative paths, when the request has none.
        var baseURL: URL?
        /// The headers every request starts with.
        var headers: Headers
        /// Parameter encoders and the query rules.
        var encoders: ParameterEncoders
        /// Which headers survive a hop to another origin.
        var redirects: RedirectPolicy
        /// Whether `Accept-Encoding` asks for compressed answers.
        var asksForCompression: Bool
        /// Bounds on the header fields a request may carry.
        var limits: Limits

        init(configuration: APIClient.Configuration) {
            baseURL = configuration.baseURL
            headers = configuration.headers
            // Proxy credentials go to the proxy only, from ``ProxySettings``: inside a CONNECT
            // tunnel this header would reach the origin.
            headers.remove("Proxy-Authorization")
            if let languages = configuration.acceptLanguage.headerValue, !headers.contains("Accept-Language") {
                headers["Accept-Language"] = languages
            }
            encoders = configuration.encoders
            redirects = configuration.redirects
            asksForCompression = configuration.responses.decompression.isEnabled
            limits = configuration.limits
        }
    }

    let settings: Settings
    /// The settings' headers in wire form, for requests that add none; and with
    /// `Accept: application/json` for those that expect JSON objects.
    private let defaults: RequestDefaults?
    private let jsonDefaults: RequestDefaults?

    init(settings: Settings) {
        self.settings = settings
        defaults = RequestDefaults(settings: settings)
        jsonDefaults = RequestDefaults(settings: settings, accept: "application/json")
    }

    init(configuration: APIClient.Configuration) {
        self.init(settings: Settings(configuration: configuration))
    }

    /// Builds the wire form of `request` and records in it the URL and every header that will be
    /// sent, as a ``Response``'s request reports them. The target ``resolveTarget(_:)`` kept in
    /// the request is used while its path is unchanged.
    ///
    /// - Parameter forDownload: asks for the bytes as stored (`Accept-Encoding: identity`), so
    ///   that a download can be resumed with a `Range`.
    func prepare(_ request: inout Request, forDownload: Bool = false) throws(APIError) -> PreparedRequest {
        let prepared = try Self.annotated(request) { () throws(APIError) in
            try build(&request, forDownload: forDownload)
        }
        request.url = prepared.url
        request.headers = prepared.headers
        return prepared
    }

    /// Fills the path template and resolves the path against the base URL, so that every
    /// middleware sees the absolute URL (without the query) in ``Request/Fields/path``; the
    /// request keeps the target, so building its wire form later parses nothing again.
    @inline(never)  // keeps the large temporaries out of the caller's async frame
    func resolveTarget(_ request: inout Request) throws(APIError) {
        // A path without placeholders resolves the same way against the same base every time:
        // calls by name repeat a handful of them, so their resolution (and URL parse) is kept.
        let key = Self.isLiteral(request.path)
            ? ResolvedKey(path: request.path, base: (request.baseURL ?? settings.baseURL)?.absoluteString) : nil
        let resolved: ResolvedTarget
        if let key, let known = resolvedTargets[key] {
            resolved = known
        } else {
            var target = try Self.annotated(request) { () throws(APIError) in try expandAndResolve(&request) }
            let text = target.absolute
            target.resolvedText = text
            resolved = ResolvedTarget(text: text, target: target, url: URL(string: text))
            if let key { resolvedTargets[key] = resolved }
        }
        request.path = resolved.text
        request.url = resolved.url
        request.target = resolved.target
    }

    /// Whether a path has no `{placeholder}`: nothing to fill, so its resolution depends on the
    /// path and the base alone.
    private static func isLiteral(_ path: String) -> Bool {
        !path.utf8.contains(where: { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "}") })
    }

    private struct ResolvedKey: Hashable {
        let path: String
        let base: String?
    }

    private struct ResolvedTarget: Sendable {
        let text: String
        let target: Target
        let url: URL?
    }

    /// Paths built per call (ids in literal paths) must not grow it without bound. Per client:
    /// a client's bases and paths are its own.
    private let resolvedTargets = BoundedCache<ResolvedKey, ResolvedTarget>()

    /// Adds the request and API name to an error that lacks them.
    private static func annotated<T>(_ request: Request, _ body: () throws(APIError) -> T) throws(APIError) -> T {
        do throws(APIError) {
            return try body()
        } catch {
            var error = error
            if error.request == nil { error.request = request }
            if error.apiName == nil { error.apiName = request.apiName }
            throw error
        }
    }

    /// Fills the template (consuming its values from the parameters) and resolves the result.
    private func expandAndResolve(_ request: inout Request) throws(APIError) -> Target {
        // Most paths have no placeholder: nothing to parse or consume.
        if Self.isLiteral(request.path) {
            return try resolve(PathTemplate.encodeLiteral(request.path, atStart: true), base: request.baseURL ?? settings.baseURL)
        }
        let template: PathTemplate
        do {
            template = try PathTemplate(parsing: request.path)
        } catch {
            throw APIError(.invalidRequest, localized: "the path template \"\(request.path)\" has \(error.reason)")
        }
        var parameters = request.parameters
        var query = request.query
        let expanded = try template.expand(consuming: &parameters, query: &query)
        request.parameters = parameters
        request.query = query
        return try resolve(expanded, base: request.baseURL ?? settings.baseURL)
    }

    private func build(_ request: inout Request, forDownload: Bool) throws(APIError) -> PreparedRequest {
        // Usually resolved once before the middleware chain; again only if a middleware changed the path.
        var target: Target
        // The URL parsed when the target was resolved, while nothing has changed it since.
        var knownURL: URL?
        if let resolved = request.target, resolved.resolvedText == request.path {
            target = resolved
            knownURL = request.url
        } else {
            target = try expandAndResolve(&request)
        }
        let (body, query) = try encodeBody(of: request)
        let queryString = settings.encoders.queryEncoder.encode(query)
        if !queryString.isEmpty {
            target.path += (target.path.contains("?") ? "&" : "?") + queryString
            knownURL = nil
        }
        let (headers, fields) = try headers(of: request, contentType: body?.contentType, forDownload: forDownload)
        let head = HTTPRequest(
            method: request.method, scheme: target.scheme, authority: target.authority, path: target.path, headerFields: fields)
        guard let url = knownURL ?? URL(string: target.absolute) else {
            throw APIError(.invalidRequest, localized: "the URL built from \"\(request.path)\" is not valid")
        }
        return PreparedRequest(head: head, body: body?.content, url: url, headers: headers)
    }

    /// The body and its content type, and the query: parameters go into the body for methods
    /// that carry one (encoded by the content type), into the query otherwise.
    private func encodeBody(of request: Request) throws(APIError) -> (body: (content: TransportBody, contentType: String?)?, query: Parameters) {
        var parameters = request.parameters
        var query = request.query
        let method = request.method
        let bodiless = method == .get || method == .head || method == .delete || method == .options || method == .trace
        let contentType = request.contentType ?? .json
        if let explicit = request.body {
            let body: (TransportBody, String?)
            if var form = explicit.multipartForm {
                if !bodiless {
                    form.prependFields(parameters)
                    parameters = [:]
                }
                body = (try form.streamedBody(), form.contentType)
            } else {
                body = (explicit.content, explicit.contentType)
            }
            query.merge(parameters) { own, _ in own }
            return (body, query)
        }
        if bodiless || contentType.isQuery {
            query.merge(parameters) { own, _ in own }
            return (nil, query)
        }
        if let whole = parameters[Request.arrayParameterKey] {
            guard parameters.count == 1 else {
                throw APIError(
                    .invalidRequest,
                    localized: "the whole-body parameter \"\(Request.arrayParameterKey)\" cannot be combined with other body parameters")
            }
            guard contentType == .json else {
                throw APIError(.invalidRequest, localized: "a whole-body parameter needs the JSON content type, not \(contentType)")
            }
            return ((.data(whole.jsonData()), ContentType.json.mediaType), query)
        }
        guard !parameters.isEmpty else { return (nil, query) }
        guard let encoder = settings.encoders[contentType] else {
            throw APIError(
                .encoding, localized: "no parameter encoder is registered for the content type \(contentType); add one to configuration.encoders")
        }
        let encoded: RequestBody
        do {
            encoded = try encoder.encode(parameters)
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(.encoding, localized: "the parameters could not be encoded as \(contentType): \(error)", underlyingError: error)
        }
        if let form = encoded.multipartForm { return ((try form.streamedBody(), form.contentType), query) }
        return ((encoded.content, encoded.contentType ?? contentType.mediaType), query)
    }

    /// Every header sent, and their wire form: the settings' headers under the request's own,
    /// the body's content type, and `Accept-Encoding`.
    private func headers(of request: Request, contentType: String?, forDownload: Bool) throws(APIError) -> (Headers, HTTPFields) {
        // A definition that expects JSON objects asks for JSON, unless a header already says what it wants.
        let wantsJSON = request.responseType == .object || request.responseType == .objects
        // A property list is asked for by its media type, as AFNetworking's serializer did.
        let wantsPropertyList = request.responseFormat == .propertyList
        if request.headers.isEmpty, contentType == nil, !request.credentialsStripped, !forDownload, !wantsPropertyList,
            let known = wantsJSON ? jsonDefaults : defaults
        {
            // Nothing of the request's own: the client's headers, converted once.
            return (known.headers, known.fields)
        }
        var merged = settings.headers.merging(request.headers)
        merged.remove("Proxy-Authorization")  // a request's own, too (the client's went in Settings)
        if request.credentialsStripped {
            merged = settings.redirects.crossOriginHeaders(merged)
        }
        if let contentType, !merged.contains("Content-Type") {
            merged["Content-Type"] = contentType
        }
        if wantsPropertyList, !merged.contains("Accept") {
            merged["Accept"] = ResponseFormat.propertyList.mediaType
        } else if wantsJSON, !merged.contains("Accept") {
            merged["Accept"] = "application/json"
        }
        if !merged.contains("Accept-Encoding") {
            // A download asks for the bytes as stored, so it can be resumed with a Range.
            if forDownload {
                merged["Accept-Encoding"] = "identity"
            } else if settings.asksForCompression {
                merged["Accept-Encoding"] = ContentDecoding.acceptEncoding
            }
        }
        return (merged, try merged.httpFields(limits: settings.limits))
    }

    /// The headers a client's requests start with — its configuration's, and `Accept-Encoding`
    /// when it decodes responses — with their wire form, built once per client.
    struct RequestDefaults: Sendable {
        let headers: Headers
        let fields: HTTPFields

        /// `nil` when the configuration's headers are not valid on the wire: each request then
        /// reports that itself.
        init?(settings: Settings, accept: String? = nil) {
            var headers = settings.headers
            if let accept, !headers.contains("Accept") { headers["Accept"] = accept }
            if !headers.contains("Accept-Encoding"), settings.asksForCompression {
                headers["Accept-Encoding"] = ContentDecoding.acceptEncoding
            }
            guard let fields = try? headers.httpFields(limits: settings.limits) else { return nil }
            self.headers = headers
            self.fields = fields
        }
    }

    struct Target: Sendable {
        var scheme: String
        var authority: String
        var path: String

        /// The absolute URL text.
        var absolute: String { "\(scheme)://\(authority)\(path)" }

        /// ``absolute`` as it was when the target was resolved, kept so a later step can tell
        /// cheaply whether the request's path still is that URL.
        var resolvedText: String?
    }

    /// Resolves a path against a base without Foundation's relative resolution, so the result
    /// always keeps the base's scheme, host, port and path.
    func resolve(_ path: String, base: URL?) throws(APIError) -> Target {
        if APIDefinition.hasScheme(path) {
            guard let components = URLComponents(string: path) else {
                throw APIError(.invalidRequest, localized: "\"\(path)\" is not a valid URL")
            }
            let target = try Self.target(from: components, described: path)
            let pathPart = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            try Self.checkDotSegments(pathPart, described: path)
            let query = components.percentEncodedQuery.map { "?\($0)" } ?? ""
            return Target(scheme: target.scheme, authority: target.authority, path: pathPart + query)
        }
        guard let base else {
            throw APIError(
                .invalidRequest,
                localized: "no base URL for the relative path \"\(path)\": set baseURL in the definition, the DEFAULT definition or the client configuration")
        }
        var target = try baseTarget(base)
        if path.hasPrefix("//") {
            throw APIError(
                .invalidRequest,
                localized: "the path \"\(path)\" starts with \"//\", which would name another host; write a full URL with a scheme or a relative path")
        }
        let relative = path.hasPrefix("/") ? path.dropFirst() : path[...]
        let pathPart = relative.utf8.firstIndex(of: UInt8(ascii: "?")).map { relative[..<$0] } ?? relative
        try Self.checkDotSegments(pathPart, described: path)
        target.path += relative
        return target
    }

    /// A base URL checked and split into scheme, authority and path — once per base: clients
    /// have a handful of bases, and parsing one costs more than the rest of building a request.
    private func baseTarget(_ base: URL) throws(APIError) -> Target {
        let key = base.absoluteString
        if let known = baseTargets[key] { return known }
        if let problem = BaseURLRule.problem(with: base) { throw APIError(.invalidRequest, localized: problem) }
        guard let components = URLComponents(url: base, resolvingAgainstBaseURL: false) else {
            throw APIError(.invalidRequest, localized: "the base URL \"\(base.absoluteString)\" is not valid")
        }
        var target = try Self.target(from: components, described: base.absoluteString)
        target.path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        baseTargets[key] = target
        return target
    }

    /// Bases built per call must not grow it without bound. Per client, as ``resolvedTargets``.
    private let baseTargets = BoundedCache<String, Target>()

    private static func target(from components: URLComponents, described: String) throws(APIError) -> Target {
        guard let scheme = components.scheme?.lowercased(), URLScheme.isSupported(scheme) else {
            throw APIError(.invalidRequest, localized: "the URL \"\(described)\" must use http, https or http+unix")
        }
        let host = try HostName.wireForm(of: components, described: described)
        let authority = components.port.map { "\(host):\($0)" } ?? host
        return Target(scheme: scheme, authority: authority, path: "")
    }

    /// Refuses `.` and `..` segments (also percent-encoded), which would let a path climb out
    /// of the base path once a server normalises it.
    private static func checkDotSegments(_ path: some StringProtocol, described: String) throws(APIError) {
        // Most paths have neither a dot nor a percent sign: nothing can decode to "." or "..".
        guard path.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "%") }) else { return }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false)
        where segment.contains(".") || segment.contains("%") {
            let decoded = String(segment).removingPercentEncoding ?? String(segment)
            if decoded == "." || decoded == ".." {
                throw APIError(.invalidRequest, localized: "the path \"\(described)\" contains a \"\(decoded)\" segment")
            }
        }
    }
}

/// A small cache shared across threads that forgets everything once it holds `limit` entries:
/// for results that a handful of keys repeat, where keys made per call must not grow it.
final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let entries = Mutex<[Key: Value]>([:])
    private let limit: Int

    init(limit: Int = 256) { self.limit = limit }

    subscript(key: Key) -> Value? {
        get { entries.withLock { $0[key] } }
        set {
            entries.withLock { entries in
                if entries.count >= limit { entries.removeAll(keepingCapacity: true) }
                entries[key] = newValue
            }
        }
    }
}
