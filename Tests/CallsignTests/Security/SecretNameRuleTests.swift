@testable import Callsign
import CallsignSQLite
import CallsignTesting
import Foundation
import Logging
import Testing

/// Secrets are recognised by a name rule, not a short list: `Private-Token`, `Api-Key`,
/// `X-Auth-Token` and their kin are masked, partition the cache and are never stored in clear.
@Suite("Secrets by name rule", .hangGuard)
struct SecretNameRuleTests {
    @Test("names with a secret fragment are secret in any case; known non-secrets are not")
    func rule() {
        let redaction = Redaction.default
        for name in ["Private-Token", "Api-Key", "X-Auth-Token", "X-Session-Id", "X-Signature", "Client-Credential", "X-Passwd", "apikey", "Set-Cookie", "OAUTH_NONCE", "my_secret"] {
            #expect(redaction.isSecretHeader(name), "\(name)")
            #expect(redaction.isSecret(queryName: name), "\(name)")
            #expect(redaction.isSecret(bodyField: name), "\(name)")
        }
        for name in ["Idempotency-Key", "Accept", "Content-Type", "author", "Keywords", "WWW-Authenticate", "X-Request-Id", "page"] {
            #expect(!redaction.isSecretHeader(name), "\(name)")
            #expect(!redaction.isSecret(queryName: name), "\(name)")
        }
        // Names are added exactly, fragments widen the rule, public names narrow it.
        var custom = Redaction.default
        custom.addSecretNames(["X-Tenant"])
        custom.secretNameFragments.append("pin")
        custom.publicNames.insert("x-session-id")
        #expect(custom.isSecretHeader("x-tenant") && custom.isSecret(queryName: "X-Tenant") && custom.isSecret(bodyField: "x-tenant"))
        #expect(custom.isSecret(bodyField: "card_pin"))
        #expect(!custom.isSecretHeader("X-Session-Id"))
        #expect(!Redaction.none.isSecretHeader("Private-Token"))
    }

    @Test("a fragment is found at the start, middle or end of a name, by its bytes: one letter short is no match, an empty fragment hides nothing, a non-ASCII one works")
    func fragmentsByBytes() {
        var redaction = Redaction.none
        redaction.secretNameFragments = ["token"]
        for name in ["token", "tokens", "x-token", "x-token-id", "xtoken", "accesstoken", "tok-token", "tootoken", "X-TOKEN"] {
            #expect(redaction.isSecretName(name), "\(name)")
        }
        for name in ["toke", "oken", "t0ken", "tok-en", "", "x", "tokk-oken"] {
            #expect(!redaction.isSecretName(name), "\(name)")
        }
        redaction.secretNameFragments = [""]
        #expect(!redaction.isSecretName("anything"))
        redaction.secretNameFragments = ["密码", "clé"]
        #expect(redaction.isSecretName("x-密码-hash") && redaction.isSecretName("ma-clé") && !redaction.isSecretName("x-密-码"))
        // A combining mark after a fragment's letters still counts: it only ever hides more.
        redaction.secretNameFragments = ["key"]
        #expect(redaction.isSecretName("x-key\u{0301}"))
    }

    @Test("two kinds of exception only: fields a standard defines as carrying no secret, and ordinary words that hold a fragment's letters")
    func principledExceptions() {
        let redaction = Redaction.default
        // Registered fields whose value is, by the standard's definition, not a credential.
        for name in [
            "Access-Control-Allow-Credentials", "access-control-allow-headers", "Access-Control-Request-Headers", "Proxy-Authenticate",
            "WWW-Authenticate", "Sec-WebSocket-Key", "Sec-WebSocket-Accept", "Idempotency-Key",
        ] {
            #expect(!redaction.isSecretHeader(name), "\(name)")
        }
        // Words split at -, _, ., :, spaces and where a lower-case letter meets a capital.
        for name in ["author", "X-Author-Id", "author_id", "bookAuthor", ":authority", "search.keywords", "Keyword", "tokenizer_version"] {
            #expect(!redaction.isSecretName(name), "\(name)")
            #expect(!redaction.isSecret(bodyField: name), "\(name)")
        }
        // A fragment outside the public words still counts, glued to a word or not.
        for name in [
            "author_token", "AuthorToken", "keyword-secret", "Authentication-Info", "Proxy-Authorization", "Access-Control-Token",
            "apikey", "accessToken", "sessionid", "OAuthToken", "authorkey", "Sec-WebSocket-Key-Secret",
        ] {
            #expect(redaction.isSecretHeader(name), "\(name)")
        }
        // Both lists are the user's to change.
        var custom = Redaction.default
        custom.publicWords.insert("monkey")
        custom.publicNames.remove("access-control-allow-credentials")
        #expect(!custom.isSecretName("monkey_id") && Redaction.default.isSecretName("monkey_id"))
        #expect(custom.isSecretHeader("Access-Control-Allow-Credentials"))
        custom.publicWords = []
        #expect(custom.isSecretName("author"))
    }

    @Test("a recording keeps Access-Control-Allow-Credentials and the challenges as the server sent them, and masks the session")
    func corsFieldsRecorded() async throws {
        let folder = Scratch.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let har = folder.appendingPathComponent("cors.har")
        try await TestServer.withRunning { server in
            server.route("/cors") { _ in
                ServerResponse(headers: [
                    ("Access-Control-Allow-Credentials", "true"), ("Access-Control-Allow-Headers", "Authorization, X-Api-Key"),
                    ("Proxy-Authenticate", #"Basic realm="proxy""#), ("X-Session-Token", "SENTINEL-session-8"),
                ])
            }
            let client = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.retry = .none
                $0.observability.recorder = HARRecorder(fileURL: har)
            })
            _ = try await client.get("cors").send()
        }
        let entries = try #require(try JSONValue(parsing: Data(contentsOf: har))["log"]?["entries"]?.arrayValue)
        let headers = try #require(entries.first?["response"]?["headers"]?.arrayValue)
        func value(_ name: String) -> String? { headers.first { $0["name"]?.stringValue == name }?["value"]?.stringValue }
        #expect(value("Access-Control-Allow-Credentials") == "true")
        #expect(value("Access-Control-Allow-Headers") == "Authorization, X-Api-Key")
        #expect(value("Proxy-Authenticate") == #"Basic realm="proxy""#)
        #expect(value("X-Session-Token") == "REDACTED")
    }

    @Test("a response to Private-Token: A is kept for A only, and no token reaches the file", arguments: CacheStorageKind.allCases)
    func cachePartition(kind: CacheStorageKind) async throws {
        let (storage, file) = kind.make()
        try await TestServer.withRunning { server in
            let client = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.retry = .none
                $0.cache = HTTPCache(storage: storage)
            })
            let path = "/cache/private/\(UUID().uuidString)"
            let alice = try await client.get(path).header("Private-Token", "alice-private-token-alice").send()
            let bob = try await client.get(path).header("Private-Token", "bob-private-token-bob").send()
            let aliceAgain = try await client.get(path).header("Private-Token", "alice-private-token-alice").send()
            #expect(try alice.json()["user"] == "alice")
            #expect(bob.source == .network)
            #expect(try bob.json()["user"] == "bob")
            #expect(aliceAgain.source == .cache)
            #expect(try aliceAgain.json()["user"] == "alice")
            #expect(server.hits(path) == 2)
            if let file {
                let bytes = Scratch.databaseBytes(file)
                #expect(bytes.range(of: Data("private-token-alice".utf8)) == nil)
                #expect(bytes.range(of: Data("private-token-bob".utf8)) == nil)
            }
        }
    }

    @Test("logs, cURL and HAR mask every name the rule catches, and keep Idempotency-Key")
    func outputs() async throws {
        let folder = Scratch.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let handler = CapturingLogHandler()
        let har = folder.appendingPathComponent("session.har")
        let secrets = ["SENTINEL-private-1", "SENTINEL-apikey-2", "SENTINEL-auth-3", "SENTINEL-session-4", "SENTINEL-query-5", "SENTINEL-body-6"]
        try await TestServer.withRunning { server in
            var logger = Logger(label: "rule") { _ in handler }
            logger.logLevel = .trace
            let client = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.retry = .none
                $0.observability.logger = logger
                $0.observability.recorder = HARRecorder(fileURL: har)
            })
            let builder = client.post("anything/echo?my_api_key=\(secrets[4])")
                .header("Private-Token", secrets[0]).header("Api-Key", secrets[1]).header("X-Auth-Token", secrets[2])
                .header("X-Session-Id", secrets[3]).header("Idempotency-Key", "visible-idempotency-key")
                .parameters(["passwd": .string(secrets[5]), "note": "hello"])
            let response = try await builder.send()
            #expect(String(decoding: response.body, as: UTF8.self).contains(secrets[0]), "the echo really carries the secret")
            let curl = try await client.curlCommand(for: builder.request).text
            #expect(curl.contains("visible-idempotency-key"))
            for secret in secrets { #expect(!curl.contains(secret), "cURL holds \(secret)") }
        }
        let logs = handler.lines.withLock { $0.joined(separator: "\n") }
        let archive = String(decoding: try Data(contentsOf: har), as: UTF8.self)
        for secret in secrets {
            #expect(!logs.contains(secret), "the logs hold \(secret)")
            #expect(!archive.contains(secret), "the HAR file holds \(secret)")
        }
        #expect(archive.contains("visible-idempotency-key"))
    }

    @Test("a request with Api-Key is never written to the offline queue")
    func offlineQueue() async throws {
        let folder = Scratch.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let queue = SQLiteOfflineQueue(url: folder.appendingPathComponent("queue.sqlite"))
        let client = APIClient(configuration: .init {
            $0.baseURL = URL(string: "http://127.0.0.1:9/")
            $0.offline.queue = queue
            $0.retry = .none
        })
        let error = await apiError {
            _ = try await client.post("http://127.0.0.1:9/notes").header("Api-Key", "SENTINEL-queue-7").storePolicy(.offline).send()
        }
        #expect(error?.code != .queuedOffline)
        #expect(error?.message.contains("Api-Key") == true, "\(error?.message ?? "")")
        #expect(try await queue.list(.pending).isEmpty)
        #expect(Scratch.databaseBytes(folder.appendingPathComponent("queue.sqlite")).range(of: Data("SENTINEL-queue-7".utf8)) == nil)
    }
}
