import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Testing

/// Behaviours the four libraries' users relied on (see issue "faithful to the four libraries").
@Suite("Faithful to RFAPI and xAPI", .hangGuard)
struct SeedFidelityTests {
    @Test("a call's own headers win over the definition's and the authentication's (RFAPI's context headers)")
    func callHeadersWin() async throws {
        let yaml = """
            DEFAULT:
              needsAuthorization: true
            Profile:
              path: /headers
              headers:
                X-Device: from-definition
                Authorization: Definition one
            """
        try await withServer(
            definitions: yamlDefinitions(yaml),
            configure: {
                var authentication = Authentication.bearer("t0ken")
                authentication.headers = ["X-Device": "from-auth"]
                $0.authentication = authentication
            }
        ) { server, client in
            // The definition's headers give way to the authentication's…
            _ = try await client.call("Profile")
            #expect(server.requests.last?.header("Authorization") == "Bearer t0ken")
            #expect(server.requests.last?.header("X-Device") == "from-auth")

            // …and the call's own win over both.
            _ = try await client.call("Profile", headers: ["Authorization": "Custom mine", "X-Device": "from-call"])
            #expect(server.requests.last?.header("Authorization") == "Custom mine")
            #expect(server.requests.last?.header("X-Device") == "from-call")

            // A builder call's headers are its own too.
            _ = try await client.get("/headers").authorized().header("Authorization", "Custom builder").send()
            #expect(server.requests.last?.header("Authorization") == "Custom builder")
        }
    }

    @Test("envelope keys in xAPI's order: errcode before code, errmsg before msg")
    func envelopeKeyOrder() throws {
        let contents = try #require(
            EnvelopePolicy.standard.read(["code": 0, "errcode": 4001, "msg": "fine", "errmsg": "token expired", "data": [:]]))
        #expect(contents.code == 4001)
        #expect(contents.message == "token expired")
    }

    @Test("a non-2xx body in the API's envelope keeps its code and message")
    func errorBodiesAreEnvelopes() async throws {
        try await withServer(configure: { $0.responses.envelope = .standard }) { server, client in
            server.route("/down") { _ in .json(["code": 5001, "msg": "db down"], status: 500) }
            server.route("/plain") { _ in .text("<h1>oops</h1>", status: 502, contentType: "text/html") }
            let error = await apiError { _ = try await client.get("/down").send().validate() }
            #expect(error?.code == .unacceptableStatus)
            #expect(error?.statusCode == 500)
            #expect(error?.envelopeCode == 5001)
            #expect(error?.envelopeMessage == "db down")
            #expect(error?.message.contains("db down") == true)

            let decoded = await apiError { _ = try await client.get("/down").decode(JSONValue.self) }
            #expect(decoded?.envelopeCode == 5001)

            let plain = await apiError { _ = try await client.get("/plain").send().validate() }
            #expect(plain?.code == .unacceptableStatus)
            #expect(plain?.envelopeCode == nil)
        }
        // Without an envelope policy the body is not read as one.
        try await withServer { server, client in
            server.route("/down") { _ in .json(["code": 5001, "msg": "db down"], status: 500) }
            let error = await apiError { _ = try await client.get("/down").send().validate() }
            #expect(error?.envelopeCode == nil)
        }
    }

    @Test("a failure after the head arrived keeps the status and headers in error.response", arguments: TransportKind.allCases)
    func headersAfterBodyFailures(kind: TransportKind) async throws {
        let cases: [(String, [RawServer.Step])] = [
            ("too large", [rawResponse(headers: ["X-Request-ID: r-1", "Content-Length: 100000"]) , .repeated(Array("x".utf8), count: 100_000)]),
            ("truncated", [rawResponse(headers: ["X-Request-ID: r-1", "Content-Length: 100"], body: "short")]),
            ("undeclared and too large", [rawResponse(headers: ["X-Request-ID: r-1"]), .repeated(Array("x".utf8), count: 100_000)]),
            ("not gzip", [rawResponse(headers: ["X-Request-ID: r-1", "Content-Encoding: gzip", "Content-Length: 12"], body: "garbage-body")]),
        ]
        for (name, script) in cases {
            try await RawServer.withRunning(script) { server in
                let client = APIClient(
                    configuration: .init {
                        $0.baseURL = server.baseURL
                        $0.retry = .none
                        $0.limits.maximumResponseBodySize = 10_000
                    }, transport: kind.make())
                let error = await apiError { _ = try await client.get("/x").send() }
                #expect(error != nil, "\(name)")
                #expect(error?.response?.status.code == 200, "\(name): \(String(describing: error))")
                #expect(error?.response?.headers[HTTPField.Name("X-Request-ID")!] == "r-1", "\(name)")
                try await client.transport.shutdown()
            }
        }
    }
}

@Suite("Accept-Language (Malibu)", .hangGuard)
struct AcceptLanguageTests {
    @Test("tags are checked and POSIX names converted; quality falls; at most six")
    func headerValue() {
        #expect(AcceptLanguage(["zh-Hans-CN", "en"]).headerValue == "zh-Hans-CN, en;q=0.9")
        #expect(AcceptLanguage(["zh_CN.UTF-8", "C", "POSIX", "bad value", "en\r\nX: y", "de@euro", "EN", "en"]).headerValue == "zh-CN, de;q=0.9, EN;q=0.8")
        #expect(AcceptLanguage(["a", "b", "c", "d", "e", "f", "g"]).headerValue == "a, b;q=0.9, c;q=0.8, d;q=0.7, e;q=0.6, f;q=0.5")
        #expect(AcceptLanguage.none.headerValue == nil)
    }

    @Test("sent by default from the user's languages, configurable, off with .none; a call's own wins")
    func sent() async throws {
        try await withServer { server, client in
            _ = try await client.get("/get").send()
            #expect(server.requests.last?.header("Accept-Language") == AcceptLanguage.preferred.headerValue)
        }
        try await withServer(configure: { $0.acceptLanguage = AcceptLanguage(["zh-Hans", "en"]) }) { server, client in
            _ = try await client.get("/get").send()
            #expect(server.requests.last?.header("Accept-Language") == "zh-Hans, en;q=0.9")
            _ = try await client.get("/get").header("Accept-Language", "fr").send()
            #expect(server.requests.last?.header("Accept-Language") == "fr")
        }
        try await withServer(configure: { $0.acceptLanguage = .none }) { server, client in
            _ = try await client.get("/get").send()
            #expect(server.requests.last?.header("Accept-Language") == nil)
        }
    }
}

@Suite("Response Class registry (RFAPI)", .hangGuard)
struct ResponseClassTests {
    private let yaml = """
        DEFAULT:
          pathPrefix: demo/api/v2/
        UserProfile:
          Path: user/{user_id}/profile
          Response Class: RFProfile
          Response Type: 2
        Topics:
          Path: topics/recommended
          Response Class: Topic
          Response Type: 3
        Legacy:
          Path: user/{user_id}/profile
          Response Class: RFUnknownModel
        """

    @Test("names in definitions decode into registered types, one or many; unknown names warn and fail clearly")
    func registry() async throws {
        try await withServer(definitions: yamlDefinitions(yaml), configure: {
            $0.responses.classes.register(Profile.self, as: "RFProfile")
            $0.responses.classes.register(Topic.self)
            $0.callbacks.delivery = .immediate
        }) { server, client in
            #expect(client.warnings.contains { $0.contains("Legacy") && $0.contains("RFUnknownModel") })
            #expect(!client.warnings.contains { $0.contains("UserProfile") })

            let profile = try await client.call("UserProfile", parameters: ["user_id": 7]).decodeResponseClass()
            #expect((profile as? Profile)?.id == 7)
            let topics = try await client.call("Topics", parameters: ["page": 1, "page_size": 3]).decodeResponseClass()
            #expect((topics as? [Topic])?.count == 3)

            let unknown = await apiError { _ = try await client.call("Legacy", parameters: ["user_id": 7]).decodeResponseClass() }
            #expect(unknown?.code == .decoding)
            #expect(unknown?.message.contains("RFUnknownModel") == true)

            let log = CallbackLog()
            client.request("UserProfile") { c in
                c.parameters = ["user_id": 9]
                c.decoded { value in log.add("decoded \((value as? Profile)?.id ?? -1)") }
                c.finished { log.finish() }
            }
            await log.waitUntilFinished()
            #expect(log.all == ["decoded 9", "finished"])
        }
        // An empty registry means the feature is unused: no warnings.
        try await withServer(definitions: yamlDefinitions(yaml)) { _, client in
            #expect(client.warnings.isEmpty)
        }
    }
}
