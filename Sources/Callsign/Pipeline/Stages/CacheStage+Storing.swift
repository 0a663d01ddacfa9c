import Foundation
import HTTPTypes

extension CacheStage {
    // MARK: - Storing

    func storeIfAllowed(_ response: Response, lookup: Lookup, requestTime: Date, context: MiddlewareContext) async {
        if lookup.request.method == .head, response.status.code == 200 {
            await updateStoredGET(from: response, lookup: lookup, requestTime: requestTime, context: context)
        }
        let key = lookup.key
        guard
            let entry = storable(
                response, key: key, requestHeaders: lookup.headers, requestControl: lookup.requestControl, requestTime: requestTime)
        else { return }
        await save(entry, context: context)
    }

    /// The entry to store for a response, or `nil` when RFC 9111 §3 (or our stricter rules)
    /// forbid it. 5xx answers are stored only with explicit freshness (or `501` by heuristic);
    /// `must-understand` lets a status the cache understands be stored despite `no-store`
    /// (RFC 9111 §5.2.2.3) and keeps any other out. A `206` only when `partial` (see
    /// `storePart`). A response that echoes a credential the request carried is never written
    /// down: masking it would change what is served later, storing it would put the secret at rest.
    func storable(
        _ response: Response, key: Key, requestHeaders: Headers, requestControl: CacheControl, requestTime: Date, partial: Bool = false
    ) -> CachedResponse? {
        let code = response.status.code
        guard !response.request.credentialsStripped, !requestControl.has("no-store"),
            (200...999).contains(code), code != 304, (code == 206) == partial,
            response.body.count <= cache.maximumEntrySize
        else { return nil }
        if !key.partition.isEmpty {
            let secrets = SecretValues(request: response.request, redaction: key.redaction)
            if secrets.appears(in: response.body) || response.headers.contains(where: { secrets.appears(in: $0.value) }) { return nil }
        }
        let control = CacheControl(response.headers[.cacheControl])
        if control.has("must-understand") {
            guard Self.understood.contains(code) else { return nil }
        } else if control.has("no-store") {
            return nil
        }
        let varyNames = Self.varyNames(response.headers)
        guard !varyNames.contains("*") else { return nil }
        if key.method == "GET", response.headers[.contentEncoding] == nil, let length = response.headers[.contentLength].flatMap({ ContentLength.digits($0) }),
            length != Int64(response.body.count)
        {
            return nil  // truncated (or padded): never store a body we did not get whole
        }
        let explicit = control.has("max-age") || response.headers[.expires] != nil || control.has("public") || control.has("private")
        guard explicit || Self.heuristicallyCacheable.contains(code) || code == 206 else { return nil }
        var headers = HopByHop.removed(from: response.headers)
        headers = HTTPFields(headers.filter { !Self.isSetCookie($0.name) })
        let responseTime = Date()
        if headers[.date] == nil { headers[.date] = HTTPDate.format(responseTime) }  // RFC 9110 §6.6.1
        return CachedResponse(
            url: key.url, partition: key.partition, method: key.method,
            varyingHeaders: Self.varyingValues(varyNames, in: requestHeaders, key: key), status: code, headers: headers,
            body: key.method == "HEAD" ? Data() : response.body, requestTime: requestTime, responseTime: responseTime)
    }

    /// A `200` to HEAD updates the stored GET responses it describes (RFC 9111 §4.3.5): their
    /// fields are freshened when its validators and length agree, and they are dropped when
    /// they do not (the representation changed).
    func updateStoredGET(from response: Response, lookup: Lookup, requestTime: Date, context: MiddlewareContext) async {
        let candidates: [CachedResponse]
        do {
            candidates = try await cache.storage.entries(url: lookup.key.url, partition: lookup.key.partition, method: "GET")
        } catch {
            return
        }
        let head = response.headers
        for entry in candidates where Self.varyingValues(Self.varyNames(entry.headers), in: lookup.headers, key: lookup.key) == entry.varyingHeaders {
            func agrees(_ name: HTTPField.Name) -> Bool {
                guard let given = head[name], let kept = entry.headers[name] else { return true }
                return given == kept
            }
            let length = head[.contentLength].flatMap { ContentLength.digits($0) }
            let sameLength = length == nil || entry.headers[.contentEncoding] != nil || length == Int64(entry.body.count)
            if agrees(.eTag), agrees(.lastModified), sameLength {
                await save(Self.freshened(entry, by: head, requestTime: requestTime), context: context)
            } else {
                do {
                    try await cache.storage.removeEntries(url: entry.url)
                } catch {
                    context.fields.logger?.debug("the HTTP cache could not invalidate an entry", metadata: ["callsign.error": "\(error)"])
                }
            }
        }
    }

    /// Statuses whose caching rules this cache implements, for `must-understand`.
    static let understood: Set<Int> = [200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 500, 501, 502, 503, 504]

    func save(_ entry: CachedResponse, context: MiddlewareContext) async {
        do {
            try await cache.storage.store(entry)
        } catch {
            context.fields.logger?.debug("the HTTP cache could not store a response", metadata: ["callsign.error": "\(error)"])
        }
    }

    /// After a successful unsafe request: the target URL and same-origin `Location` /
    /// `Content-Location` are no longer trusted (RFC 9111 §4.4).
    func invalidate(after response: Response, context: MiddlewareContext) async {
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
                try await cache.storage.removeEntries(url: context.fields.redaction.redact(url: url.absoluteString))
            } catch {
                context.fields.logger?.debug("the HTTP cache could not invalidate an entry", metadata: ["callsign.error": "\(error)"])
            }
        }
    }
}
