import Callsign
import CallsignTesting
import Foundation
import Testing

@testable import CallsignTesting

/// The command line as an everyday HTTP tool, as curl and HTTPie users expect it: each behaviour
/// checked by running the built binary against the in-process server.
@Suite("callsign as curl and HTTPie users expect it", .hangGuard)
struct HTTPToolTests {
    @Test("plain http:// goes to the proxy in absolute form, as curl sends it; --proxytunnel tunnels it", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func proxiesAsCurlUsesThem() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            // CONNECT to port 443 only, as Squid's stock configuration allows.
            try await TestProxy.withRunning(tunnelPorts: [443]) { proxy in
                let url = server.url("/get").absoluteString
                let forwarded = try await CLIRunner.run(["get", url, "q==1"], environment: ["http_proxy": proxy.url])
                #expect(forwarded.status == 0, "\(forwarded.standardError)")
                #expect(proxy.exchanges.map(\.method) == ["GET"])
                #expect(proxy.exchanges.first?.target == "http://127.0.0.1:\(server.port)/get?q=1")

                let tunnelled = try await CLIRunner.run(["get", url, "--proxytunnel", "-x", proxy.url])
                #expect(tunnelled.status == 7, "\(tunnelled.standardError)")
                #expect(tunnelled.standardError.contains("did not open a tunnel"))
                #expect(proxy.exchanges.last?.method == "CONNECT")

                let withoutProxy = try await CLIRunner.run(["get", url, "--proxytunnel"])
                #expect(withoutProxy.status == 64, "\(withoutProxy.standardError)")
            }
        }
    }

    @Test("plain http:// through a real Squid with its stock rules, credentials to Squid only")
    func squid() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            do {
                try await SquidTestProxy.withRunning(credentials: true) { squid in
                    let (username, password) = SquidTestProxy.credentials
                    let result = try await CLIRunner.run(
                        ["get", server.url("/headers").absoluteString, "--proxy-user", "\(username):\(password)"],
                        environment: ["HTTP_PROXY": squid.url])
                    #expect(result.status == 0, "\(result.standardError)")
                    let seen = try #require(server.requests.last)
                    #expect(seen.headers.contains { $0.name.lowercased() == "via" && $0.value.contains("squid") })
                    #expect(seen.headers.allSatisfy { $0.name.lowercased() != "proxy-authorization" })
                    #expect(!result.standardOutput.contains(password) && !result.standardError.contains(password))
                }
            } catch let unavailable as SquidTestProxy.Unavailable {
                try Test.cancel(Comment(rawValue: unavailable.description))
            }
        }
    }

    // MARK: Input

    @Test("piped standard input is the body when nothing else gives one, its Content-Type from its bytes; --ignore-stdin leaves it")
    func standardInputIsTheBody() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let url = server.url("/post").absoluteString
            let json = try await CLIRunner.run(["post", url], input: Data("{\"a\":1}\n".utf8))
            #expect(json.status == 0, "\(json.standardError)")
            var seen = try #require(server.requests.last)
            #expect(String(decoding: seen.body, as: UTF8.self) == "{\"a\":1}\n")
            #expect(seen.header("Content-Type") == "application/json")

            let text = try await CLIRunner.run(["put", server.url("/anything").absoluteString], input: Data("hello\n".utf8))
            #expect(text.status == 0, "\(text.standardError)")
            seen = try #require(server.requests.last)
            #expect(seen.header("Content-Type") == "text/plain; charset=utf-8")
            #expect(String(decoding: seen.body, as: UTF8.self) == "hello\n")

            let binary = try await CLIRunner.run(["post", url], input: Data([0x00, 0xFF, 0x10]))
            #expect(binary.status == 0, "\(binary.standardError)")
            #expect(server.requests.last?.header("Content-Type") == "application/octet-stream")
            #expect(server.requests.last?.body == Data([0x00, 0xFF, 0x10]))

            let declared = try await CLIRunner.run(["post", url, "Content-Type:application/xml"], input: Data("<a/>".utf8))
            #expect(declared.status == 0, "\(declared.standardError)")
            #expect(server.requests.last?.header("Content-Type") == "application/xml", "the header given names the bytes")

            let ignored = try await CLIRunner.run(["post", url, "--ignore-stdin"], input: Data("{\"a\":1}".utf8))
            #expect(ignored.status == 0, "\(ignored.standardError)")
            #expect(server.requests.last?.body.isEmpty == true)

            let empty = try await CLIRunner.run(["post", url])
            #expect(empty.status == 0, "\(empty.standardError)")
            #expect(server.requests.last?.body.isEmpty == true)
            #expect(server.requests.last?.header("Content-Type") == nil, "no body, no Content-Type")

            let items = try await CLIRunner.run(["post", url, "name=Ada"], input: Data("ignored".utf8))
            #expect(items.status == 0, "\(items.standardError)")
            #expect(String(decoding: server.requests.last?.body ?? Data(), as: UTF8.self) == "{\"name\":\"Ada\"}", "items give the body")
        }
    }

    @Test("-f sends items as a URL-encoded form, multipart with a file item; the body agrees with a Content-Type given")
    func forms() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            try await withTemporaryFolder("callsign-form") { folder in
                let url = server.url("/post").absoluteString
                let form = try await CLIRunner.run(["post", url, "-f", "name=Ada Lovelace", "lang==en"])
                #expect(form.status == 0, "\(form.standardError)")
                var seen = try #require(server.requests.last)
                #expect(seen.header("Content-Type") == "application/x-www-form-urlencoded")
                #expect(String(decoding: seen.body, as: UTF8.self) == "name=Ada%20Lovelace")
                #expect(seen.rawQuery == "lang=en")

                let file = folder.appendingPathComponent("notes.txt")
                try Data("file contents".utf8).write(to: file)
                let multipart = try await CLIRunner.run(["post", url, "--form-items", "title=Notes", "upload@\(file.path)"])
                #expect(multipart.status == 0, "\(multipart.standardError)")
                seen = try #require(server.requests.last)
                #expect(seen.header("Content-Type")?.hasPrefix("multipart/form-data; boundary=") == true)
                let body = String(decoding: seen.body, as: UTF8.self)
                #expect(body.contains("name=\"title\"") && body.contains("Notes"))
                #expect(body.contains("name=\"upload\"; filename=\"notes.txt\"") && body.contains("file contents"))

                let missing = try await CLIRunner.run(["post", url, "-f", "upload@\(folder.path)/absent"])
                #expect(missing.status == 65, "\(missing.standardError)")

                // A Content-Type header given chooses how items are encoded: never JSON under another name.
                let declared = try await CLIRunner.run(["post", url, "-H", "Content-Type: application/x-www-form-urlencoded", "a=1"])
                #expect(declared.status == 0, "\(declared.standardError)")
                #expect(String(decoding: server.requests.last?.body ?? Data(), as: UTF8.self) == "a=1")
                let multipartHeader = try await CLIRunner.run(["post", url, "Content-Type:multipart/form-data", "a=1"])
                #expect(multipartHeader.status == 0, "\(multipartHeader.standardError)")
                #expect(server.requests.last?.header("Content-Type")?.contains("boundary=") == true)
                let before = server.requests.count
                let refused = try await CLIRunner.run(["post", url, "Content-Type:text/xml", "a=1"])
                #expect(refused.status == 65)
                #expect(refused.standardError.contains("text/xml"))
                let conflicting = try await CLIRunner.run(["post", url, "-f", "-H", "Content-Type: application/json", "a=1"])
                #expect(conflicting.status == 65)
                #expect(server.requests.count == before, "nothing sent")
            }
        }
    }

    @Test("call takes the same items as the method commands: parameters, JSON values, query and headers, no -p needed")
    func callTakesItems() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            try await withTemporaryFolder("callsign-call-items") { folder in
                let file = folder.appendingPathComponent("api.yaml")
                try Data("DEFAULT:\n  baseURL: \(server.baseURL.absoluteString)\nCreate:\n  path: post\n  method: POST\n".utf8).write(to: file)
                let result = try await CLIRunner.run(["call", "Create", "-D", file.path, "id:=5", "name=Ada", "page==2", "X-Trace:abc"])
                #expect(result.status == 0, "\(result.standardError)")
                let seen = try #require(server.requests.last)
                let body = try #require(try JSONSerialization.jsonObject(with: seen.body) as? [String: Any])
                #expect(body["id"] as? Int == 5)
                #expect(body["name"] as? String == "Ada")
                #expect(seen.rawQuery == "page=2")
                #expect(seen.header("X-Trace") == "abc")

                let piped = try await CLIRunner.run(["call", "Create", "-D", file.path], input: Data("[1,2]".utf8))
                #expect(piped.status == 0, "\(piped.standardError)")
                #expect(server.requests.last?.body == Data("[1,2]".utf8))
                #expect(server.requests.last?.header("Content-Type") == "application/json")
            }
        }
    }

    // MARK: Output

    @Test("status lines carry the protocol the answer came over (HTTP/1.1 200 OK, HTTP/2 200); head prints the response head by itself", .enabled(if: TransportKind.asyncHTTPClientIsBuilt))
    func statusLinesAndHead() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let head = try await CLIRunner.run(["head", server.url("/get").absoluteString])
            #expect(head.status == 0, "\(head.standardError)")
            let lines = head.standardOutput.components(separatedBy: "\n")
            #expect(lines.first == "HTTP/1.1 200 OK")
            #expect(lines.contains { $0.lowercased().hasPrefix("content-type: ") })
        }
        let certificates = try TestCertificates()
        try await TestServer.withRunning(tls: .init(identity: certificates.localhost)) { server in
            try await withTemporaryFolder("callsign-h2") { folder in
                let authority = folder.appendingPathComponent("ca.pem")
                try Data(certificates.authority.certificatePEM.utf8).write(to: authority)
                let h2 = try await CLIRunner.run(["get", server.url("/get").absoluteString, "-i", "--cacert", authority.path])
                #expect(h2.status == 0, "\(h2.standardError)")
                #expect(h2.standardOutput.hasPrefix("HTTP/2 200\n"), "\(h2.standardOutput.prefix(40))")
                let h1 = try await CLIRunner.run(["get", server.url("/get").absoluteString, "-i", "--http1.1", "--cacert", authority.path])
                #expect(h1.standardOutput.hasPrefix("HTTP/1.1 200 OK\n"), "\(h1.standardOutput.prefix(40))")
            }
        }
    }
}

extension HTTPToolTests {
    @Test("--print chooses the parts in HTTPie's letters: request head and body as sent (secrets masked), response head, response body")
    func printSelection() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let url = server.url("/post").absoluteString
            let all = try await CLIRunner.run(["post", url, "name=Ada", "--print", "HBhb", "--bearer", "s3cr3t-token"])
            #expect(all.status == 0, "\(all.standardError)")
            let out = all.standardOutput
            #expect(out.hasPrefix("POST /post\nHost: 127.0.0.1:\(server.port)\n"), "\(out.prefix(80))")
            #expect(out.contains("\nAuthorization: REDACTED\n"))
            #expect(out.contains("\nContent-Type: application/json\n"))
            let requestBody = try #require(out.range(of: "\n\n{\"name\":\"Ada\"}\n\n"))
            let statusLine = try #require(out.range(of: "HTTP/1.1 200 OK\n"))
            #expect(requestBody.upperBound <= statusLine.lowerBound, "the request comes before the response")
            #expect(!out[..<statusLine.lowerBound].contains("s3cr3t-token"), "the token is masked (the server's echo shows it)")
            #expect(server.requests.last?.header("Authorization") == "Bearer s3cr3t-token", "masked in print only")

            let head = try await CLIRunner.run(["get", server.url("/json").absoluteString, "--print", "h"])
            #expect(head.standardOutput.hasPrefix("HTTP/1.1 200 OK\n"))
            #expect(head.standardOutput.hasSuffix("\n\n"), "the head only, no body")
            #expect(!head.standardOutput.contains("{"))

            let requestOnly = try await CLIRunner.run(["get", server.url("/get").absoluteString, "q==1", "--print", "H"])
            #expect(requestOnly.standardOutput.hasPrefix("GET /get?q=1\n"), "\(requestOnly.standardOutput)")
            #expect(!requestOnly.standardOutput.contains("HTTP/1.1"))

            let bad = try await CLIRunner.run(["get", url, "--print", "hx"])
            #expect(bad.status == 64)
            #expect(bad.standardError.contains("--print"))
        }
    }

    @Test("-v shows all four parts and stays compatible: request and response heads on stderr (> and < lines), stdout the body alone")
    func verboseShowsEverything() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let url = server.url("/post").absoluteString
            let quiet = try await CLIRunner.run(["post", url, "name=Ada"])
            let verbose = try await CLIRunner.run(["post", url, "name=Ada", "-v", "--user", "ada:pa55word"])
            #expect(verbose.status == 0, "\(verbose.standardError)")
            #expect(verbose.standardOutput.contains("\"name\"") && !verbose.standardOutput.contains("> "), "stdout is the body, as before")
            #expect(quiet.standardOutput.count > 0)
            let lines = verbose.standardError.components(separatedBy: "\n")
            #expect(lines.contains("> POST /post"))
            #expect(lines.contains("> Content-Type: application/json"))
            #expect(lines.contains("> Authorization: REDACTED"))
            #expect(lines.contains("> {\"name\":\"Ada\"}"))
            #expect(lines.contains("< HTTP/1.1 200 OK"))
            #expect(lines.contains { $0.hasPrefix("< 200 OK (") }, "the attempt's summary line, as before")
            #expect(!verbose.standardError.contains("pa55word"))

            let followed = try await CLIRunner.run(["get", server.url("/redirect/1").absoluteString, "-v"])
            #expect(followed.status == 0, "\(followed.standardError)")
            #expect(followed.standardError.contains("> GET /redirect/1\n") && followed.standardError.contains("> GET /get\n"), "every hop as sent")
            #expect(followed.standardError.contains("< HTTP/1.1 302 Found\n"))
        }
    }

    @Test("heads are coloured only on a terminal or with --color always; colour never lets a server's text through unescaped")
    func headColours() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            server.route("/odd") { _ in ServerResponse(status: 200, headers: [("X-Odd", "a\tb")], body: .data(Data("ok".utf8))) }
            let url = server.url("/odd").absoluteString
            let piped = try await CLIRunner.run(["get", url, "-i"])
            #expect(!piped.standardOutput.contains("\u{1B}["), "no colour into a pipe")
            #expect(piped.standardOutput.contains("X-Odd: a\\tb"), "the tab in the value is shown, not obeyed")
            let forced = try await CLIRunner.run(["get", url, "-i", "--color", "always"])
            #expect(forced.standardOutput.hasPrefix("\u{1B}[1mHTTP/1.1 200 OK\u{1B}[0m\n"))
            #expect(forced.standardOutput.contains("\u{1B}[36mX-Odd\u{1B}[0m: a\\tb\n"))
            let noColour = try await CLIRunner.run(["get", url, "-i", "--color", "always", "--color", "never"])
            #expect(!noColour.standardOutput.contains("\u{1B}["))
        }
    }

    // MARK: Redirects

    @Test("redirects: followed by default as in the library (5 hops), --no-follow prints the 3xx and exits 0, --max-redirs limits (47 past it)")
    func redirects() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let three = server.url("/redirect/3").absoluteString
            let followed = try await CLIRunner.run(["get", three])
            #expect(followed.status == 0, "\(followed.standardError)")
            #expect(server.requests.last?.rawPath == "/get")
            #expect(try await CLIRunner.run(["get", three, "--follow"]).status == 0)

            server.resetRecords()
            let kept = try await CLIRunner.run(["get", three, "--no-follow", "-i"])
            #expect(kept.status == 0, "\(kept.standardError)")
            #expect(kept.standardOutput.hasPrefix("HTTP/1.1 302 Found\n"), "\(kept.standardOutput.prefix(40))")
            #expect(kept.standardOutput.lowercased().contains("location: /redirect/2"))
            #expect(server.requests.count == 1, "nothing followed")

            let limited = try await CLIRunner.run(["get", three, "--max-redirs", "2"])
            #expect(limited.status == 47, "\(limited.standardError)")
            #expect(limited.standardError.contains("more than 2 redirects"))
            #expect(try await CLIRunner.run(["get", three, "--max-redirects", "3"]).status == 0)
            let tooMany = try await CLIRunner.run(["get", three, "--max-redirs", "6"])
            #expect(tooMany.status == 0)
            #expect(try await CLIRunner.run(["get", three, "--max-redirs", "51"]).status == 64)
            #expect(try await CLIRunner.run(["get", three, "--no-follow", "--max-redirs", "2"]).status == 64)

            try await withTemporaryFolder("callsign-download-redirect") { folder in
                let file = folder.appendingPathComponent("out.json").path
                let download = try await CLIRunner.run(["download", three, "-o", file, "--max-redirs", "1", "-q"])
                #expect(download.status == 47, "\(download.standardError)")
                #expect(!FileManager.default.fileExists(atPath: file))
                let whole = try await CLIRunner.run(["download", three, "-o", file, "-q"])
                #expect(whole.status == 0, "\(whole.standardError)")
                #expect(FileManager.default.fileExists(atPath: file))
            }
        }
    }

    // MARK: Dry run

    @Test("--dry-run (and HTTPie's --offline) prints the exact request — credentials added and masked, body — and sends nothing")
    func dryRun() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let url = server.url("/post").absoluteString
            let dry = try await CLIRunner.run(["post", url, "name=Ada", "password=hunter2", "X-Trace:abc", "--dry-run", "--bearer", "t0ken-xyz"])
            #expect(dry.status == 0, "\(dry.standardError)")
            let out = dry.standardOutput
            #expect(out.hasPrefix("POST /post\nHost: 127.0.0.1:\(server.port)\n"), "\(out)")
            #expect(out.contains("\nAuthorization: REDACTED\n"), "the credentials the call would carry, masked")
            #expect(out.contains("\nX-Trace: abc\n") && out.contains("\nContent-Type: application/json\n"))
            #expect(out.contains("\"name\":\"Ada\"") && out.contains("\"password\":\"REDACTED\""), "\(out)")
            #expect(!out.contains("t0ken-xyz") && !out.contains("hunter2"))
            #expect(!out.contains("HTTP/1.1"), "no answer: nothing was sent")
            #expect(server.requests.isEmpty, "nothing sent")

            let headOnly = try await CLIRunner.run(["get", server.url("/get").absoluteString, "--dry-run", "--print", "H", "q==1"])
            #expect(headOnly.standardOutput.hasPrefix("GET /get?q=1\nHost: 127.0.0.1:\(server.port)\n"), "\(headOnly.standardOutput)")
            #expect(headOnly.standardOutput.hasSuffix("\n\n") && !headOnly.standardOutput.contains("HTTP/"), "the head alone")

            let httpie = try await CLIRunner.run(["post", url, "a=1", "--offline"])
            #expect(httpie.status == 0, "\(httpie.standardError)")
            #expect(httpie.standardOutput.hasPrefix("POST /post\n"))
            #expect(httpie.standardError.contains("--queue-offline"), "says what the old meaning is called now")
            #expect(server.requests.isEmpty, "nothing sent")

            let unreachable = try await CLIRunner.run(["post", "http://127.0.0.1:1/x", "a=1", "--dry-run"])
            #expect(unreachable.status == 0, "a dry run needs no server: \(unreachable.standardError)")

            #expect(try await CLIRunner.run(["post", url, "--dry-run", "--queue-offline"]).status == 64)
            #expect(try await CLIRunner.run(["get", url, "--dry-run", "--cache", "/tmp/x"]).status == 64)
            #expect(server.requests.isEmpty)
        }
    }
}
