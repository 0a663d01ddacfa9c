import Foundation
import HTTPTypes

// Range requests (RFC 9110 §14, RFC 9111 §3.3 and §3.4): a stored complete response answers a
// range it covers with a 206; a 206 from the origin is stored as a partial response and answers
// later ranges inside it; two partial responses of one representation (the same strong ETag)
// are combined, and once they cover it whole they are stored as the complete response.
extension CacheStage {
    /// One byte range a request asks for (RFC 9110 §14.1.2).
    enum ByteRange: Equatable {
        /// `first-last` or `first-` (to the end).
        case from(Int64, through: Int64?)
        /// `-count`: the last `count` bytes.
        case suffix(Int64)

        /// `Range: bytes=…` with exactly one range; `nil` for several, another unit or a malformed one
        /// (those go to the origin untouched).
        init?(header: String) {
            let text = header.trimmingCharacters(in: .whitespaces)
            guard text.lowercased().hasPrefix("bytes="), !text.contains(",") else { return nil }
            let spec = text.dropFirst(6).trimmingCharacters(in: .whitespaces)
            guard let dash = spec.firstIndex(of: "-") else { return nil }
            let first = spec[..<dash], last = spec[spec.index(after: dash)...]
            if first.isEmpty {
                guard let count = ContentLength.digits(last), count > 0 else { return nil }
                self = .suffix(count)
                return
            }
            guard let start = ContentLength.digits(first) else { return nil }
            if last.isEmpty {
                self = .from(start, through: nil)
                return
            }
            guard let end = ContentLength.digits(last), end >= start else { return nil }
            self = .from(start, through: end)
        }

        /// The bytes it names of a representation `length` long, or `nil` when it names none
        /// (unsatisfiable: the origin answers that).
        func resolved(length: Int64) -> ClosedRange<Int64>? {
            guard length > 0 else { return nil }
            switch self {
            case .from(let start, let end):
                guard start < length else { return nil }
                return start...min(end ?? length - 1, length - 1)
            case .suffix(let count):
                return max(0, length - count)...(length - 1)
            }
        }
    }

    /// `Content-Range: bytes first-last/length` with a known length (the one field reader,
    /// ``ContentRange``, which downloads use too).
    static func contentRange(_ value: String?) -> (range: ClosedRange<Int64>, length: Int64)? {
        guard let parsed = ContentRange(value), let length = parsed.total else { return nil }
        return (parsed.start...parsed.end, length)
    }

    /// The bytes of its representation a stored response holds, and the representation's length.
    static func held(by entry: CachedResponse) -> (range: ClosedRange<Int64>, length: Int64)? {
        switch entry.status {
        case 200:
            // Only a body stored as it came (its Content-Length, no coding): one decoded below
            // the cache is not the representation a byte range counts in.
            let length = Int64(entry.body.count)
            guard length > 0, entry.headers[.contentEncoding] == nil,
                entry.headers[.contentLength].flatMap({ ContentLength.digits($0) }) == length
            else { return nil }
            return (0...(length - 1), length)
        case 206:
            guard let held = contentRange(entry.headers[.contentRange]), held.range.count == entry.body.count else { return nil }
            return held
        default:
            return nil
        }
    }

    /// A strong entity tag (not `W/`), which alone lets two parts be combined (RFC 9110 §8.8.3.2).
    static func strongTag(_ fields: HTTPFields) -> String? {
        guard let tag = fields[values: .eTag].first, !tag.hasPrefix("W/") else { return nil }
        return tag
    }

    /// Whether an `If-Range` lets the range be served from `entry` (RFC 9110 §13.1.5): no
    /// `If-Range`, its strong entity tag, or its exact `Last-Modified` date.
    static func ifRangeAllows(_ ifRange: String?, entry: CachedResponse) -> Bool {
        guard let ifRange = ifRange?.trimmingCharacters(in: .whitespaces) else { return true }
        if ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") { return !ifRange.hasPrefix("W/") && strongTag(entry.headers) == ifRange }
        return entry.headers[.lastModified] == ifRange
    }

    /// A `Range` request: answered from storage when a fresh stored response covers the range,
    /// else sent on; a `206` that comes back is stored (and combined), a `200` stored as usual.
    func answerRange(_ range: ByteRange, lookup: Lookup, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        guard lookup.request.method == .get, lookup.policy != .reloadIgnoringCache else { return try await next(lookup.request) }
        let stored = await self.lookup(lookup.key, requestHeaders: lookup.headers, context: context)
        if let stored, let held = Self.held(by: stored) {
            let state = Freshness(entry: stored, now: Date(), heuristicLimit: cache.maximumHeuristicFreshness, lifetime: lookup.policy.freshness)
            let storedControl = CacheControl(stored.headers[.cacheControl])
            let fresh = !Self.wantsValidation(storedControl: storedControl, lookup: lookup)
                && state.satisfies(lookup.requestControl, storedControl: storedControl)
            if fresh {
                if !Self.ifRangeAllows(lookup.headers["If-Range"], entry: stored) {
                    // The representation the caller holds changed: the whole one, as the origin would.
                    if stored.status == 200 { return serve(stored, age: state.age, for: lookup.probe, source: .cache) }
                } else if let wanted = range.resolved(length: held.length), held.range.contains(wanted.lowerBound),
                    held.range.contains(wanted.upperBound)
                {
                    return servePart(wanted, of: stored, held: held, age: state.age, for: lookup.probe)
                }
            }
        }
        let requestTime = Date()
        let response = try await next(lookup.request)
        switch response.status.code {
        case 206: await storePart(response, stored: stored, lookup: lookup, requestTime: requestTime, context: context)
        case 200: await storeIfAllowed(response, lookup: lookup, requestTime: requestTime, context: context)
        default: break
        }
        return response
    }

    /// The bytes `wanted` of a stored response as a `206` with its `Content-Range`.
    private func servePart(
        _ wanted: ClosedRange<Int64>, of entry: CachedResponse, held: (range: ClosedRange<Int64>, length: Int64), age: TimeInterval,
        for request: Request
    ) -> Response {
        var part = entry
        let start = entry.body.startIndex + Int(wanted.lowerBound - held.range.lowerBound)
        part.body = entry.body[start..<(start + Int(wanted.count))]
        part.status = 206
        part.headers[.contentRange] = "bytes \(wanted.lowerBound)-\(wanted.upperBound)/\(held.length)"
        part.headers[.contentLength] = String(wanted.count)
        return serve(part, age: age, for: request, source: .cache)
    }

    /// Stores a single-part `206` with a strong entity tag and a known length (RFC 9111 §3.3),
    /// combined with the stored part of the same representation when the two touch (§3.4);
    /// parts that cover the representation whole become the complete `200`. A stored complete
    /// response of that representation is kept as it is.
    private func storePart(_ response: Response, stored: CachedResponse?, lookup: Lookup, requestTime: Date, context: MiddlewareContext) async {
        guard let tag = Self.strongTag(response.headers), response.headers[.contentEncoding] == nil,
            let arrived = Self.contentRange(response.headers[.contentRange]), arrived.range.count == response.body.count,
            var entry = storable(
                response, key: lookup.key, requestHeaders: lookup.headers, requestControl: lookup.requestControl, requestTime: requestTime,
                partial: true)
        else { return }
        var range = arrived.range
        if let stored, Self.strongTag(stored.headers) == tag, let held = Self.held(by: stored), held.length == arrived.length {
            if stored.status == 200 { return }
            // Overlapping or adjacent: one part. Otherwise the newer part replaces the older.
            if held.range.lowerBound <= range.upperBound + 1, range.lowerBound <= held.range.upperBound + 1 {
                let union = min(held.range.lowerBound, range.lowerBound)...max(held.range.upperBound, range.upperBound)
                var body = Data(count: Int(union.count))
                body.replaceSubrange(
                    Int(held.range.lowerBound - union.lowerBound)..<Int(held.range.upperBound - union.lowerBound + 1), with: stored.body)
                body.replaceSubrange(
                    Int(range.lowerBound - union.lowerBound)..<Int(range.upperBound - union.lowerBound + 1), with: response.body)
                entry.body = body
                range = union
            }
        }
        if range.count == arrived.length {
            entry.status = 200
            entry.headers[.contentRange] = nil
        } else {
            entry.headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(arrived.length)"
        }
        entry.headers[.contentLength] = String(entry.body.count)
        await save(entry, context: context)
    }
}
