import Callsign
import CallsignTesting
import Foundation
import Testing

@Suite("Request encoding: query, form, JSON, text, multipart, headers", .hangGuard)
struct RequestEncodingTests {
    @Test("query values are RFC 3986 encoded; arrays and objects in bracket style; keys sorted")
    func queryEncoding() async throws {
        try await withServer { server, client in
            let response = try await client.get("/get").query([
                "q": "a+b&c=d#e f", "tags": ["x", "y"], "user": ["name": "Ann", "age": 3], "on": true, "none": nil,
                "ratio": 0.5,
            ]).send()
            let echo = try response.json()
            #expect(
                echo["query"]?.stringValue
                    == "none=&on=true&q=a%2Bb%26c%3Dd%23e%20f&ratio=0.5&tags%5B%5D=x&tags%5B%5D=y&user%5Bage%5D=3&user%5Bname%5D=Ann")
            #expect(echo["args"]?["q"]?.stringValue == "a+b&c=d#e f")
            #expect(echo["args"]?["tags[]"] == ["x", "y"])
        }
    }

    @Test("repeated-key array style is available")
    func repeatedKeys() async throws {
        try await withServer(configure: { $0.encoders.queryEncoder = QueryEncoder(arrayStyle: .repeatedKey) }) {
            server, client in
            _ = try await client.get("/get").query(["id": [1, 2]]).send()
            #expect(server.requests.last?.rawQuery == "id=1&id=2")
        }
    }

    @Test("GET, HEAD and DELETE put parameters in the query; POST encodes them as JSON by default")
    func placement() async throws {
        try await withServer { server, client in
            _ = try await client.delete("/anything").parameters(["a": 1]).send()
            #expect(server.requests.last?.uri == "/anything?a=1")
            #expect(server.requests.last?.body.isEmpty == true)

            let post = try await client.post("/anything").parameters(["a": 1, "b": ["c": true]]).query(["page": 2]).send()
            let echo = try post.json()
            #expect(echo["json"] == ["a": 1, "b": ["c": true]])
            #expect(echo["headers"]?["Content-Type"] == "application/json")
            #expect(server.requests.last?.uri == "/anything?page=2")

            _ = try await client.post("/anything").contentType(.query).parameters(["a": 1]).send()
            #expect(server.requests.last?.uri == "/anything?a=1")
        }
    }

    @Test("form, text and custom encoders; encoders can be replaced")
    func formAndText() async throws {
        struct UpperEncoder: ParameterEncoder {
            func encode(_ parameters: Parameters) throws -> RequestBody {
                .data(Data(parameters.keys.sorted().joined(separator: ",").uppercased().utf8), contentType: "application/x-upper")
            }
        }
        try await withServer(configure: { $0.encoders[.custom("application/x-upper")] = UpperEncoder() }) {
            server, client in
            let form = try await client.post("/anything").contentType(.formURLEncoded)
                .parameters(["name": "Ann Lee", "note": "a&b=c"]).send().json()
            #expect(form["data"] == "name=Ann%20Lee&note=a%26b%3Dc")
            #expect(form["form"] == ["name": "Ann Lee", "note": "a&b=c"])

            let text = try await client.post("/anything").contentType(.text).parameters(["text": "hello"]).send().json()
            #expect(text["data"] == "hello")
            #expect(text["headers"]?["Content-Type"] == "text/plain; charset=utf-8")

            let custom = try await client.post("/anything").contentType(.custom("application/x-upper"))
                .parameters(["b": 1, "a": 2]).send().json()
            #expect(custom["data"] == "A,B")
            #expect(custom["headers"]?["Content-Type"] == "application/x-upper")

            let missing = await apiError {
                _ = try await client.post("/anything").contentType(.custom("application/nothing")).parameters(["a": 1]).send()
            }
            #expect(missing?.code == .encoding)
        }
    }

    @Test("RFAPI's whole-array parameter and Encodable bodies")
    func wholeBody() async throws {
        struct NewBoard: Encodable { let title: String; let tags: [String] }
        try await withServer { server, client in
            let array = try await client.post("/anything").parameters([Request.arrayParameterKey: [1, 2, 3]]).send().json()
            #expect(array["json"] == [1, 2, 3])

            let encodable = try await client.post("/anything").body(NewBoard(title: "Balsa", tags: ["x"])).query(["v": 1])
                .send().json()
            #expect(encodable["json"] == ["title": "Balsa", "tags": ["x"]])
            #expect(server.requests.last?.uri == "/anything?v=1")
        }
    }

    @Test("multipart: fields, data and files; boundary random; names and filenames escaped")
    func multipart() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-\(UUID().uuidString).txt")
        try Data("file contents".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await withServer { server, client in
            var form = MultipartFormData()
            form.append(field: "title", value: "Balsa Fish")
            form.append(data: Data([0, 1, 2]), name: "blob", filename: "evil\"name\r\n.bin", mimeType: "application/x-bin")
            form.append(fileAt: file, name: "we\"ird")
            // A quote that a combining mark joins into one Character is still a quote on the wire.
            form.append(field: "accent\"\u{301}", value: "v")
            let other = MultipartFormData()
            #expect(form.boundary != other.boundary)
            #expect(form.boundary.count >= 32)

            let echo = try await client.post("/anything").parameters(["lead": "first"]).body(.multipart(form)).send().json()
            let parts = try #require(echo["multipart"]?.arrayValue)
            #expect(parts.map { $0["name"]?.stringValue } == ["lead", "title", "blob", "we%22ird", "accent%22\u{301}"])
            #expect(parts[1]["value"] == "Balsa Fish")
            #expect(parts[2]["filename"] == "evil%22name%0D%0A.bin")
            #expect(parts[2]["contentType"] == "application/x-bin")
            #expect(parts[2]["size"] == 3)
            #expect(parts[3]["value"] == "file contents")
            #expect(parts[3]["filename"]?.stringValue == file.lastPathComponent)

            let fields = try await client.post("/anything").contentType(.multipartFormData).parameters(["a": "1", "b": ["x", "y"]])
                .send().json()
            #expect(fields["multipart"]?.arrayValue?.map { $0["name"]?.stringValue } == ["a", "b", "b"])

            var missing = MultipartFormData()
            missing.append(fileAt: URL(fileURLWithPath: "/nonexistent/file.bin"), name: "f")
            let error = await apiError { _ = try await client.post("/anything").body(.multipart(missing)).send() }
            #expect(error?.code == .encoding)
            #expect(server.requests.count == 2)
        }
    }

    @Test("header priority: per call > definition > default definition > configuration")
    func headerPriority() async throws {
        let yaml = """
            DEFAULT:
              headers: {X-Level: default, X-Default-Only: d}
            WithOwn:
              path: anything
              headers: {X-Level: definition}
            Inherits:
              path: anything
            """
        try await withServer(
            definitions: yamlDefinitions(yaml),
            configure: { $0.headers["X-Level"] = "configuration"; $0.headers["X-Config"] = "c" }
        ) { server, client in
            let own = try await client.call("WithOwn").json()["headers"]
            #expect(own?["X-Level"] == "definition")
            #expect(own?["X-Default-Only"] == nil)  // the definition's own set wins whole
            #expect(own?["X-Config"] == "c")
            #expect(own?["User-Agent"]?.stringValue?.hasPrefix("Callsign/") == true)

            let inherits = try await client.call("Inherits").json()["headers"]
            #expect(inherits?["X-Level"] == "default")

            let perCall = try await client.call("WithOwn", headers: ["x-level": "call"]).json()["headers"]
            #expect(perCall?["x-level"] == "call")
            #expect(perCall?["X-Level"] == nil)
        }
    }

    @Test(
        "a header with CR, LF or NUL, a bad header name or a bad method is refused before any byte is sent",
        arguments: [("X-Test", "a\r\nInjected: yes"), ("X-Test", "a\nb"), ("X-Test", "a\0b"), ("Bad Name", "v"), ("X:Colon", "v")])
    func headerInjection(name: String, value: String) async throws {
        try await withServer { server, client in
            let error = await apiError { _ = try await client.get("/get").header(name, value).send() }
            #expect(error?.code == .invalidRequest)
            #expect(error?.description.contains("\r") == false)
            #expect(server.requests.isEmpty)
        }
    }

    @Test("a method that is not a token is refused; any valid token is sent")
    func methodToken() async throws {
        try await withServer { server, client in
            let error = await apiError { _ = try await client.request(method: "GE T", "/anything").send() }
            #expect(error?.code == .invalidRequest)
            #expect(server.requests.isEmpty)
            let purge = try await client.request(method: "PURGE", "/anything").send().json()
            #expect(purge["method"] == "PURGE")
        }
    }
}
