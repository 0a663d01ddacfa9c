import Callsign
import CallsignTesting
import Foundation
import Testing

@Suite("APIDefinitions: loading and merging", .hangGuard)
struct APIDefinitionsTests {
    // MARK: - RFAPI's own document

    @Test("RFAPI's JSON document loads unchanged and merges over DEFAULT")
    func rfapiDocumentLoads() throws {
        let definitions = try APIDefinitions(contentsOf: Fixture.url("rfapi.json"))
        #expect(definitions.names == ["TopicListRecommended", "UserLogin"])

        let topics = try definitions.definition(named: "TopicListRecommended")
        #expect(topics.baseURL == URL(string: "https://example.com/"))
        #expect(topics.pathPrefix == "api/v2/")
        #expect(topics.method == .get)
        #expect(topics.needsAuthorization == true)
        #expect(topics.responseType == .objects)
        #expect(topics.responseClass == "TopicEntity")

        let login = try definitions.definition(named: "UserLogin")
        #expect(login.method == .post)
        #expect(login.needsAuthorization == false)
        #expect(login.responseType == .object)
        #expect(definitions.warnings.isEmpty)
    }

    @Test("RFAPI's document builds the URL its cookbook describes")
    func rfapiURLRules() async throws {
        // Same document, pointed at the in-process server.
        try await TestServer.withRunning { server in
            var text = try String(contentsOf: Fixture.url("rfapi.json"), encoding: .utf8)
            text = text.replacingOccurrences(of: "https://example.com/", with: "\(server.baseURL.absoluteString)demo/")
            let definitions = try APIDefinitions(data: Data(text.utf8), format: .json)
            let client = APIClient(definitions: definitions)
            let response = try await client.call("TopicListRecommended", parameters: ["page": 1])
            #expect(response.request.url?.absoluteString == "\(server.baseURL.absoluteString)demo/api/v2/topics/recommended?page=1")
            #expect(try response.decode([Topic].self).count == 20)
        }
    }

    @Test("an RFAPI property list loads, with serializer names and its numeric cache policy")
    func rfapiPlist() throws {
        let definitions = try APIDefinitions(contentsOf: Fixture.url("APIDefine.plist"))
        let upload = try definitions.definition(named: "FormUpload")
        #expect(upload.contentType == .formURLEncoded)
        #expect(upload.responseType == .void)
        #expect(upload.notes == "Uploads a form.")
        #expect(upload.headers?["X-App"] == "demo")
        #expect(upload.needsAuthorization == true)
        #expect(upload.cachePolicy == .returnCacheElseLoad)  // RFAPI's 2, "always"
        #expect(upload.recognizedButUnused == nil)
        #expect(definitions.warnings.isEmpty)
    }

    @Test("camelCase YAML loads with headers, status codes, timeout and tags")
    func camelCaseYAML() throws {
        let definitions = try APIDefinitions(contentsOf: Fixture.url("api.yaml"))
        let profile = try definitions.definition(named: "UserProfile")
        #expect(profile.path == "user/{user_id}/profile")
        #expect(profile.responseType == .object)
        #expect(profile.tag == "accounts")
        #expect(profile.timeout == .seconds(15))
        #expect(profile.acceptedStatusCodes?.contains(304) == true)
        #expect(profile.acceptedStatusCodes?.contains(404) == false)
        #expect(profile.headers?["Accept"] == "application/json")

        // A definition's own header set replaces the default's whole (RFAPI's rule).
        let login = try definitions.definition(named: "UserLogin")
        #expect(login.method == .post)
        #expect(login.contentType == .formURLEncoded)
        #expect(login.headers?["X-Login"] == "1")
        #expect(login.headers?["Accept"] == nil)
    }

    @Test("the same definitions load from JSON, plist and YAML alike")
    func formatsAgree() throws {
        let values: [String: JSONValue] = [
            "DEFAULT": ["baseURL": "https://example.com/v1/", "method": "GET"],
            "Thing": ["path": "things/{id}", "responseType": "object", "timeout": 2.5],
        ]
        let json = JSONValue.object(values).description
        let yaml = """
            DEFAULT:
              baseURL: https://example.com/v1/
              method: GET
            Thing:
              path: things/{id}
              responseType: object
              timeout: 2.5
            """
        let plistData = try PropertyListSerialization.data(
            fromPropertyList: [
                "DEFAULT": ["baseURL": "https://example.com/v1/", "method": "GET"],
                "Thing": ["path": "things/{id}", "responseType": "object", "timeout": 2.5],
            ] as [String: Any], format: .xml, options: 0)
        let loaded = [
            try APIDefinitions(data: Data(json.utf8), format: .json),
            try APIDefinitions(data: Data(yaml.utf8), format: .yaml),
            try APIDefinitions(data: plistData, format: .plist),
            try APIDefinitions(values: values),
        ]
        for definitions in loaded {
            let thing = try definitions.definition(named: "Thing")
            #expect(thing.baseURL?.absoluteString == "https://example.com/v1/")
            #expect(thing.timeout == .milliseconds(2500))
            #expect(thing.responseType == .object)
        }
    }

    @Test("definitions built in code merge field by field; parameters merge per name")
    func inCode() throws {
        var defaults = APIDefinition(baseURL: URL(string: "https://example.com/"), method: .get)
        defaults.parameters = ["lang": "en", "v": 1]
        var search = APIDefinition(name: "Search", path: "search")
        search.parameters = ["v": 2]
        let definitions = try APIDefinitions(default: defaults, [search])
        let merged = try definitions.definition(named: "Search")
        #expect(merged.parameters == ["lang": "en", "v": 2])
        let request = merged.request(parameters: ["q": "x", "lang": "de"])
        #expect(request.parameters == ["lang": "de", "v": 2, "q": "x"])
    }

    @Test("a named definition follows later changes to DEFAULT and replacements by add(_:)")
    func defaultChangedLater() throws {
        var definitions = try APIDefinitions([APIDefinition(name: "Item", path: "items/1")])
        #expect(definitions["Item"]?.baseURL == nil)
        definitions.defaultDefinition.baseURL = URL(string: "https://example.com/v2/")
        definitions.defaultDefinition.timeout = .seconds(5)
        let item = try definitions.definition(named: "Item")
        #expect(item.baseURL?.absoluteString == "https://example.com/v2/")
        #expect(item.timeout == .seconds(5))
        #expect(item.path == "items/1")
        try definitions.add(APIDefinition(name: "Item", path: "items/2", method: .post))
        #expect(definitions["Item"]?.path == "items/2")
        #expect(definitions["Item"]?.method == .post)
        #expect(definitions["Item"]?.baseURL?.absoluteString == "https://example.com/v2/")
        // The definitions as written stay unmerged.
        #expect(definitions.definitions["Item"]?.baseURL == nil)
    }

    // MARK: - Bad input

    @Test("a JSON syntax error names the line")
    func jsonSyntaxError() throws {
        let text = "{\n  \"A\": {\n    \"path\": \"a\",\n    oops\n  }\n}"
        let error = try #require(throws: APIError.self) { try APIDefinitions(data: Data(text.utf8), format: .json) }
        #expect(error.code == .invalidDefinition)
        #expect(error.message.contains("line 4"))
    }

    @Test("a YAML value has the type its spelling gives it: plain words are text, quoted or tagged values are text, numbers, Booleans and null are read")
    func yamlScalarTypes() throws {
        let yaml = """
            Thing:
              path: things
              parameters:
                word: object
                quoted: "12"
                single: 'yes'
                tagged: !!str 5
                int: 12
                negative: -3
                hex: 0x1F
                underscored: 1_000
                float: 1.5
                exponent: 1e3
                leadingDot: .5
                infinity: .inf
                yes: yes
                on: on
                off: Off
                true: TRUE
                tilde: ~
                null: Null
                empty:
                date: 2001-12-14
                dash: -x
                merge: <<
                almost: nullx
                sentence: yes it is
            """
        let parameters = try #require(try APIDefinitions(data: Data(yaml.utf8), format: .yaml).definition(named: "Thing").parameters)
        let expected: [String: JSONValue] = [
            "word": "object", "quoted": "12", "single": "yes", "tagged": "5", "int": 12, "negative": -3, "hex": 31, "underscored": 1000,
            "float": 1.5, "leadingDot": 0.5, "infinity": ".inf", "yes": true, "on": true, "off": false, "true": true,
            "tilde": .null, "null": .null, "empty": .null, "date": "2001-12-14", "dash": "-x", "merge": "<<", "almost": "nullx",
            "sentence": "yes it is",
        ]
        for (name, value) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(parameters[name] == value, "\(name): \(String(describing: parameters[name]))")
        }
        #expect(parameters["exponent"]?.description == "1e3")  // a number, exactly as written
    }

    @Test("a YAML syntax error names the line")
    func yamlSyntaxError() throws {
        let text = "A:\n  path: a\n  method: [GET\nB:\n  path: b\n"
        let error = try #require(throws: APIError.self) { try APIDefinitions(data: Data(text.utf8), format: .yaml) }
        #expect(error.code == .invalidDefinition)
        #expect(error.message.contains("line"))
    }

    @Test("an unknown key names the API, the key, the line and a near match")
    func unknownKey() throws {
        let text = "DEFAULT:\n  baseURL: https://example.com/\nUserLogin:\n  path: user/login\n  mehtod: POST\n"
        let error = try #require(throws: APIError.self) { try APIDefinitions(data: Data(text.utf8), format: .yaml) }
        #expect(error.code == .invalidDefinition)
        #expect(error.apiName == "UserLogin")
        #expect(error.key == "mehtod")
        #expect(error.line == 5)
        #expect(error.message.contains("did you mean \"method\""))
    }

    @Test("a value of the wrong type names API, key and line in JSON too")
    func wrongType() throws {
        let text = """
            {
              "DEFAULT": { "Base": "https://example.com/" },
              "UserLogin": {
                "Path": "user/login",
                "Authorization": "yes please"
              }
            }
            """
        let error = try #require(throws: APIError.self) { try APIDefinitions(data: Data(text.utf8), format: .json) }
        #expect(error.apiName == "UserLogin")
        #expect(error.key == "Authorization")
        #expect(error.line == 5)
        #expect(error.message.contains("must be true or false"))
    }

    @Test(
        "bad values are refused with a reason",
        arguments: [
            ("path: user/{user_id/profile", "never closed"),
            ("path: user/user_id}/profile", "no matching"),
            ("path: user/{}/profile", "empty placeholder"),
            ("method: GTE", "not an HTTP method"),
            ("baseURL: https://example.com/base", "does not end in"),
            ("baseURL: ftp://example.com/", "http://, https://, http+unix://, ws:// or wss://"),
            ("responseType: lots", "not a response type"),
            ("acceptedStatusCodes: [200, 999]", "status codes"),
            ("timeout: -1", "more than 0"),
            ("headers: {X-Bad: [1, 2]}", "must be a string"),
            ("contentType: pigeon", "not a content type"),
        ])
    func badValues(line: String, reason: String) throws {
        let text = "Broken:\n  \(line)\n"
        let error = try #require(throws: APIError.self) { try APIDefinitions(data: Data(text.utf8), format: .yaml) }
        #expect(error.code == .invalidDefinition)
        #expect(error.apiName == "Broken")
        #expect(error.message.contains(reason), "\(error.message)")
    }

    @Test("a file that is not a dictionary, or of unknown format, is refused")
    func notADictionary() throws {
        #expect(throws: APIError.self) { try APIDefinitions(data: Data("[1, 2]".utf8), format: .json) }
        #expect(throws: APIError.self) { try APIDefinitions(data: Data("- a\n- b\n".utf8), format: .yaml) }
        #expect(throws: APIError.self) { try APIDefinitions(data: Data("not a plist".utf8), format: .plist) }
        let error = try #require(throws: APIError.self) {
            try APIDefinitions(contentsOf: URL(fileURLWithPath: "/tmp/api.txt"))
        }
        #expect(error.message.contains("cannot tell the format"))
        let missing = try #require(throws: APIError.self) {
            try APIDefinitions(contentsOf: URL(fileURLWithPath: "/nonexistent/api.json"))
        }
        #expect(missing.message.contains("cannot be read"))
    }

    @Test("an unknown API name lists near matches")
    func unknownAPI() throws {
        let definitions = try APIDefinitions(contentsOf: Fixture.url("rfapi.json"))
        let error = try #require(throws: APIError.self) { try definitions.definition(named: "UserLgin") }
        #expect(error.code == .unknownAPI)
        #expect(error.message.contains("\"UserLogin\""))
        let none = try #require(throws: APIError.self) { try definitions.definition(named: "Zzzzzzzzzzzz") }
        #expect(!none.message.contains("did you mean"))
    }

    @Test("the DEFAULT definition names where credentials come from, never the secret")
    func authenticationSource() throws {
        let good = "DEFAULT:\n  authentication: {scheme: basic, userEnvironment: U, passwordEnvironment: P}\n"
        let definitions = try APIDefinitions(data: Data(good.utf8), format: .yaml)
        let source = try #require(definitions.authenticationSource)
        #expect(source.scheme == .basic)
        _ = try source.authentication(environment: ["U": "ann", "P": "pw"])
        let unset = try #require(throws: APIError.self) { try source.authentication(environment: ["U": "ann"]) }
        #expect(unset.message.contains("P"))

        for bad in [
            "DEFAULT:\n  authentication: {scheme: bearer, token: abc}\n",
            "DEFAULT:\n  authentication: {scheme: bearer}\n",
            "DEFAULT:\n  authentication: {scheme: digest, tokenEnvironment: T}\n",
            "Other:\n  authentication: {scheme: bearer, tokenEnvironment: T}\n",
        ] {
            let error = try #require(throws: APIError.self) { try APIDefinitions(data: Data(bad.utf8), format: .yaml) }
            #expect(error.key == "authentication")
            #expect(!error.message.contains("abc"))
        }
    }

    @Test("definitions load from a server, by content type or extension")
    func fetch() async throws {
        try await withServer { server, client in
            server.route("/api.yaml") { _ in
                .text("DEFAULT:\n  baseURL: \(server.baseURL.absoluteString)\nHealth:\n  path: get\n", contentType: "application/yaml")
            }
            server.route("/rules") { _ in .json(["Health": ["Path": "get", "Base": .string(server.baseURL.absoluteString)]]) }
            server.route("/rules.txt") { _ in .text("Health: {path: get}") }
            let yaml = try await APIDefinitions.fetch(from: server.url("/api.yaml"), using: client)
            #expect(yaml.names == ["Health"])
            let fromServer = APIClient(definitions: yaml, transport: client.transport)
            #expect(try await fromServer.call("Health").status == .ok)
            let json = try await APIDefinitions.fetch(from: server.url("/rules"), using: client)
            #expect(try json.definition(named: "Health").path == "get")
            let unknown = await apiError { _ = try await APIDefinitions.fetch(from: server.url("/rules.txt"), using: client) }
            #expect(unknown?.code == .invalidDefinition)
        }
    }

    @Test("retry and deadline load from a file and merge over DEFAULT")
    func retryFromFile() throws {
        let yaml = """
            DEFAULT:
              retry: 2
              deadline: 20
            Upload:
              path: upload
              retry: {attempts: 4, baseDelay: 0.25, statusCodes: ["500-504"], idempotencyKey: true, jitter: none}
            Plain:
              path: plain
            Never:
              path: never
              retry: false
            """
        let definitions = try APIDefinitions(data: Data(yaml.utf8), format: .yaml)
        let upload = try definitions.definition(named: "Upload").request()
        #expect(upload.retry?.maximumAttempts == 4)
        #expect(upload.retry?.baseDelay == .milliseconds(250))
        #expect(upload.retry?.retryableStatusCodes == [500, 501, 502, 503, 504])
        #expect(upload.retry?.addsIdempotencyKey == true)
        #expect(upload.retry?.jitter == RetryPolicy.Jitter.none)
        #expect(upload.deadline == .seconds(20))
        #expect(try definitions.definition(named: "Plain").retry?.maximumAttempts == 2)
        #expect(try definitions.definition(named: "Never").retry?.maximumAttempts == 1)
        let bad = try #require(throws: APIError.self) {
            try APIDefinitions(data: Data("A:\n  retry: {attempts: 0}\n".utf8), format: .yaml)
        }
        #expect(bad.message.contains("retry.attempts"))
    }

    @Test("definitions in code are checked too")
    func codeChecks() throws {
        #expect(throws: APIError.self) { try APIDefinitions([APIDefinition(path: "x")]) }
        #expect(throws: APIError.self) { try APIDefinitions([APIDefinition(name: "A", path: "a/{b")]) }
        #expect(throws: APIError.self) {
            try APIDefinitions(default: APIDefinition(baseURL: URL(string: "https://example.com/v1")), [])
        }
    }
}
