@testable import Callsign
import CallsignTesting
import Foundation
import HTTPTypes
import Testing

@Suite("Responses: validation, serializers and decoding", .hangGuard)
struct ResponseTests {
    @Test("validate() accepts 2xx by default and reports others with status and response")
    func statusValidation() async throws {
        try await withServer { server, client in
            try await client.get("/status/204").send().validate()
            let error = await apiError { try await client.get("/status/404").send().validate() }
            #expect(error?.code == .unacceptableStatus)
            #expect(error?.statusCode == 404)
            #expect(error?.response?.status == .notFound)
            #expect(error?.description.contains("404") == true)
        }
    }

    @Test("accepted status codes come from the request, definition or configuration")
    func acceptedCodes() async throws {
        try await withServer(configure: { $0.responses.acceptedStatusCodes = [200, 404] }) { server, client in
            try await client.get("/status/404").send().validate()
            try await client.get("/status/418").accept(statusCodes: [418]).send().validate()
            let error = await apiError { try await client.get("/status/201").send().validate() }
            #expect(error?.code == .unacceptableStatus)
            #expect(error?.message.contains("accepted: 200, 404") == true)
        }
    }

    @Test("the fast Accept check matches one media type exactly, case and parameters aside, and nothing else")
    func exactMediaType() {
        let accept = "application/json"
        #expect(Response.isExactly(accept, mediaTypeOf: "application/json"))
        #expect(Response.isExactly(accept, mediaTypeOf: "Application/JSON; charset=utf-8"))
        #expect(Response.isExactly(" application/json ", mediaTypeOf: " application/json;x=1"))
        #expect(!Response.isExactly(accept, mediaTypeOf: "application/jsonx"))
        #expect(!Response.isExactly(accept, mediaTypeOf: "application/problem+json"), "+json is the full check's")
        #expect(!Response.isExactly("application/json, text/plain", mediaTypeOf: "application/json"), "a list is the full check's")
        #expect(!Response.isExactly("*/*", mediaTypeOf: "*/*"), "a wildcard is the full check's")
        #expect(!Response.isExactly("a/b", mediaTypeOf: "A/B!"))
        #expect(!Response.isExactly("", mediaTypeOf: ""))
        #expect(!Response.isExactly(accept, mediaTypeOf: nil))
    }

    @Test("content type is checked against Accept, with wildcards and +json")
    func contentTypes() async throws {
        try await withServer { server, client in
            try await client.get("/json").header("Accept", "application/json").send().validate()
            try await client.get("/json").header("Accept", "application/*").send().validate()
            try await client.get("/json").header("Accept", "*/*").send().validate()
            let wrong = await apiError {
                try await client.get("/misbehave/wrong-content-type").header("Accept", "application/json").send().validate()
            }
            #expect(wrong?.code == .unacceptableContentType)
            #expect(wrong?.message.contains("text/html") == true)
            server.route("/problem") { _ in
                ServerResponse(status: 200, headers: [("Content-Type", "application/problem+json")], body: .data(Data("{}".utf8)))
            }
            try await client.get("/problem").header("Accept", "application/json").send().validate()
            try await client.get("/json").send().validate(contentTypes: ["application/json"])
        }
    }

    @Test("custom validators run in validate()")
    func customValidator() async throws {
        struct NeedsTrace: ResponseValidator {
            func validate(_ response: Response) throws {
                guard response.headers[HTTPField.Name("X-Trace")!] != nil else { throw CocoaError(.fileNoSuchFile) }
            }
        }
        try await withServer(configure: { $0.responses.validators = [NeedsTrace()] }) { server, client in
            let error = await apiError { try await client.get("/get").send().validate() }
            #expect(error?.code == .invalidResponse)
        }
    }

    @Test("string, data and json serializers")
    func serializers() async throws {
        try await withServer { server, client in
            let response = try await client.get("/json").send()
            #expect(response.string().contains("Sample Slide Show"))
            #expect(response.data() == response.body)
            #expect(try response.json()["slideshow"]?["slides"]?[1]?["title"] == "Overview")
            let notJSON = await apiError { _ = try await client.get("/bytes/10").send().json() }
            #expect(notJSON?.code == .decoding)
        }
    }

    @Test("decode checks the status first, then reports the coding path of a mismatch")
    func decoding() async throws {
        struct Slides: Decodable { struct Show: Decodable { let title: String; let slides: [Slide] }; let slideshow: Show }
        struct Slide: Decodable { let title: String; let pages: Int }
        try await withServer { server, client in
            let notFound = await apiError { _ = try await client.get("/status/404").send().decode(Topic.self) }
            #expect(notFound?.code == .unacceptableStatus)
            let mismatch = await apiError { _ = try await client.get("/json").send().decode(Slides.self) }
            #expect(mismatch?.code == .decoding)
            #expect(mismatch?.message.contains("\"pages\"") == true)
            #expect(mismatch?.message.contains("slideshow.slides[0]") == true)
            #expect(mismatch?.response != nil)
        }
    }

    @Test("the client's decoder is used: key and date strategies")
    func configuredDecoder() async throws {
        struct Stamped: Decodable { let createdAt: Date; let userName: String }
        try await withServer(configure: {
            $0.responses.decoder.keyDecodingStrategy = .convertFromSnakeCase
            $0.responses.decoder.dateDecodingStrategy = .iso8601
        }) { server, client in
            server.route("/stamped") { _ in .json(["created_at": "2026-11-22T10:00:00Z", "user_name": "ann"]) }
            let value = try await client.get("/stamped").send().decode(Stamped.self)
            #expect(value.userName == "ann")
            #expect(value.createdAt == Date(timeIntervalSince1970: 1_795_341_600))
        }
    }

    @Test("response types: objects must be arrays, object a single value, void ignores the body")
    func responseTypes() async throws {
        let yaml = """
            Many:
              path: demo/boards
              responseType: objects
            One:
              path: demo/boards/{id}
              responseType: object
            WrongMany:
              path: demo/boards/1
              responseType: objects
            Nothing:
              path: bytes/16
              responseType: void
            NullOK:
              path: nothing
              acceptsNullResponse: true
            """
        try await withServer(definitions: yamlDefinitions(yaml)) { server, client in
            server.route("/nothing") { _ in ServerResponse(status: 200) }
            let many = try await client.call("Many", as: [Board].self)
            #expect(many.count == 2)
            let one = try await client.call("One", parameters: ["id": 7], as: Board.self)
            #expect(one.title == "Longboard")
            let wrong = await apiError { _ = try await client.call("WrongMany", as: [Board].self) }
            #expect(wrong?.code == .decoding)
            #expect(wrong?.message.contains("expected an array of objects") == true)
            let nothing = try await client.call("Nothing", as: EmptyResponse.self)
            #expect(nothing == EmptyResponse())
            let null = try await client.call("NullOK", as: Board?.self)
            #expect(null == nil)
        }
    }

    @Test("xAPI envelopes: every code, message and payload key; failures carry code and message")
    func envelopes() async throws {
        try await withServer(configure: { $0.responses.envelope = .standard }) { server, client in
            #expect(try await client.get("/envelope/ok").send().decode(User.self) == User(id: 1, name: "Ann"))
            #expect(try await client.get("/envelope/list").send().decode([User].self).count == 2)

            let failure = await apiError { _ = try await client.get("/envelope/error").send().decode(User.self) }
            #expect(failure?.code == .envelope)
            #expect(failure?.envelopeCode == 4001)
            #expect(failure?.envelopeMessage == "token expired")
            let validateFailure = await apiError { try await client.get("/envelope/error").send().validate() }
            #expect(validateFailure?.code == .envelope)

            for (codeKey, messageKey, payloadKey) in [
                ("code", "msg", "data"), ("errcode", "errmsg", "ret"), ("errorno", "errormsg", "data"),
                ("errCode", "errMsg", "ret"),
            ] {
                let ok = try await client.get("/envelope/custom")
                    .query(["codeKey": .string(codeKey), "msgKey": .string(messageKey), "payloadKey": .string(payloadKey), "code": 200])
                    .send().decode(User.self)
                #expect(ok.name == "Custom")
                let bad = await apiError {
                    _ = try await client.get("/envelope/custom")
                        .query(["codeKey": .string(codeKey), "msgKey": .string(messageKey), "code": 7, "message": "nope"])
                        .send().decode(User.self)
                }
                #expect(bad?.envelopeCode == 7)
                #expect(bad?.envelopeMessage == "nope")
            }
            // Not an envelope-shaped body: decoded as it is.
            #expect(try await client.get("/demo/boards/7").send().decode(Board.self).id == 7)
            // Turned off per request.
            let raw = try await client.get("/envelope/ok").envelope(false).send().decode(JSONValue.self)
            #expect(raw["code"] == 0)
        }
    }

    @Test("envelope key lists and success codes are configurable")
    func customEnvelope() async throws {
        let policy = EnvelopePolicy(codeKeys: ["status"], messageKeys: ["reason"], payloadKeys: ["result"], successCodes: [1])
        try await withServer(configure: { $0.responses.envelope = policy }) { server, client in
            server.route("/custom-envelope") { request in
                .json(["status": .int(Int(request.query("s") ?? "1") ?? 1), "reason": "because", "result": ["id": 5, "name": "Eve"]])
            }
            let user = try await client.get("/custom-envelope").send().decode(User.self)
            #expect(user.id == 5)
            let error = await apiError { _ = try await client.get("/custom-envelope").query(["s": 0]).send().decode(User.self) }
            #expect(error?.envelopeCode == 0)
            #expect(error?.envelopeMessage == "because")
            let contents = try await client.get("/custom-envelope").send().envelope
            #expect(contents?.message == "because")
        }
    }
}

@Suite("APIError", .hangGuard)
struct APIErrorTests {
    @Test("codes have stable short descriptions for metric labels")
    func shortDescriptions() {
        #expect(APIError.Code.timedOut.shortDescription == "timedOut")
        #expect(APIError.Code.unacceptableStatus.description == "unacceptableStatus")
        #expect(APIError.Code.cancelled != APIError.Code.transport)
    }

    @Test("descriptions never contain secrets from the URL")
    func redaction() async throws {
        try await withServer { server, client in
            let error = await apiError {
                _ = try await client.get("/status/500").query(["access_token": "s3cr3t-sentinel", "page": 1]).send().validate()
            }
            let text = try #require(error?.description)
            #expect(!text.contains("s3cr3t-sentinel"))
            #expect(text.contains("access_token=REDACTED"))
            #expect(error?.localizedDescription.contains("s3cr3t-sentinel") == false)
        }
    }
}
