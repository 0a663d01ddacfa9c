import Callsign
import CallsignTesting
import Foundation
import Testing

/// A HAR archive around `entries` (each the JSON text of one entry), as another tool writes it.
private func archive(_ entries: [String], log extra: String = "") -> Data {
    Data(
        """
        {"log": {"version": "1.2", "creator": {"name": "tool", "version": "1"}\(extra), "entries": [\(entries.joined(separator: ",\n"))]}}
        """.utf8)
}

/// One entry: a GET of `url` answered with `status` and `content`, the rest as the caller says.
private func harEntry(
    _ url: String, status: Int = 200, headers: String = #"[{"name": "Content-Type", "value": "application/json"}]"#,
    content: String = #"{"size": 11, "mimeType": "application/json", "text": "{\"ok\":true}"}"#,
    request extra: String = "", response responseExtra: String = "", timings: String = #"{"send": 0, "wait": 1, "receive": 0}"#,
    entry entryExtra: String = ""
) -> String {
    """
    {"startedDateTime": "2026-01-01T00:00:00.000Z", "time": 1\(entryExtra),
     "request": {"method": "GET", "url": "\(url)", "httpVersion": "HTTP/1.1", "cookies": [], "headers": [], "queryString": [],
                 "headersSize": -1, "bodySize": 0\(extra)},
     "response": {"status": \(status), "statusText": "", "httpVersion": "HTTP/1.1", "cookies": [], "headers": \(headers),
                  "content": \(content), "redirectURL": "", "headersSize": -1, "bodySize": -1\(responseExtra)},
     "cache": {}, "timings": \(timings)}
    """
}

/// A client that answers only from `replay`.
private func replaying(_ replay: HARReplay) -> APIClient {
    APIClient(configuration: .init { $0.retry = .none; $0.mocks = Mocks(replaying: replay) })
}

/// The value of a response's field, by name in any case.
func responseField(_ response: Response?, _ name: String) -> String? {
    response?.headers.first { $0.name.canonicalName == name.lowercased() }?.value
}

@Suite("HAR archives from other tools", .hangGuard)
struct HARInteropTests {
    @Test("a Playwright archive loads: timings without blocked, dns, connect or ssl; postData with params and no text; _ members")
    func playwright() async throws {
        let post = """
            {"startedDateTime": "2026-01-01T00:00:00.000Z", "time": 3.5, "_frameref": "frame@1", "_monotonicTime": 12.3,
             "request": {"method": "POST", "url": "https://api.example.test/login", "httpVersion": "HTTP/1.1", "cookies": [],
                         "headers": [{"name": "Content-Type", "value": "application/x-www-form-urlencoded"}], "queryString": [],
                         "postData": {"mimeType": "application/x-www-form-urlencoded", "params": [{"name": "user", "value": "ann"}]},
                         "headersSize": -1, "bodySize": 8},
             "response": {"status": 201, "statusText": "Created", "httpVersion": "HTTP/1.1", "cookies": [],
                          "headers": [{"name": "Content-Type", "value": "text/plain"}],
                          "content": {"size": 7, "mimeType": "text/plain", "text": "created", "_sha1": "x"},
                          "redirectURL": "", "headersSize": -1, "bodySize": -1, "_transferSize": -1, "_failureText": null},
             "cache": {}, "timings": {"send": 0.1, "wait": 2, "receive": 1.4}, "pageref": "page@1", "serverIPAddress": "127.0.0.1",
             "_serverPort": 443, "_securityDetails": {"protocol": "TLS 1.3"}}
            """
        let get = harEntry(
            "https://api.example.test/me", timings: #"{"dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 1, "receive": 0}"#,
            entry: #", "_frameref": "frame@1""#)
        let replay = try HARReplay(data: archive([post, get], log: #", "browser": {"name": "chromium", "version": "120"}, "pages": []"#))
        #expect(replay.count == 2)
        #expect(replay.skippedEntries.isEmpty && replay.skippedEntryCount == 0)
        let client = replaying(replay)
        let created = try await client.post("https://api.example.test/login").body(Data("user=ann".utf8), contentType: "application/x-www-form-urlencoded").send()
        #expect(created.status.code == 201)
        #expect(created.body == Data("created".utf8))
        #expect(try await client.get("https://api.example.test/me").send().body == Data(#"{"ok":true}"#.utf8))
    }

    @Test("a Chrome archive loads: h2 versions, _ members, cookie objects, -1 sizes and timings, base64 bodies, a pseudo-header left out")
    func chrome() async throws {
        let image = harEntry(
            "https://cdn.example.test/dot.png",
            headers: #"[{"name": ":status", "value": "200"}, {"name": "content-type", "value": "image/png"}, {"name": "content-length", "value": "999"}]"#,
            content: #"{"size": 4, "mimeType": "image/png", "text": "iVBORw==", "encoding": "base64", "compression": 0}"#,
            request: #", "_initiator": {"type": "parser"}, "comment": """#,
            response: #", "_transferSize": 512, "_error": null, "comment": "from the network""#,
            timings: #"{"blocked": 0.5, "dns": -1, "ssl": -1, "connect": -1, "send": 0.1, "wait": 10.2, "receive": 0.3, "_blocked_queueing": 0.4}"#,
            entry: #", "_priority": "High", "_resourceType": "image", "connection": "443", "comment": """#)
            .replacingOccurrences(of: #""httpVersion": "HTTP/1.1""#, with: #""httpVersion": "h2""#)
            .replacingOccurrences(
                of: #""cookies": [], "headers": [], "queryString""#,
                with: #""cookies": [{"name": "sid", "value": "x", "path": "/", "domain": ".example.test", "expires": null, "httpOnly": true, "secure": true, "sameSite": "Lax"}], "headers": [{"name": ":authority", "value": "cdn.example.test"}], "queryString""#)
        let replay = try HARReplay(data: archive([image]))
        #expect(replay.count == 1 && replay.skippedEntries.isEmpty)
        let response = try await replaying(replay).get("https://cdn.example.test/dot.png").send()
        #expect(response.body == Data([0x89, 0x50, 0x4E, 0x47]))
        #expect(responseField(response, "Content-Type") == "image/png")
        // The archive's length is not the body's: the mock says the length of what it serves.
        #expect(responseField(response, "Content-Length") == "4")
        #expect(!response.headers.contains { $0.name.rawName.hasPrefix(":") })
    }

    @Test("a Firefox archive loads: redirectURL null, HTTP/2.0, comments, a blocked request (status 0) is skipped and named")
    func firefox() async throws {
        let redirect = harEntry(
            "https://www.example.test/old", status: 301,
            headers: #"[{"name": "Location", "value": "https://www.example.test/new"}]"#,
            content: #"{"size": 0, "mimeType": "text/html", "comment": "no body"}"#)
            .replacingOccurrences(of: #""redirectURL": """#, with: #""redirectURL": null"#)
            .replacingOccurrences(of: #""httpVersion": "HTTP/1.1""#, with: #""httpVersion": "HTTP/2.0""#)
        let blocked = harEntry("https://tracker.example.test/pixel", status: 0, content: #"{"size": 0, "mimeType": ""}"#)
            .replacingOccurrences(of: #""redirectURL": """#, with: #""redirectURL": null"#)
        let replay = try HARReplay(data: archive([redirect, blocked]), name: "firefox.har")
        #expect(replay.count == 1)
        #expect(replay.skippedEntryCount == 1)
        let skipped = try #require(replay.skippedEntries.first)
        #expect(skipped.number == 2)
        #expect(skipped.message.hasPrefix("entry 2 has no response (status 0)"), "\(skipped)")
        let client = APIClient(configuration: .init { $0.retry = .none; $0.redirects = .none; $0.mocks = Mocks(replaying: replay) })
        let moved = try await client.get("https://www.example.test/old").send()
        #expect(moved.status.code == 301)
        #expect(moved.body.isEmpty)
        #expect(responseField(moved, "Location") == "https://www.example.test/new")
    }

    @Test("Charles and Fiddler quirks: a comment on every object, content without text for an empty body, encoding \"\"")
    func charlesAndFiddler() async throws {
        let noContent = harEntry("https://api.example.test/ping", status: 204, headers: "[]", content: #"{"size": -1, "mimeType": "", "comment": ""}"#,
            response: #", "comment": "charles""#, entry: #", "comment": "charles""#)
        let plain = harEntry("https://api.example.test/text", headers: #"[{"name": "Content-Type", "value": "text/plain; charset=utf-8"}]"#,
            content: #"{"size": 6, "mimeType": "text/plain", "text": "héllo", "encoding": ""}"#)
        let replay = try HARReplay(data: archive([noContent, plain], log: #", "comment": "exported by Fiddler""#))
        #expect(replay.count == 2 && replay.skippedEntries.isEmpty)
        let client = replaying(replay)
        let ping = try await client.get("https://api.example.test/ping").send()
        #expect(ping.status.code == 204 && ping.body.isEmpty)
        #expect(try await client.get("https://api.example.test/text").send().body == Data("héllo".utf8))
    }

    @Test("one bad entry among good ones is skipped and named with its number and reason; the others are served")
    func oneBadAmongGood() async throws {
        let entries = [
            harEntry("https://api.example.test/a"),
            harEntry("https://api.example.test/unsaved", content: #"{"size": 5120, "mimeType": "application/javascript"}"#),
            harEntry("https://api.example.test/b", content: #"{"size": 2, "mimeType": "text/plain", "text": "!!", "encoding": "base64"}"#),
            harEntry("https://api.example.test/c", status: 5000),
            harEntry("https://api.example.test/d", content: #"{"size": 1, "mimeType": "text/plain", "text": "x", "encoding": "br"}"#),
            #"{"request": {"method": "GET"}, "response": {"status": 200}}"#,
            #"{"request": {"method": "GET", "url": "https://api.example.test/e"}, "response": {"status": "200"}}"#,
            harEntry("https://api.example.test/f", headers: "[" + (0..<600).map { #"{"name": "X-\#($0)", "value": "v"}"# }.joined(separator: ",") + "]"),
            harEntry("https://api.example.test/g"),
            harEntry("https://api.example.test/aborted", status: -1, content: #"{"size": -1, "mimeType": "x-unknown"}"#),
        ]
        let replay = try HARReplay(data: archive(entries), name: "mixed.har")
        #expect(replay.count == 2)
        #expect(replay.skippedEntryCount == 8)
        let messages = replay.skippedEntries.map(\.message)
        #expect(replay.skippedEntries.map(\.number) == [2, 3, 4, 5, 6, 7, 8, 10])
        #expect(messages[0] == "entry 2 has a response body of 5120 bytes that the archive does not hold (no content.text)")
        #expect(messages[1] == "entry 3 has a body marked base64 that is not valid base64")
        #expect(messages[2] == "entry 4 has status 5000, which is not an HTTP status (100–999)")
        #expect(messages[3] == "entry 5 has a body in the encoding \"br\"; a HAR body is text or base64")
        #expect(messages[4].hasPrefix("entry 6 cannot be read: the key \"url\" is missing at .request"), "\(messages[4])")
        #expect(messages[5].hasPrefix("entry 7 cannot be read: expected Int at .response.status"), "\(messages[5])")
        #expect(messages[6].hasPrefix("entry 8 has more than 500 header fields"), "\(messages[6])")
        // Playwright writes -1 for a request that got no answer.
        #expect(messages[7] == "entry 10 has no response (status -1): the request failed or was blocked when it was recorded")
        let client = replaying(replay)
        #expect(try await client.get("https://api.example.test/a").send().body == Data(#"{"ok":true}"#.utf8))
        #expect(try await client.get("https://api.example.test/g").send().body == Data(#"{"ok":true}"#.utf8))
        let missing = await apiError { _ = try await client.get("https://api.example.test/unsaved").send() }
        #expect(missing?.message.contains("no recorded exchange for GET") == true)
    }

    @Test("an archive none of whose entries can be replayed is one error naming them; one that is not HAR says so; an empty one loads")
    func nothingToReplay() throws {
        let error = #expect(throws: APIError.self) {
            try HARReplay(data: archive([harEntry("https://a.test/1", status: 0), harEntry("https://a.test/2", status: 42)]), name: "dead.har")
        }
        #expect(error?.code == .invalidDefinition)
        #expect(error?.message.hasPrefix("\"dead.har\": none of its 2 entries can be replayed: entry 1 has no response (status 0)") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("entry 2 has status 42") == true)
        for notHAR in [#"{"entries": []}"#, #"{"log": {"entries": {}}}"#, "[]", "not json", #"{"log": {"entries": [1, 2]}}"#] {
            let refused = #expect(throws: APIError.self) { try HARReplay(data: Data(notHAR.utf8), name: "x.har") }
            #expect(refused?.code == .invalidDefinition, "\(notHAR)")
            #expect(refused?.message.contains("\"x.har\"") == true, "\(notHAR): \(refused?.message ?? "")")
        }
        let empty = try HARReplay(data: archive([]))
        #expect(empty.count == 0 && empty.skippedEntries.isEmpty)
    }

    @Test("skipped entries past the listed maximum are counted, not listed")
    func manySkipped() throws {
        let bad = #"{"request": {"method": "GET", "url": "https://a.test/"}, "response": {"status": 0}}"#
        let good = harEntry("https://a.test/ok")
        let listed = HARReplay.maximumSkippedEntriesListed
        // Entries without a response, then entries that are not even objects: both kinds counted.
        let replay = try HARReplay(data: archive(Array(repeating: bad, count: 700) + Array(repeating: "1", count: listed) + [good]))
        #expect(replay.count == 1)
        #expect(replay.skippedEntryCount == 700 + listed)
        #expect(replay.skippedEntries.map(\.number) == Array(1...listed))
        #expect(replay.skippedEntries[699].message.hasPrefix("entry 700 has no response"))
        #expect(replay.skippedEntries[700].message.hasPrefix("entry 701 cannot be read: expected"), "\(replay.skippedEntries[700])")
    }

    @Test("an archive that starts with a byte-order mark loads, as HAR 1.2 asks of readers")
    func byteOrderMark() async throws {
        let replay = try HARReplay(data: Data([0xEF, 0xBB, 0xBF]) + archive([harEntry("https://a.test/bom")]))
        #expect(try await replaying(replay).get("https://a.test/bom").send().body == Data(#"{"ok":true}"#.utf8))
    }

    @Test("callsign --mock says on stderr which entries it does not replay, and answers from the others")
    func commandLine() async throws {
        try CLIRunner.requireBuilt()
        let folder = Scratch.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("chrome.har")
        try archive([
            harEntry("http://127.0.0.1:9/unsaved", content: #"{"size": 10, "mimeType": "text/plain"}"#),
            harEntry("http://127.0.0.1:9/ok"),
        ]).write(to: file)
        let result = try await CLIRunner.run(["get", "http://127.0.0.1:9/ok", "--mock", file.path])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("true"))
        #expect(result.standardError.contains(
            "--mock \(file.path): not replayed: entry 1 has a response body of 10 bytes that the archive does not hold (no content.text)"),
            "\(result.standardError)")
    }
}
