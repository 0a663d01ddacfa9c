import Foundation
import HTTPTypes

/// The ``HTTPCache`` stage (``MiddlewareStage/cache``): answers from storage, revalidates,
/// stores and invalidates. In the chain only when the client has a cache.
struct CacheStage: Middleware {
    let cache: HTTPCache
    let factory: RequestFactory

    /// Statuses a response may be stored with on heuristic freshness alone (RFC 9110 §15.1);
    /// 206 is stored only in answer to a range request (CacheStage+Ranges.swift).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]
    /// Request fields that take a request past the cache: the preconditions RFC 9111 §4.3.2
    /// leaves to the origin. A caller's `If-None-Match` and `If-Modified-Since` are answered from
    /// storage instead, and a single byte `Range` (with its `If-Range`) from what is stored.
    private static let passedThrough = ["If-Match", "If-Unmodified-Since"]
    /// 304 fields that do not replace the stored ones (RFC 9111 §3.2).
    static let keptOn304: Set<HTTPField.Name> = [.contentLength, .contentEncoding, .transferEncoding, .contentRange]

    /// One cacheable request: its key and the request facts the cache rules read.
    struct Lookup: Sendable {
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
        guard case .memory = context.fields.bodyReading else { return try await next(request) }
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
        if Self.passedThrough.contains(where: headers.contains) { return try await next(request) }
        let digestKey: Data
        do {
            digestKey = try await cache.storage.partitionKey()
        } catch {
            context.fields.logger?.debug("the HTTP cache has no partition key; the call goes to the network", metadata: ["callsign.error": "\(error)"])
            return try await next(request)
        }
        let key = Self.key(
            url: prepared.url, headers: headers, method: request.method, redaction: context.fields.redaction,
            digestKey: digestKey)
        let lookup = Lookup(
            request: request, probe: probe, key: key, headers: headers, requestControl: CacheControl(headers["Cache-Control"]),
            policy: request.cachePolicy ?? .useProtocol)
        return try await answer(lookup, context: context, next: next)
    }

    /// Serves a stored response when the rules allow, else goes to the network (revalidating
    /// what is stored) and stores what may be stored. A caller's own `If-None-Match` or
    /// `If-Modified-Since` is answered with a `304` when what would be served matches it.
    private func answer(_ lookup: Lookup, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let response: Response
        if let asked = lookup.headers["Range"] {
            // One byte range is answered from storage when it can be; anything else is the origin's.
            guard let range = ByteRange(header: asked) else { return try await next(lookup.request) }
            response = try await answerRange(range, lookup: lookup, context: context, next: next)
        } else {
            response = try await answerUnconditionally(lookup, context: context, next: next)
        }
        return Self.answeringCallerConditional(response, requestHeaders: lookup.headers)
    }

    private func answerUnconditionally(_ lookup: Lookup, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let onlyIfCached = lookup.policy == .cacheOnly || lookup.requestControl.has("only-if-cached")
        var stored: CachedResponse?
        if lookup.policy != .reloadIgnoringCache {
            stored = await self.lookup(lookup.key, requestHeaders: lookup.headers, context: context)
            if stored == nil, lookup.request.method == .head {
                stored = await self.lookup(lookup.key.with(method: "GET"), requestHeaders: lookup.headers, context: context)
            }
            // A stored part answers ranges only; the whole representation comes from the origin.
            if stored?.status == 206 { stored = nil }
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
        let wantsValidation = Self.wantsValidation(storedControl: storedControl, lookup: lookup)
        if !wantsValidation, state.satisfies(lookup.requestControl, storedControl: storedControl) {
            return serve(stored, age: state.age, for: lookup.probe, source: .cache)
        }
        if onlyIfCached {
            throw APIError(.cacheMiss, localized: "the stored response is stale and only-if-cached forbids the network", request: lookup.probe)
        }
        if !wantsValidation, Self.mayServeWhileRevalidating(state: state, storedControl: storedControl, requestControl: lookup.requestControl) {
            // RFC 5861 §3: the stale response now, one revalidation in the background however
            // many callers ask in the meantime.
            startBackgroundRevalidation(of: stored, lookup: lookup, context: context, next: next)
            return serve(stored, age: state.age, for: lookup.probe, source: .staleWhileRevalidating)
        }
        return try await revalidate(stored, state: state, storedControl: storedControl, lookup: lookup, context: context, next: next)
    }

    /// Whether the origin must be asked before `stored` is served, fresh or not: `no-cache` from
    /// either side, or a request's `Pragma: no-cache` without `Cache-Control` (RFC 9111 §5.4).
    static func wantsValidation(storedControl: CacheControl, lookup: Lookup) -> Bool {
        storedControl.noCache || lookup.requestControl.noCache
            || (lookup.headers["Cache-Control"] == nil && lookup.headers["Pragma"]?.lowercased().contains("no-cache") == true)
    }

    /// Whether RFC 5861's `stale-while-revalidate` lets a stale response be served now: within
    /// its window, and nothing in the stored or the request's directives asks for a fresh one.
    static func mayServeWhileRevalidating(state: Freshness, storedControl: CacheControl, requestControl: CacheControl) -> Bool {
        guard let window = storedControl.seconds("stale-while-revalidate"), !storedControl.has("must-revalidate"),
            requestControl.seconds("max-age") == nil, requestControl.seconds("min-fresh") == nil
        else { return false }
        return state.staleness <= TimeInterval(window)
    }

    /// Revalidates `stored` off the caller's path, once per stored response at a time.
    private func startBackgroundRevalidation(of stored: CachedResponse, lookup: Lookup, context: MiddlewareContext, next: MiddlewareNext) {
        let identity = [stored.url, stored.partition, stored.method, stored.varyingHeaders.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")]
            .joined(separator: "\n")
        let stage = self
        cache.revalidations.startOnce(identity) {
            let conditional = Self.conditional(lookup.request, validatedBy: stored)
            let requestTime = Date()
            do {
                let response = try await next(conditional)
                if response.status.code == 304, Self.selects(notModified: response.headers, stored: stored.headers) {
                    _ = await stage.refresh(stored, with: response, requestTime: requestTime, lookup: lookup, context: context)
                } else if response.status.code != 304 {
                    await stage.storeIfAllowed(response, lookup: lookup, requestTime: requestTime, context: context)
                }
            } catch {
                context.fields.logger?.debug("the HTTP cache could not revalidate in the background", metadata: ["callsign.error": "\(error)"])
            }
        }
    }

    /// Asks with the stored validators: a matching 304 refreshes the stored response; an
    /// unreachable server or a 5xx may serve it stale; anything else replaces it.
    private func revalidate(
        _ stored: CachedResponse, state: Freshness, storedControl: CacheControl, lookup: Lookup, context: MiddlewareContext,
        next: MiddlewareNext
    ) async throws -> Response {
        let conditional = Self.conditional(lookup.request, validatedBy: stored)
        let requestTime = Date()
        let response: Response
        do {
            response = try await next(conditional)
        } catch let error as APIError {
            if error.isUnreachable,
                mayServeStale(
                    stored, state: state, storedControl: storedControl, requestControl: lookup.requestControl, offline: true,
                    servesStaleWhenOffline: lookup.request.servesStaleWhenOffline)
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

    /// `request` asking whether `stored` is still current: the stored validators, and none of the
    /// caller's own (those are answered from the result, never sent for the cache's entry).
    static func conditional(_ request: Request, validatedBy stored: CachedResponse) -> Request {
        var conditional = request
        conditional.headers.remove("If-None-Match")
        conditional.headers.remove("If-Modified-Since")
        if let etag = stored.headers[.eTag] { conditional.headers["If-None-Match"] = etag }
        if let lastModified = stored.headers[.lastModified] { conditional.headers["If-Modified-Since"] = lastModified }
        return conditional
    }

    /// A stored response updated by a 304's fields (RFC 9111 §3.2), saved and served. The 304's
    /// `Set-Cookie` reaches the caller (and the cookie jar), never storage.
    func refresh(
        _ stored: CachedResponse, with response: Response, requestTime: Date, lookup: Lookup, context: MiddlewareContext
    ) async -> Response {
        let refreshed = Self.freshened(stored, by: response.headers, requestTime: requestTime)
        if !CacheControl(refreshed.headers[.cacheControl]).has("no-store"), !lookup.requestControl.has("no-store") {
            await save(refreshed, context: context)
        }
        let age = Freshness(entry: refreshed, now: refreshed.responseTime, heuristicLimit: cache.maximumHeuristicFreshness).age
        var served = serve(refreshed, age: age, for: response.request, source: .revalidated)
        served.headers.append(contentsOf: response.headers.filter { $0.name == .setCookie })
        served.duration = response.duration
        return served
    }

    /// `stored` with the fields of a 304 or a HEAD answer (RFC 9111 §3.2, §4.3.5): every field
    /// it sends replaces the stored one, except the hop-by-hop ones, `Set-Cookie` and those that
    /// describe the stored body. The validation restarts its age: an `Age` it does not repeat
    /// goes, and without a `Date` the time it arrived is recorded (RFC 9110 §6.6.1).
    static func freshened(_ stored: CachedResponse, by fields: HTTPFields, requestTime: Date) -> CachedResponse {
        var refreshed = stored
        let updates = HopByHop.removed(from: fields).filter { !keptOn304.contains($0.name) && !isSetCookie($0.name) }
        for name in Set(updates.map(\.name)) { refreshed.headers[name] = nil }
        refreshed.headers.append(contentsOf: updates)
        refreshed.requestTime = requestTime
        refreshed.responseTime = Date()
        if fields[.age] == nil { refreshed.headers[.age] = nil }
        if fields[.date] == nil { refreshed.headers[.date] = HTTPDate.format(refreshed.responseTime) }
        return refreshed
    }

    /// `Set-Cookie` and the obsolete `Set-Cookie2`: credentials, never stored.
    static func isSetCookie(_ name: HTTPField.Name) -> Bool {
        name == .setCookie || name.canonicalName == "set-cookie2"
    }

    /// Whether a 304 selects the stored response the request was conditional on: a validator it
    /// names must be the stored one — a strong or weak `ETag`, else `Last-Modified`. A 304 with
    /// no validator selects it: the request named this one response's validators alone, and
    /// RFC 9110 §15.4.5 asks a server to repeat them (browsers and the Fetch standard apply such
    /// a 304). Only a 304 naming another representation updates nothing (RFC 9111 §4.3.4).
    static func selects(notModified: HTTPFields, stored: HTTPFields) -> Bool {
        if let tag = notModified[values: .eTag].first { return stored[values: .eTag].first == tag }
        if let modified = notModified[.lastModified] { return stored[.lastModified] == modified }
        return true
    }

    // MARK: - Reading

    func lookup(_ key: Key, requestHeaders: Headers, context: MiddlewareContext) async -> CachedResponse? {
        let candidates: [CachedResponse]
        do {
            candidates = try await cache.storage.entries(url: key.url, partition: key.partition, method: key.method)
        } catch {
            context.fields.logger?.debug("the HTTP cache could not be read", metadata: ["callsign.error": "\(error)"])
            return nil
        }
        return candidates.first { entry in
            // A row from storage is outside data: a status HTTPTypes cannot hold is no entry.
            guard (100...999).contains(entry.status) else { return false }
            let names = Self.varyNames(entry.headers)
            return !names.contains("*") && Self.varyingValues(names, in: requestHeaders, key: key) == entry.varyingHeaders
        }
    }

    func serve(_ entry: CachedResponse, age: TimeInterval, for request: Request, source: ResponseSource) -> Response {
        var headers = entry.headers
        headers[.age] = String(min(Int(saturating: max(0, age)), DeltaSeconds.maximum))
        var response = Response(
            request: request, status: HTTPResponse.Status(code: entry.status), headers: headers,
            body: request.method == .head ? Data() : entry.body)
        response.source = source
        return response
    }

    /// - Parameter servesStaleWhenOffline: the request's own choice, over the cache's.
    func mayServeStale(
        _ entry: CachedResponse, state: Freshness, storedControl: CacheControl, requestControl: CacheControl, offline: Bool,
        servesStaleWhenOffline: Bool? = nil
    ) -> Bool {
        guard !storedControl.has("must-revalidate"), !storedControl.noCache else { return false }
        if offline && (servesStaleWhenOffline ?? cache.servesStaleWhenOffline) { return true }
        let allowance = storedControl.seconds("stale-if-error") ?? requestControl.seconds("stale-if-error")
        guard let allowance else { return false }
        return state.staleness <= TimeInterval(allowance)
    }

}
