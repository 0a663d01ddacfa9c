import Callsign
import CallsignOpenAPI
import CallsignPostgres
import CallsignSQLite
import CallsignTesting
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Testing

// Every ```swift block of the README, written here inside the context it needs, so the compiler
// checks each one against the API (DocumentationSamplesTests runs the first ones against the
// test server). DocumentationClaimsTests checks that every block of the README appears in a
// *Samples.swift file line for line, its `import` lines aside (they are this file's): change the
// README and its sample together. Nothing here is run.

/// What the README's samples call but do not define: the app's own code.
enum ReadmeSamples {
    struct LoginResponse: Decodable, Sendable { let token: String }
    struct Pet: Decodable { let id: Int; let name: String }
    struct SessionTokens: TokenProvider {
        func initialToken() async throws -> AccessToken { AccessToken("t") }
        func refreshToken(replacing stale: AccessToken) async throws -> AccessToken { stale }
    }
    final class EventParser: Sendable { func feed(_ chunk: Data) {} }
    static func signedIn(_ session: LoginResponse) {}
    static func show(_ value: some Sendable) {}
    static func hideSpinner() {}
    static func showLogin() async {}
}

extension ReadmeSamples {
    // The introduction.
    static func firstCalls() async throws {
        let client = APIClient(configuration: .init { $0.baseURL = URL(string: "https://api.example.com/") })
        let board = try await client.get("boards/7").decode(Board.self)                                // GET, check, decode
        let created = try await client.post("boards").body(Board(title: "Balsa")).decode(Board.self)   // POST a JSON body
        _ = (board, created)
    }

    // Four ways to call.
    static func byBuilder(client: APIClient, roomID: String, traceID: String) async throws {
        let users = try await client.get("/v1/{room}/users").parameters(["room": .string(roomID)])
            .query(["page": 2]).header("X-Trace", traceID).tag("system1")
            .send().decode([User].self)
        _ = users
    }

    static func byEndpoint(client: APIClient) async throws {
        enum Boards: Endpoint {
            case show(id: Int)
            case create(title: String)

            static let baseURL = URL(string: "https://sharkywaters.com/api/")
            var request: Request {
                switch self {
                case .show(let id): .get("boards/{id}", parameters: ["id": .int(id)])
                case .create(let title): .post("boards", parameters: ["title": .string(title)])
                }
            }
            var acceptedStatusCodes: StatusCodes? { if case .create = self { [201] } else { nil } }
        }
        let board = try await client.send(Boards.show(id: 7)).validate().decode(Board.self)
        _ = board
    }

    static func byName() async throws {
        let client = APIClient(definitions: try APIDefinitions(contentsOf: URL(fileURLWithPath: "api.yaml")))
        let profile = try await client.call("UserProfile", parameters: ["user_id": 42], as: Profile.self)
        let topics = try await client.call("TopicListRecommended", parameters: ["page": 1, "page_size": 20],
                                           as: [Topic].self)
        _ = (profile, topics)
    }

    static func byCallbacks(client: APIClient, name: String, password: String) {
        client.request("UserLogin") { c in
            c.parameters = ["name": .string(name), "password": .string(password)]
            c.identifier = "login"; c.group = "account"; c.loadMessage = "Signing in…"
            c.success { (session: LoginResponse) in signedIn(session) }
            c.failure { error in show(error) }          // never called for cancellation
            c.finished { outcome in hideSpinner() }     // always, exactly once, last: .success, .failure or .cancelled
        }
        client.cancel(identifier: "login"); client.cancel(group: "account")
        client.request(Boards.show(id: 7)) { c in c.success { (board: Board) in show(board) } }   // endpoint values and requests too
    }

    // The cookbook.
    static func authentication(definitions: APIDefinitions, token: String) {
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.authentication = .bearer(token)                              // or .basic(username:password:)
            $0.authentication = .tokens(SessionTokens()) { _ in await showLogin() }
        })
        _ = client
    }

    static func retryAndDeadline() {
        let client = APIClient(configuration: .init {
            $0.retry = RetryPolicy(maximumAttempts: 4, baseDelay: .milliseconds(200))
            $0.timeouts = .init(attempt: .seconds(10), deadline: .seconds(30))   // per attempt; whole call
        })
        _ = client
    }

    static func httpCache(definitions: APIDefinitions, cachesFolder: URL) async throws {
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.cache = HTTPCache(storage: SQLiteCacheStorage(directory: cachesFolder))   // or .memory(byteBudget:)
        })
        let boards = try await client.call("Boards")
        print(boards.source)      // .network, then .cache while fresh, .revalidated after a 304
    }

    static func offlineQueue() async throws {
        let client = APIClient(configuration: .init { $0.offline.queue = SQLiteOfflineQueue(url: SQLiteOfflineQueue.defaultURL) })
        do {
            _ = try await client.post("notes").parameters(["text": "Wax the board"]).storePolicy(.offline).send()
        } catch {
            guard error.code == .queuedOffline else { throw error }
            print("queued as #\(error.queuedRequestID ?? 0)")   // sent by itself once the server answers again
        }
        for await event in client.drainEvents { print(event) }   // .item(…sent…), .drained
    }

    static func mocksAndRecordings(definitions: APIDefinitions, fixtures: URL, harFile: URL) throws {
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.mocks = Mocks(directory: fixtures) { request in
                switch request.apiName {
                case "UserProfile": .json(["id": 1, "name": "Ann"])
                case "Flaky": .sequence([.json([:], status: 503), .json(["ok": true])])
                default: nil                                            // a real request
                }
            }
            $0.observability.recorder = HARRecorder(fileURL: URL(fileURLWithPath: "session.har"))
        })
        // Later, the recording as fixtures:
        let archive = try HARReplay(contentsOf: harFile)
        let replay = APIClient(definitions: definitions, configuration: .init { $0.mocks = Mocks(replaying: archive) })
        _ = (client, replay)
    }

    static func transfers(client: APIClient, archiveURL: URL, photoURL: URL, parser: EventParser) async throws {
        // Downloads: streamed to a partial file, renamed into place when complete, resumed after an interruption.
        let response = try await client.download("Archive", parameters: ["id": 7], to: archiveURL)
        print(response.status.code)      // 206 when it continued a partial file

        // Uploads: a file streams from disk, and so do a multipart form's files (on URLSession a form
        // larger than 1 MiB goes through a private temporary file as it is made).
        var form = MultipartFormData()
        form.append(field: "title", value: "Holiday")
        form.append(fileAt: photoURL, name: "photo", mimeType: "image/jpeg")
        let upload = client.start(Request(method: .post, path: "photos", body: .multipart(form)))
        for await progress in upload.progress { print(progress.fraction ?? 0) }

        // Streams: the body as it arrives.
        for try await chunk in try await client.stream(.get("events")).chunks { parser.feed(chunk) }

        // Server-sent events: parsed as they arrive, reconnected with Last-Event-ID.
        for try await event in client.events(.get("prices")) { print(event.type, event.data) }
    }

    static func testingYourCode() async throws {
        try await TestServer.withRunning { server in      // 127.0.0.1, ephemeral port, stopped on every path
            server.route("/token") { _ in .json(["access_token": "t1"]) }
            let client = APIClient(configuration: .init { $0.baseURL = server.baseURL })
            _ = try await client.get("/anything/x").query(["q": "a&b"]).send()
            #expect(server.requests.last?.rawQuery == "q=a%26b")
        }
    }

    static func fleet(cacheKey: Data, logger: Logger, orderID: String) async throws {
        let postgres = PostgresClient(configuration: try PostgresURL.configuration("postgres://app@db.internal/shop"))
        let outbox = PostgresOfflineQueue(client: postgres)
        let client = APIClient(configuration: .init {
            $0.offline.queue = outbox
            $0.cache = HTTPCache(storage: PostgresCacheStorage(client: postgres, partitionKey: cacheKey))
        })
        // The order row and the "charge the card" call commit — or roll back — together.
        try await postgres.withTransaction(logger: logger) { connection in
            try await connection.query("INSERT INTO orders (id) VALUES (\(orderID))", logger: logger)
            try await outbox.enqueue(.post("charges", parameters: ["order": .string(orderID)]), from: client, on: connection)
        }
        // Every instance drains the outbox: woken by NOTIFY, FIFO per ordering key, graceful on SIGTERM.
        let group = ServiceGroup(services: [postgres, OutboxWorker(client: client)], gracefulShutdownSignals: [.sigterm], logger: logger)
        try await group.run()
    }

    // The reference.
    static func openAPIDocument() async throws {
        var petstore = try OpenAPIOperations(contentsOf: URL(fileURLWithPath: "petstore.yaml"))
        petstore.baseURL = URL(string: "https://staging.example.com/v1/")      // default: servers[0]
        let client = APIClient(definitions: petstore.definitions, configuration: OpenAPIOperations.clientConfiguration(.init()))
        let pet = try await client.send(petstore.request("showPetById", parameters: ["petId": 1])).decode(Pet.self)
        _ = pet
    }

    static func generatedClient(client: APIClient) async throws {
        let transport = CallsignClientTransport(client, policies: [
            "listPets": .cached(for: .seconds(60)),     // served from the cache for a minute
            "createOrder": .queuedOffline,              // queued with an Idempotency-Key when offline
        ])
        let petstore = Client(serverURL: try Servers.Server1.url(), transport: transport)
        let pets = try await petstore.listPets(query: .init(limit: 10)).ok.body.json
        _ = pets
    }

    static func configurationGroups() {
        let client = APIClient(configuration: .init {
            $0.baseURL = URL(string: "https://api.example.com/")
            $0.timeouts.attempt = .seconds(15)
            $0.responses.decoder.keyDecodingStrategy = .convertFromSnakeCase
            $0.tasks.concurrency = .limited(8)
            $0.observability.logger = Logger(label: "api")
        })
        _ = client
    }

    static func proxies() throws {
        var configuration = APIClient.Configuration()
        configuration.proxy = ProxySettings(all: try Proxy(url: "http://alice:s3cret@proxy.internal:3128"),
                                            bypass: ["localhost", ".internal"])
        let client = APIClient(configuration: try .environment())   // HTTP(S)_PROXY, ALL_PROXY, NO_PROXY as curl reads them
        _ = (configuration, client)
    }

    static func hostileInput() async throws {
        try await RawServer.withRunning([.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello")]) { server in
            let client = APIClient(configuration: .init { $0.baseURL = server.baseURL })
            await #expect(throws: APIError.self) { try await client.get("/x").send() }
        }
    }

    static func tls(privateCA: URL) throws {
        let client = try APIClient(configuration: .init {
            $0.tls.trustRoots = .adding(try TLSCertificate.load(pemFile: privateCA))
            $0.tls.pins = try CertificatePins(
                ["api.example.com": ["sha256/7HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=", "sha256/<backup key>"]],
                expires: Date(timeIntervalSinceNow: 86_400 * 365))
        })
        _ = client
    }
}
