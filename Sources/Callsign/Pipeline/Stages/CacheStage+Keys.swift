import Foundation
import HTTPTypes

extension CacheStage {
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

    /// The request's values for the `Vary` names; secret ones as keyed digests, so none reach
    /// storage. Values that mean the same are stored the same (RFC 9111 §4.1 lets a cache
    /// normalise them): whitespace around commas and at the ends never counts, and
    /// `Accept-Language` ignores case and the order of its members.
    static func varyingValues(_ names: [String], in headers: Headers, key: Key) -> [String: String] {
        var values: [String: String] = [:]
        for name in names {
            let lines = headers.fields.filter { $0.name.lowercased() == name }.map(\.value)
            var members = lines.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            if name == "accept-language" { members = members.map { $0.lowercased() }.sorted() }
            // An absent header differs from an empty one.
            let value = lines.isEmpty ? "" : "=" + members.joined(separator: ",")
            values[name] = key.redaction.isSecretHeader(name) && !members.isEmpty ? "hmac:" + Digest.hmacHex(key: key.digestKey, value) : value
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
        let ageValue = AgeField.parse(headers).map(TimeInterval.init) ?? 0
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
