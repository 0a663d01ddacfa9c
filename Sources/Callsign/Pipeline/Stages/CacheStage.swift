import Foundation
import HTTPTypes

/// The ``HTTPCache`` stage (``MiddlewareStage/cache``): answers from storage, revalidates,
/// stores and invalidates. In the chain only when the client has a cache.
struct CacheStage: Middleware {
    let cache: HTTPCache
    let factory: RequestFactory

    /// Statuses a response may be stored with on heuristic freshness alone (RFC 9110 §15.1),
    /// minus 206 (partial content is never stored here) and 501 (no 5xx is stored).
    private static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414]
    /// Request fields that make a request the caller's own conditional or partial one.
    private static let callerConditionals = ["Range", "If-Range", "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since"]
    /// 304 fields that do not replace the stored ones (RFC 9111 §3.2).
    private static let keptOn304: Set<HTTPField.Name> = [.contentLength, .contentEncoding, .transferEncoding, .contentRange]

    /// One cacheable request: its key and the request facts the cache rules read.
    private struct Lookup {
        var request: Request
        /// The request with its URL and headers filled in, for responses served from storage.
        var probe: Request
        var key: Key
        var headers: Headers
        var requestControl: CacheControl
        var policy: CachePolicy
    }

    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        // Only bodies read into memory are cached: streams and downloads go to the network.
        guard case .memory = context.bodyReading else { return try await next(request) }
        guard request.method == .get || request.method == .head else {
            let response = try await next(request)
            if ![.options, .trace].contains(request.method), (200..<400).contains(response.status.code) {
                await invalidate(after: response, context: context)
            }
            return response
        }
        var probe = request
        let prepared = try factory.prepare(&probe)
        let headers = prepared.headers
        if Self.callerConditionals.contains(where: headers.contains) { return try await next(request) }
        let digestKey: Data
        do {
            digestKey = try await cache.storage.partitionKey()
        } catch {
            context.logger?.debug("the HTTP cache has no partition key; the call goes to the network", metadata: ["callsign.error": "\(error)"])
            return try await next(request)
        }
        let key = Self.key(
            url: prepared.url, headers: headers, method: request.method, redaction: context.redaction,
            digestKey: digestKey)
        let lookup = Lookup(
            request: request, probe: probe, key: key, headers: headers, requestControl: CacheControl(headers["Cache-Control"]),
            policy: request.cachePolicy ?? .useProtocol)
        return try await answer(lookup, context: context, next: next)
    }

    /// Serves a stored response when the rules allow, else goes to the network (revalidating
    /// what is stored) and stores what may be stored.
    private func answer(_ lookup: Lookup, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let onlyIfCached = lookup.policy == .cacheOnly || lookup.requestControl.has("only-if-cached")
        var stored: CachedResponse?
        if lookup.policy != .reloadIgnoringCache {
            stored = await self.lookup(lookup.key, requestHeaders: lookup.headers, context: context)
            if stored == nil, lookup.request.method == .head {
                stored = await self.lookup(lookup.key.with(method: "GET"), requestHeaders: lookup.headers, context: context)
            }
        }
        guard let stored else {
            if onlyIfCached {
                throw APIError(.cacheMiss, localized: "no stored response for this request, and the cache policy forbids the network", request: lookup.probe)
            }
            let requestTime = Date()
            let response = try await next(lookup.request)
            await storeIfAllowed(response, lookup: lookup, requestTime: requestTime, context: context)
            return response
        }
        let state = Freshness(
            entry: stored, now: Date(), heuristicLimit: cache.maximumHeuristicFreshness, lifetime: lookup.policy.freshness)
        let storedControl = CacheControl(stored.headers[.cacheControl])
        if lookup.policy == .returnCacheElseLoad || lookup.policy == .cacheOnly {
            return serve(stored, age: state.age, for: lookup.probe, source: .cache)
        }
        let wantsValidation = storedControl.noCache || lookup.requestControl.noCache
            || (lookup.headers["Cache-Control"] == nil && lookup.headers["Pragma"]?.lowercased().contains("no-cache") == true)
        if !wantsValidation, state.satisfies(lookup.requestControl, storedControl: storedControl) {
            return serve(stored, age: state.age, for: lookup.probe, source: .cache)
        }
        if onlyIfCached {
            throw APIError(.cacheMiss, localized: "the stored response is stale and only-if-cached forbids the network", request: lookup.probe)
        }
        return try await revalidate(stored, state: state, storedControl: storedControl, lookup: lookup, context: context, next: next)
    }

    /// Asks with the stored validators: a matching 304 refreshes the stored response; an
    /// unreachable server or a 5xx may serve it stale; anything else replaces it.
    private func revalidate(
        _ stored: CachedResponse, state: Freshness, storedControl: CacheControl, lookup: Lookup, context: MiddlewareContext,
        next: MiddlewareNext
    ) async throws -> Response {
        var conditional = lookup.request
        if let etag = stored.headers[.eTag] { conditional.headers["If-None-Match"] = etag }
        if let lastModified = stored.headers[.lastModified] { conditional.headers["If-Modified-Since"] = lastModified }
        let requestTime = Date()
        let response: Response
        do {
            response = try await next(conditional)
        } catch let error as APIError {
            if error.isUnreachable,
                mayServeStale(stored, state: state, storedControl: storedControl, requestControl: lookup.requestControl, offline: true)
            {
                return serve(stored, age: state.age, for: lookup.probe, source: .staleCache)
            }
            throw error
        }
        if response.status.code == 304, !Self.selects(notModified: response.headers, stored: stored.headers) {
            // RFC 9111 §4.3.4: a 304 whose validator names another representation updates
            // nothing. Ask once more, without conditions, rather than serve the wrong body.
            let fresh = try await next(lookup.request)
            await storeIfAllowed(fresh, lookup: lookup, requestTime: requestTime, context: context)
            return fresh
        }
        if response.status.code == 304 {
            return await refresh(stored, with: response, requestTime: requestTime, lookup: lookup, context: context)
        }
        if response.status.code >= 500,
            mayServeStale(stored, state: state, storedControl: storedControl, requestControl: lookup.requestControl, offline: false)
        {
            return serve(stored, age: state.age, for: lookup.probe, source: .staleCache)
        }
        await storeIfAllowed(response, lookup: lookup, requestTime: requestTime, context: context)
        return response
    }

    /// A stored response updated by a 304's fields (RFC 9111 §3.2), saved and served.
    private func refresh(
        _ stored: CachedResponse, with response: Response, requestTime: Date, lookup: Lookup, context: MiddlewareContext
    ) async -> Response {
        var refreshed = stored
        let updates = response.headers.filter { !Self.keptOn304.contains($0.name) && $0.name != .setCookie }
        for name in Set(updates.map(\.name)) { refreshed.headers[name] = nil }
        refreshed.headers.append(contentsOf: updates)
        refreshed.requestTime = requestTime
        refreshed.responseTime = Date()
        if !CacheControl(refreshed.headers[.cacheControl]).has("no-store"), !lookup.requestControl.has("no-store") {
            await save(refreshed, context: context)
        }
        let age = Freshness(entry: refreshed, now: refreshed.responseTime, heuristicLimit: cache.maximumHeuristicFreshness).age
        var served = serve(refreshed, age: age, for: response.request, source: .revalidated)
        served.duration = response.duration
        return served
    }

    /// Whether a 304 selects the stored response (RFC 9111 §4.3.4): its strong or weak `ETag`
    /// equals the stored one; else its `Last-Modified` does; a 304 with neither selects only a
    /// stored response that has neither.
    static func selects(notModified: HTTPFields, stored: HTTPFields) -> Bool {
        if let tag = notModified[.eTag] { return stored[.eTag] == tag }
        if let modified = notModified[.lastModified] { return stored[.eTag] == nil && stored[.lastModified] == modified }
        return stored[.eTag] == nil && stored[.lastModified] == nil
    }

    // MARK: - Storing

    private func storeIfAllowed(_ response: Response, lookup: Lookup, requestTime: Date, context: MiddlewareContext) async {
        let key = lookup.key
        guard
            let entry = storable(
                response, key: key, requestHeaders: lookup.headers, requestControl: lookup.requestControl, requestTime: requestTime)
        else { return }
        // A response that echoes a credential the request carried is not written down: masking
        // it would change what is served later, and storing it would put the secret at rest.
        if !key.partition.isEmpty {
            let secrets = SecretValues(request: response.request, redaction: key.redaction)
            if secrets.appears(in: entry.body) || entry.headers.contains(where: { secrets.appears(in: $0.value) }) { return }
        }
        await save(entry, context: context)
    }

    /// The entry to store for a response, or `nil` when RFC 9111 §3 (or our stricter rules) forbid it.
    private func storable(
        _ response: Response, key: Key, requestHeaders: Headers, requestControl: CacheControl, requestTime: Date
    ) -> CachedResponse? {
        let code = response.status.code
        guard !response.request.credentialsStripped, !requestControl.has("no-store"),
            (200..<500).contains(code), code != 206, code != 304,
            response.body.count <= cache.maximumEntrySize
        else { return nil }
        let control = CacheControl(response.headers[.cacheControl])
        guard !control.has("no-store") else { return nil }
        let varyNames = Self.varyNames(response.headers)
        guard !varyNames.contains("*") else { return nil }
        if key.method == "GET", response.headers[.contentEncoding] == nil, let length = response.headers[.contentLength].flatMap({ ContentLength.digits($0) }),
            length != Int64(response.body.count)
        {
            return nil  // truncated (or padded): never store a body we did not get whole
        }
        let explicit = control.has("max-age") || response.headers[.expires] != nil || control.has("public") || control.has("private")
        guard explicit || Self.heuristicallyCacheable.contains(code) else { return nil }
        var headers = response.headers
        headers[.setCookie] = nil
        return CachedResponse(
            url: key.url, partition: key.partition, method: key.method,
            varyingHeaders: Self.varyingValues(varyNames, in: requestHeaders, key: key), status: code, headers: headers,
            body: key.method == "HEAD" ? Data() : response.body, requestTime: requestTime, responseTime: Date())
    }

    private func save(_ entry: CachedResponse, context: MiddlewareContext) async {
        do {
            try await cache.storage.store(entry)
        } catch {
            context.logger?.debug("the HTTP cache could not store a response", metadata: ["callsign.error": "\(error)"])
        }
    }

    /// After a successful unsafe request: the target URL and same-origin `Location` /
    /// `Content-Location` are no longer trusted (RFC 9111 §4.4).
    private func invalidate(after response: Response, context: MiddlewareContext) async {
        guard let target = response.request.url else { return }
        var urls = [target]
        for name in [HTTPField.Name.location, .contentLocation] {
            if let value = response.headers[name], let url = URL(string: value, relativeTo: target)?.absoluteURL,
                Origin(url) == Origin(target)
            {
                urls.append(url)
            }
        }
        for url in urls {
            do {
                try await cache.storage.removeEntries(url: context.redaction.redact(url: url.absoluteString))
            } catch {
                context.logger?.debug("the HTTP cache could not invalidate an entry", metadata: ["callsign.error": "\(error)"])
            }
        }
    }

    // MARK: - Reading

    private func lookup(_ key: Key, requestHeaders: Headers, context: MiddlewareContext) async -> CachedResponse? {
        let candidates: [CachedResponse]
        do {
            candidates = try await cache.storage.entries(url: key.url, partition: key.partition, method: key.method)
        } catch {
            context.logger?.debug("the HTTP cache could not be read", metadata: ["callsign.error": "\(error)"])
            return nil
        }
        return candidates.first { entry in
            // A row from storage is outside data: a status HTTPTypes cannot hold is no entry.
            guard (100...999).contains(entry.status) else { return false }
            let names = Self.varyNames(entry.headers)
            return !names.contains("*") && Self.varyingValues(names, in: requestHeaders, key: key) == entry.varyingHeaders
        }
    }

    private func serve(_ entry: CachedResponse, age: TimeInterval, for request: Request, source: ResponseSource) -> Response {
        var headers = entry.headers
        headers[.age] = String(min(Int(saturating: max(0, age)), DeltaSeconds.maximum))
        var response = Response(
            request: request, status: HTTPResponse.Status(code: entry.status), headers: headers,
            body: request.method == .head ? Data() : entry.body)
        response.source = source
        return response
    }

    private func mayServeStale(
        _ entry: CachedResponse, state: Freshness, storedControl: CacheControl, requestControl: CacheControl, offline: Bool
    ) -> Bool {
        guard !storedControl.has("must-revalidate"), !storedControl.noCache else { return false }
        if offline && cache.servesStaleWhenOffline { return true }
        let allowance = storedControl.seconds("stale-if-error") ?? requestControl.seconds("stale-if-error")
        guard let allowance else { return false }
        return state.staleness <= TimeInterval(allowance)
    }

    // MARK: - Keys

    struct Key {
        var url: String
        var partition: String
        var method: String
        /// What counts as a credential, and the storage's key for digests of them.
        var redaction: Redaction
        var digestKey: Data
        func with(method: String) -> Key {
            Key(url: url, partition: partition, method: method, redaction: redaction, digestKey: digestKey)
        }
    }

    /// The storage key: the URL with secrets redacted, and an HMAC (under the storage's own
    /// key) of every credential the request carries — secret headers, the headers and query
    /// parameters the authentication adds, cookies — so that neither the stored URL nor the
    /// partition name lets anyone test guesses of a credential offline.
    static func key(url: URL, headers: Headers, method: HTTPRequest.Method, redaction: Redaction, digestKey: Data) -> Key {
        let text = url.absoluteString
        let redacted = redaction.redact(url: text)
        var credentials = headers.fields.filter { redaction.isSecretHeader($0.name) }
            .map { "\($0.name.lowercased()): \($0.value)" }.sorted()
        if redacted != text { credentials.append("url: \(text)") }
        let partition = credentials.isEmpty ? "" : Digest.hmacHex(key: digestKey, credentials.joined(separator: "\n"))
        return Key(url: redacted, partition: partition, method: method.rawValue, redaction: redaction, digestKey: digestKey)
    }

    static func varyNames(_ headers: HTTPFields) -> [String] {
        headers[values: .vary].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
    }

    /// The request's values for the `Vary` names; secret ones as keyed digests, so none reach storage.
    static func varyingValues(_ names: [String], in headers: Headers, key: Key) -> [String: String] {
        var values: [String: String] = [:]
        for name in names {
            let value = headers.fields.filter { $0.name.lowercased() == name }.map(\.value).joined(separator: ", ")
            values[name] = key.redaction.isSecretHeader(name) && !value.isEmpty ? "hmac:" + Digest.hmacHex(key: key.digestKey, value) : value
        }
        return values
    }
}

/// RFC 9111 §4.2: how long a stored response stays fresh and how old it is now.
struct Freshness {
    let lifetime: TimeInterval
    let age: TimeInterval

    var staleness: TimeInterval { max(0, age - lifetime) }

    /// - Parameter chosen: the lifetime the call's ``CachePolicy/fresh(for:)`` sets, over the headers'.
    init(entry: CachedResponse, now: Date, heuristicLimit: Duration, lifetime chosen: Duration? = nil) {
        let headers = entry.headers
        let control = CacheControl(headers[.cacheControl])
        let date = headers[.date].flatMap({ HTTPDate.parse($0) }) ?? entry.responseTime
        if let chosen {
            lifetime = chosen.seconds
        } else if let maxAge = control.seconds("max-age") {
            lifetime = TimeInterval(maxAge)
        } else if control.isMalformed("max-age") {
            lifetime = 0
        } else if let expires = headers[.expires] {
            // An invalid Expires (such as "0") means already expired.
            lifetime = HTTPDate.parse(expires).map { max(0, $0.timeIntervalSince(date)) } ?? 0
        } else if let lastModified = headers[.lastModified].flatMap({ HTTPDate.parse($0) }) {
            lifetime = min(max(0, date.timeIntervalSince(lastModified)) / 10, heuristicLimit.seconds)
        } else {
            lifetime = 0
        }
        // An Age that is not delta-seconds ("inf", "-5", "1e9") counts as absent.
        let ageValue = headers[.age].flatMap(DeltaSeconds.parse).map(TimeInterval.init) ?? 0
        let apparentAge = max(0, entry.responseTime.timeIntervalSince(date))
        let responseDelay = max(0, entry.responseTime.timeIntervalSince(entry.requestTime))
        let initialAge = max(apparentAge, ageValue + responseDelay)
        age = initialAge + max(0, now.timeIntervalSince(entry.responseTime))
    }

    /// Whether the entry may be served without validation under the request's directives.
    func satisfies(_ request: CacheControl, storedControl: CacheControl) -> Bool {
        if let maxAge = request.seconds("max-age"), age > TimeInterval(maxAge) { return false }
        if let minFresh = request.seconds("min-fresh"), lifetime - age < TimeInterval(minFresh) { return false }
        if lifetime > age { return true }
        guard !storedControl.has("must-revalidate"), let maxStale = request.maxStale else { return false }
        return maxStale == DeltaSeconds.maximum || staleness <= TimeInterval(maxStale)
    }
}
