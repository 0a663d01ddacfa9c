import Callsign
import CallsignOpenAPI
import CallsignTesting
import Foundation
import Testing

/// A scheme an app registers by name for its definitions files: the key in `X-Sig`.
private struct SignatureHeader: AuthenticationScheme {
    let key: String

    func authorize(_ request: Request, context: MiddlewareContext) async throws -> Request {
        var request = request
        request.headers["X-Sig"] = "sig-" + key
        return request
    }

    var secretValues: [String] { [key] }
}

@Suite("Who gets credentials: one rule, open schemes", .hangGuard)
struct CredentialRuleTests {
    @Test("the one rule's table: each way of calling has one default, and each way's requests carry it")
    func table() async throws {
        let table = Dictionary(uniqueKeysWithValues: CredentialRule.WayOfCalling.allCases.map { ($0, CredentialRule.defaultNeedsAuthorization(for: $0)) })
        #expect(table == [.definition: false, .request: nil, .builder: nil, .endpoint: nil, .openAPIOperation: true, .commandLine: true])

        // Each way of calling, as built, says what the table says.
        #expect(APIDefinition(name: "Me", path: "/me").request().needsAuthorization == table[.definition] ?? nil)
        #expect(Request.get("me").needsAuthorization == table[.request] ?? nil)
        #expect(OperationPolicy().needsAuthorization == table[.openAPIOperation] ?? nil)

        // And on the wire: a definition that says nothing gets none; the builder, at the
        // client's own origin, gets them unless it opts out.
        try await withServer(definitions: yamlDefinitions("Me:\n  path: /headers\n"), configure: { $0.authentication = .bearer("B1") }) { server, client in
            _ = try await client.call("Me")
            #expect(server.requests.last?.header("Authorization") == nil)
            _ = try await client.get("headers").send()
            #expect(server.requests.last?.header("Authorization") == "Bearer B1")
            _ = try await client.get("headers").authorized(false).send()
            #expect(server.requests.last?.header("Authorization") == nil)
        }
    }

    @Test(
        "an API key from a definitions file, in a header or the query, reaches trusted origins only and never after a cross-origin redirect",
        arguments: TransportKind.allCases, ["header", "query"])
    func apiKey(transport: TransportKind, place: String) async throws {
        let key = "K3y-\(UUID().uuidString)"
        // A query name the secret-name rule would not catch by itself: the scheme names it secret.
        let yaml = """
            DEFAULT:
              authentication: {scheme: apiKey, in: \(place), name: kk, tokenEnvironment: CALLSIGN_TEST_KEY}
            Me:
              path: /anything/me
              needsAuthorization: true
            """
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apikey-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let har = folder.appendingPathComponent("calls.har")
        func sentKey(_ request: ServerRequest?) -> String? {
            place == "header" ? request?.header("kk") : request?.queryItems.first { $0.name == "kk" }?.value
        }

        let source = try #require(try APIDefinitions(data: Data(yaml.utf8), format: .yaml).authenticationSource)
        let authentication = try source.authentication(environment: ["CALLSIGN_TEST_KEY": key])

        try await TestServer.withRunning { other in
            try await withServer(
                transport: transport, definitions: yamlDefinitions(yaml),
                configure: {
                    $0.authentication = authentication
                    $0.observability.recorder = HARRecorder(fileURL: har)
                }
            ) { server, client in
                _ = try await client.call("Me")
                #expect(sentKey(server.requests.last) == key)

                var elsewhere = Request.get(other.url("/anything/elsewhere").absoluteString)
                elsewhere.needsAuthorization = true
                _ = try await client.send(elsewhere)
                var away = Request.get("redirect-to?url=\(other.url("/anything/away").absoluteString)")
                away.needsAuthorization = true
                let answer = try await client.send(away)
                #expect(answer.status.code == 200)
                #expect(other.requests.count == 2)
                #expect(other.requests.allSatisfy { sentKey($0) == nil })
            }
        }
        let archive = try String(contentsOf: har, encoding: .utf8)
        #expect(archive.contains("anything/me"))
        #expect(!archive.contains(key))
    }

    @Test("a scheme the app registers by name is used from a YAML definitions file, and only at trusted origins")
    func registeredScheme() async throws {
        let name = "sig-\(UUID().uuidString.prefix(8))"
        try AuthenticationSource.register(scheme: name) { source, environment throws(APIError) in
            Authentication(SignatureHeader(key: try source.secret(.token, environment: environment)))
        }
        let yaml = "DEFAULT:\n  authentication: {scheme: \(name.uppercased()), tokenEnvironment: SIG_KEY}\nMe:\n  path: /headers\n  needsAuthorization: true\n"
        let source = try #require(try APIDefinitions(data: Data(yaml.utf8), format: .yaml).authenticationSource)
        #expect(source.scheme == AuthenticationSource.Scheme(rawValue: name))
        let missing = try #require(throws: APIError.self) { try source.authentication(environment: [:]) }
        #expect(missing.code == .authentication)
        #expect(missing.message.contains("SIG_KEY"))
        let authentication = try source.authentication(environment: ["SIG_KEY": "s3"])

        try await TestServer.withRunning { other in
            try await withServer(definitions: yamlDefinitions(yaml), configure: { $0.authentication = authentication }) { server, client in
                _ = try await client.call("Me")
                #expect(server.requests.last?.header("X-Sig") == "sig-s3")
                var elsewhere = Request.get(other.url("/headers").absoluteString)
                elsewhere.needsAuthorization = true
                _ = try await client.send(elsewhere)
                #expect(other.requests.last?.header("X-Sig") == nil)
            }
        }
        #expect(throws: APIError.self) { try AuthenticationSource.register(scheme: "Bearer") { _, _ in .bearer("x") } }
        #expect(throws: APIError.self) { try AuthenticationSource.register(scheme: "two words") { _, _ in .bearer("x") } }
    }

    @Test("an unknown scheme name is a load error naming the known ones; a bad apiKey names the key and line")
    func loadErrors() throws {
        func failure(_ authentication: String) throws -> APIError {
            let yaml = "# credentials\nDEFAULT:\n  authentication: \(authentication)\n"
            let error = try #require(throws: APIError.self) { try APIDefinitions(data: Data(yaml.utf8), format: .yaml) }
            #expect(error.code == .invalidDefinition)
            #expect(error.key == "authentication")
            #expect(error.message.contains("DEFAULT"))
            #expect(error.message.contains("line 3"))
            return error
        }
        let unknown = try failure("{scheme: digest, tokenEnvironment: T}")
        #expect(unknown.message.contains("\"digest\" is unknown"))
        #expect(unknown.message.contains("bearer, basic, authorization, apiKey"))
        #expect(try failure("{scheme: apikye, in: header, name: X-Key, tokenEnvironment: T}").message.contains("did you mean \"apiKey\""))
        #expect(try failure("{scheme: apiKey, in: body, name: X-Key, tokenEnvironment: T}").message.contains("header, query or cookie"))
        #expect(try failure("{scheme: apiKey, name: X-Key, tokenEnvironment: T}").message.contains("needs in"))
        #expect(try failure("{scheme: apiKey, in: header, name: \"X Key\", tokenEnvironment: T}").message.contains("not a valid header name"))
        #expect(try failure("{scheme: apiKey, in: header, name: X-Key, tokenEnviroment: T}").message.contains("did you mean \"tokenEnvironment\""))
        let secret = try failure("{scheme: apiKey, in: query, name: k, key: hunter2}")
        #expect(!secret.message.contains("hunter2"))
    }
}
