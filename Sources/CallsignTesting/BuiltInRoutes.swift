import Callsign
import Foundation

/// The httpbin-style routes, the envelope routes and the scripted misbehaviour.
enum BuiltInRoutes {
    static func respond(to request: ServerRequest) async -> ServerResponse {
        let segments = request.pathSegments
        guard let first = segments.first else {
            return .json(["service": "Callsign test server", "routes": .array(routeList.map { .string($0) })])
        }
        switch first {
        case "get":
            guard request.method == "GET" || request.method == "HEAD" else { return methodNotAllowed(request) }
            return .json(echo(request))
        case "post", "put", "patch", "delete":
            guard request.method.lowercased() == first else { return methodNotAllowed(request) }
            return .json(echo(request))
        case "anything":
            return .json(echo(request))
        case "headers":
            return .json(["headers": headerObject(request)])
        case "json":
            return .json([
                "slideshow": [
                    "title": "Sample Slide Show", "author": "Yours Truly",
                    "slides": [["title": "Wake up to WonderWidgets!", "type": "all"], ["title": "Overview", "type": "all"]],
                ]
            ])
        case "status":
            return status(segments.count > 1 ? segments[1] : "")
        case "delay":
            let asked = Double(segments.count > 1 ? segments[1] : "0") ?? 0
            let seconds = asked.isFinite ? min(max(asked, 0), 30) : 0
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            return .json(echo(request))
        case "redirect":
            let count = Int(segments.count > 1 ? segments[1] : "1") ?? 1
            let location = count <= 1 ? "/get" : "/redirect/\(count - 1)"
            return ServerResponse(status: 302, headers: [("Location", location)])
        case "redirect-to":
            let status = Int(request.query("status_code") ?? "302") ?? 302
            return ServerResponse(status: (300...399).contains(status) ? status : 302, headers: [("Location", request.query("url") ?? "/get")])
        case "basic-auth":
            return basicAuth(request, segments: segments)
        case "bytes":
            return bytes(request, segments: segments)
        case "envelope":
            return envelope(request, segments: segments)
        case "misbehave":
            return misbehave(request, segments: segments)
        case "gzip", "deflate", "compressed":
            return Compression.respond(to: request, segments: segments)
        case "upload":
            let received = request.streamedBody ?? (0, 0)
            return .json(["bytes": .int(received.bytes), "crc32": .int(Int(received.crc32)), "contentType": .string(request.header("Content-Type") ?? "")])
        case "cache":
            return CacheRoutes.respond(to: request, segments: Array(segments.dropFirst()))
        case "demo":
            return DemoAPI.respond(to: request, segments: Array(segments.dropFirst()))
        default:
            return .json(["error": "no route for \(request.rawPath)"], status: 404)
        }
    }

    static let routeList = [
        "/get", "/anything/{anything}", "/post", "/put", "/patch", "/delete", "/headers", "/json", "/status/{code}",
        "/delay/{seconds}", "/redirect/{n}", "/redirect-to?url=&status_code=", "/basic-auth/{user}/{password}",
        "/bytes/{n}", "/envelope/{ok|list|error|custom}", "/misbehave/{slow-body|reset|truncated|wrong-content-type|retry-after|close}",
        "/upload/{anything} (counted and checksummed, not kept)", "/gzip", "/deflate", "/compressed/{raw-deflate|stacked|too-many|bomb|truncated|corrupt}", "/cache/{etag|last-modified|max-age|no-store|vary|private|stale-if-error|status}/…", "/demo/…",
    ]

    /// `/bytes/{n}`: `n` deterministic bytes with a strong ETag and a Last-Modified, honouring
    /// `Range: bytes=S-` (with `If-Range`). For resume tests: `?etag=X` changes the validator,
    /// `?truncate=N` cuts an answer to a request without `Range` after N bytes, `?ignore-range=1` answers 200 to a range,
    /// `?bad-range=1` answers a range from the wrong offset.
    static func bytes(_ request: ServerRequest, segments: [String]) -> ServerResponse {
        let count = Int(segments.count > 1 ? segments[1] : "0") ?? 0
        guard (0...(1 << 31)).contains(count) else { return .json(["error": "count must be 0...2147483648"], status: 400) }
        let etag = "\"\(request.query("etag") ?? "bytes-\(count)")\""
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "application/octet-stream"), ("ETag", etag), ("Accept-Ranges", "bytes"),
            ("Last-Modified", HTTPDate.format(CacheRoutes.lastModified)),
        ]
        if let range = request.header("Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
            let start = Int(range.dropFirst(6).dropLast()), start < count, request.query("ignore-range") == nil,
            request.header("If-Range").map({ $0 == etag }) ?? true
        {
            let from = request.query("bad-range") == nil ? start : 0
            headers.append(("Content-Range", "bytes \(from)-\(count - 1)/\(count)"))
            return ServerResponse(status: 206, headers: headers, body: .generatedRange(offset: from, count: count - from))
        }
        let response = ServerResponse(status: 200, headers: headers, body: .generated(count: count))
        if request.header("Range") == nil, let cut = request.query("truncate").flatMap(Int.init) {
            return response.with(.truncate(afterBodyBytes: cut))
        }
        return response
    }

    static func methodNotAllowed(_ request: ServerRequest) -> ServerResponse {
        .json(["error": "method \(request.method) not allowed on \(request.rawPath)"], status: 405)
    }

    // MARK: - Echo

    /// What the server received, as JSON: method, URL, path, raw query, decoded arguments,
    /// headers, body text, and the body parsed as JSON, form or multipart where it is one.
    static func echo(_ request: ServerRequest) -> JSONValue {
        var object: [String: JSONValue] = [
            "method": .string(request.method),
            "url": .string(request.serverURL.absoluteString.dropLast() + request.uri),
            "path": .string(request.rawPath.removingPercentEncoding ?? request.rawPath),
            "rawPath": .string(request.rawPath),
            "query": request.rawQuery.map { .string($0) } ?? .null,
            "args": .object(grouped(request.queryItems)),
            "headers": headerObject(request),
            "data": .string(String(decoding: request.body, as: UTF8.self)),
            "bodySize": .int(request.body.count),
        ]
        let contentType = request.header("Content-Type")?.lowercased() ?? ""
        object["json"] = (try? JSONValue(parsing: request.body)) ?? .null
        if contentType.hasPrefix("application/x-www-form-urlencoded") {
            object["form"] = .object(grouped(ServerRequest.decodeForm(String(decoding: request.body, as: UTF8.self))))
        }
        if contentType.hasPrefix("multipart/form-data"), let boundary = boundary(of: contentType) {
            object["multipart"] = .array(multipartParts(request.body, boundary: boundary))
        }
        return .object(object)
    }

    static func grouped(_ items: [(name: String, value: String)]) -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        for item in items {
            switch result[item.name] {
            case nil: result[item.name] = .string(item.value)
            case .array(var values)?:
                values.append(.string(item.value))
                result[item.name] = .array(values)
            case let existing?: result[item.name] = .array([existing, .string(item.value)])
            }
        }
        return result
    }

    static func headerObject(_ request: ServerRequest) -> JSONValue {
        var result: [String: JSONValue] = [:]
        for (name, value) in request.headers {
            if let existing = result[name]?.stringValue {
                result[name] = .string(existing + ", " + value)
            } else {
                result[name] = .string(value)
            }
        }
        return .object(result)
    }

    static func boundary(of contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces) == "boundary" {
                return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
            }
        }
        return nil
    }

    /// Splits a multipart body into parts, reporting each part's headers as sent (names and
    /// filenames are not unescaped, so a test sees exactly what went over the wire).
    static func multipartParts(_ body: Data, boundary: String) -> [JSONValue] {
        let delimiter = Data("--\(boundary)".utf8)
        var parts: [JSONValue] = []
        var searchStart = body.startIndex
        var ranges: [Range<Data.Index>] = []
        while let found = body.range(of: delimiter, in: searchStart..<body.endIndex) {
            ranges.append(found)
            searchStart = found.upperBound
        }
        for (current, next) in zip(ranges, ranges.dropFirst()) {
            var part = body[current.upperBound..<next.lowerBound]
            if part.starts(with: Data("\r\n".utf8)) { part = part.dropFirst(2) }
            if part.suffix(2) == Data("\r\n".utf8) { part = part.dropLast(2) }
            guard let split = part.range(of: Data("\r\n\r\n".utf8)) else { continue }
            let headerText = String(decoding: part[part.startIndex..<split.lowerBound], as: UTF8.self)
            let content = part[split.upperBound...]
            var object: [String: JSONValue] = ["size": .int(content.count)]
            for line in headerText.components(separatedBy: "\r\n") {
                let lower = line.lowercased()
                if lower.hasPrefix("content-disposition:") {
                    object["disposition"] = .string(String(line.dropFirst("content-disposition:".count)).trimmingCharacters(in: .whitespaces))
                    if let name = quotedParameter("name", in: line) { object["name"] = .string(name) }
                    if let filename = quotedParameter("filename", in: line) { object["filename"] = .string(filename) }
                } else if lower.hasPrefix("content-type:") {
                    object["contentType"] = .string(String(line.dropFirst("content-type:".count)).trimmingCharacters(in: .whitespaces))
                }
            }
            if let text = String(data: content, encoding: .utf8) { object["value"] = .string(text) }
            parts.append(.object(object))
        }
        return parts
    }

    static func quotedParameter(_ name: String, in line: String) -> String? {
        guard let range = line.range(of: "; \(name)=\"") else { return nil }
        let rest = line[range.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }

    // MARK: - Status, auth

    static func status(_ text: String) -> ServerResponse {
        guard let code = Int(text), (100...599).contains(code), code >= 200 else {
            return .json(["error": "status must be 200...599"], status: 400)
        }
        var headers: [(name: String, value: String)] = []
        if (300...399).contains(code) && code != 304 { headers.append(("Location", "/get")) }
        if code == 401 { headers.append(("WWW-Authenticate", "Basic realm=\"Fake Realm\"")) }
        if code == 429 || code == 503 { headers.append(("Retry-After", "1")) }
        return ServerResponse(status: code, headers: headers)
    }

    static func basicAuth(_ request: ServerRequest, segments: [String]) -> ServerResponse {
        guard segments.count >= 3 else { return .json(["error": "use /basic-auth/{user}/{password}"], status: 400) }
        let expected = Data("\(segments[1]):\(segments[2])".utf8).base64EncodedString()
        if let header = request.header("Authorization"), header == "Basic \(expected)" {
            return .json(["authenticated": true, "user": .string(segments[1])])
        }
        return ServerResponse(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"Fake Realm\"")])
    }

    // MARK: - Envelopes

    static func envelope(_ request: ServerRequest, segments: [String]) -> ServerResponse {
        switch segments.count > 1 ? segments[1] : "ok" {
        case "ok":
            return .json(["code": 0, "msg": "", "data": ["id": 1, "name": "Ann"]])
        case "list":
            return .json(["errcode": 0, "errmsg": "ok", "ret": [["id": 1, "name": "Ann"], ["id": 2, "name": "Bo"]]])
        case "error":
            return .json(["errcode": 4001, "errmsg": "token expired"])
        case "custom":
            let codeKey = request.query("codeKey") ?? "code"
            let messageKey = request.query("msgKey") ?? "msg"
            let payloadKey = request.query("payloadKey") ?? "data"
            let code: JSONValue = request.query("code").flatMap { Int($0) }.map { .int($0) } ?? .int(0)
            return .json([
                codeKey: code, messageKey: .string(request.query("message") ?? ""),
                payloadKey: ["id": 7, "name": "Custom"],
            ])
        default:
            return .json(["error": "unknown envelope"], status: 404)
        }
    }

    // MARK: - Misbehaviour

    static func misbehave(_ request: ServerRequest, segments: [String]) -> ServerResponse {
        let bytes = Int(request.query("bytes") ?? "") ?? 10
        switch segments.count > 1 ? segments[1] : "" {
        case "slow-body":
            let interval = Int(request.query("interval_ms") ?? "") ?? 1000
            return ServerResponse(headers: [("Content-Type", "application/octet-stream")], body: .generated(count: bytes))
                .with(.drip(chunk: 1, every: .milliseconds(interval)))
        case "reset":
            let after = Int(request.query("after") ?? "") ?? 5
            return ServerResponse(headers: [("Content-Type", "application/octet-stream")], body: .generated(count: max(bytes, after + 1)))
                .with(.reset(afterBodyBytes: after))
        case "truncated":
            let after = Int(request.query("after") ?? "") ?? 5
            return ServerResponse(headers: [("Content-Type", "application/octet-stream")], body: .generated(count: max(bytes, after + 1)))
                .with(.truncate(afterBodyBytes: after))
        case "wrong-content-type":
            return .text("{\"id\": 1, \"name\": \"Ann\"}", contentType: "text/html; charset=utf-8")
        case "retry-after":
            let status = Int(request.query("status") ?? "") ?? 503
            return .json(
                ["error": "try again later"], status: status, headers: [("Retry-After", request.query("after") ?? "1")])
        case "close":
            return ServerResponse(behaviour: .closeWithoutResponse)
        default:
            return .json(["error": "unknown misbehaviour"], status: 404)
        }
    }
}
