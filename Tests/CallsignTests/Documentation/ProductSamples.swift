@testable import Callsign
import CallsignOpenAPI
import CallsignPostgres
import CallsignSQLite
import CallsignTesting
import Foundation
import Logging
import Metrics
import OpenAPIRuntime
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing
import Tracing

// Every ```swift block of the product catalogs (CallsignSQLite, CallsignPostgres, CallsignOpenAPI,
// CallsignTesting) and of the core articles Configuration, Observability, Cookies and proxies,
// written here inside the context it needs, so the compiler checks each one against the API.
// ArticleSamplesTests checks that every block appears in some *Samples.swift file line for line:
// change an article and its sample together. The suite at the end runs what the articles claim
// about behaviour.

// Observability.md
extension ProductSamples {
struct RetryReporter: CallObserver {
    func callWillRetry(_ call: ObservedCall, after report: AttemptReport) {
        print("\(call.apiName ?? "call"), attempt \(report.attempt): \(report.outcome); again in \(report.wait)")
    }
    func activeCallCountDidChange(_ count: Int) {
        Task { @MainActor in NetworkActivity.isVisible = count > 0 }
    }
}
}

/// Compiled, never run: each function holds the samples of one page.
enum ProductSamples {
    /// What the samples use but do not define: the app's own types.
    struct Pet: Decodable { let id: Int; let name: String }
    struct User: Decodable { let id: Int; let name: String }
    @MainActor enum NetworkActivity { static var isVisible = false }

    // MARK: CallsignSQLite.md

    static func sqlite(definitions: APIDefinitions, cachesFolder: URL) async throws {
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.offline.queue = SQLiteOfflineQueue(url: SQLiteOfflineQueue.defaultURL, maximumSize: 64 << 20)
            $0.cache = HTTPCache(storage: SQLiteCacheStorage(directory: cachesFolder, byteBudget: 128 << 20))
        })
        var order = Request.post("orders", parameters: ["sku": "B-42"])
        order.storePolicy = .offline
        do {
            _ = try await client.send(order)
        } catch {
            guard error.code == .queuedOffline else { throw error }
            print("queued as \(error.queuedRequestID ?? 0); sent by client.replay()")
        }
    }

    // MARK: CallsignPostgres.md

    static func postgres(definitions: APIDefinitions, cacheKey: Data, orderID: String, logger: Logger) async throws {
        let postgres = PostgresClient(configuration: try PostgresURL.configuration("postgres://app@db.internal/shop?sslmode=require"))
        let outbox = PostgresOfflineQueue(client: postgres)
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.offline.queue = outbox
            $0.cache = HTTPCache(storage: PostgresCacheStorage(client: postgres, partitionKey: cacheKey, unlogged: true))
        })
        let worker = OutboxWorker(client: client, concurrency: 8)
        let group = ServiceGroup(services: [postgres, worker], gracefulShutdownSignals: [.sigterm], logger: logger)
        try await group.run()

        try await postgres.withTransaction(logger: logger) { connection in
            try await connection.query("INSERT INTO orders (id) VALUES (\(orderID))", logger: logger)
            try await outbox.enqueue(.post("charges", parameters: ["order": .string(orderID)]), from: client, on: connection)
        }
    }

    // MARK: CallsignTesting.md

    static func testing() async throws {
        try await TestServer.withRunning { server in
            server.route("/v1/me") { _ in .json(["id": 1, "name": "Ann"]) }
            let client = APIClient(configuration: .init { $0.baseURL = server.baseURL })
            let user = try await client.get("v1/me").header("X-App", "surf").decode(User.self)
            #expect(user.name == "Ann")
            #expect(server.requests.last?.header("X-App") == "surf")
            #expect(server.hits("/v1/me") == 1)
        }
    }

    // MARK: CallsignOpenAPI.md and OpenAPI.md

    static func openAPIOverview() async throws {
        var petstore = try OpenAPIOperations(contentsOf: URL(fileURLWithPath: "petstore.yaml"))
        petstore.baseURL = URL(string: "https://staging.example.com/v1/")   // default: the document's first server
        let client = APIClient(definitions: petstore.definitions, configuration: OpenAPIOperations.clientConfiguration(.init()))
        let pet = try await client.send(petstore.request("showPetById", parameters: ["petId": 1])).decode(Pet.self)
        _ = pet
    }

    static func openAPIDefinitions() async throws {
        let api = try OpenAPIOperations(contentsOf: URL(fileURLWithPath: "petstore.yaml"))
        let client = APIClient(definitions: api.definitions, configuration: OpenAPIOperations.clientConfiguration(.init()))
        let request = try api.request("findPets", parameters: ["limit": 20, "tags": ["cat", "dog"]])
        let pets = try await client.send(request).decode([Pet].self)
        _ = pets
    }

    static func openAPICredentials(api: OpenAPIOperations, apiKey: String) throws {
        let client = try APIClient(definitions: api.definitions, configuration: OpenAPIOperations.clientConfiguration(.init {
            $0.authentication = try api.authentication(scheme: "api_key", secret: apiKey)
            $0.responses.validators = [api.responseValidator]
        }))
        _ = client
    }

    static func openAPIStrict(yaml: Data) throws {
        let lenient = try OpenAPIOperations(data: yaml, format: .yaml)
        for warning in lenient.warnings { print("warning:", warning) }
        _ = try OpenAPIOperations(data: yaml, format: .yaml, strict: true)   // refuses the document, listing every deviation
    }

    static func openAPICache() throws {
        let caches = try FileManager.default.url(for: .cachesDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
        let api = try OpenAPIOperations(
            contentsOf: URL(fileURLWithPath: "openai.yaml"),
            cache: DescriptionCache(directory: caches.appendingPathComponent("descriptions")))
        _ = api
    }

    static func openAPIEvents(client: APIClient, api: OpenAPIOperations) async throws {
        for try await event in try client.events("streamPrices", parameters: ["symbol": "AAPL"]) {
            print(event.data)
        }
        let completion = try api.request("createCompletion", parameters: ["prompt": "Hello", "stream": true])
        for try await event in client.events(completion, reconnecting: .never) {
            if event.data == "[DONE]" { break }
            print(event.data, terminator: "")
        }
    }

    static func generatedClient(token: String) async throws {
        let serverURL = try Servers.Server1.url()
        let callsign = APIClient(configuration: .init {
            $0.baseURL = serverURL   // credentials go only to the client's own origins
            $0.authentication = .bearer(token)
            $0.cache = .memory()
        })
        let transport = CallsignClientTransport(callsign, policies: [
            "listPets": .cached(for: .seconds(60)),               // served from the cache for a minute
            "createPet": .queuedOffline,                          // queued with an Idempotency-Key when offline
            "showPetById": OperationPolicy(deadline: .seconds(5)),
        ])
        let petstore = Client(serverURL: serverURL, transport: transport)
        let pets = try await petstore.listPets(query: .init(limit: 10)).ok.body.json
        _ = pets

        do {
            _ = try await petstore.createPet(body: .json(.init(name: "Rex")))
        } catch let error as ClientError where error.apiError?.code == .queuedOffline {
            print("queued; sent when the server can be reached")
        }
    }

    // MARK: Configuration.md

    static func configuration(definitions: APIDefinitions) {
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.baseURL = URL(string: "https://api.example.com/v1/")
            $0.timeouts = .init(attempt: .seconds(15), deadline: .seconds(45))
            $0.retry = RetryPolicy(maximumAttempts: 5)
            $0.tasks.concurrency = .limited(8)
            $0.responses.decoder.keyDecodingStrategy = .convertFromSnakeCase
            $0.limits.maximumResponseBodySize = 8 << 20
        })
        let uploads = APIClient(definitions: definitions, configuration: client.configuration.with {
            $0.timeouts.attempt = .seconds(300)
        })
        _ = uploads
    }

    static func limits(apiFile: URL) throws {
        let strict = Limits {
            $0.maximumResponseBodySize = 4 << 20
            $0.maximumHeaderFieldCount = 100
            $0.maximumJSONDepth = 64
        }
        let client = APIClient(configuration: .init { $0.limits = strict })
        let definitions = try APIDefinitions(contentsOf: apiFile, limits: strict)
        _ = (client, definitions)
    }

    // MARK: Observability.md

    static func observability(definitions: APIDefinitions, metricsFactory: any MetricsFactory, tracer: any Tracer) async throws {
        var logger = Logger(label: "api")
        logger.logLevel = .debug   // swift-log starts at .info, and Callsign logs calls at .debug and .trace
        let client = APIClient(definitions: definitions, configuration: .init { $0.observability.logger = logger })

        var traced = Logger(label: "api.checkout")
        traced.logLevel = .trace
        var request = Request.post("checkout", parameters: ["cart": 42])
        request.logger = traced
        _ = try await client.send(request)

        var configuration = APIClient.Configuration()
        configuration.observability.redaction.secretNameFragments.append("pin")   // X-Card-PIN, pin_code, …
        configuration.observability.redaction.publicNames.insert("sort_key")      // contains "key", but is not a secret here

        do {
            let client = APIClient(definitions: definitions, configuration: .init {
                $0.observability.metricsFactory = metricsFactory   // else the factory bootstrapped in MetricsSystem
                $0.observability.tracer = tracer                   // else the tracer bootstrapped in InstrumentationSystem
            })
            _ = client
        }
        do {
            let client = APIClient(configuration: .init { $0.observability.observers = [RetryReporter()] })
            _ = client
        }
    }

    // MARK: CookiesAndProxies.md

    static func cookieFile(definitions: APIDefinitions, cookiesFile: URL) throws {
        let client = try APIClient(definitions: definitions, configuration: .init {
            $0.cookies = try CookieJar(fileURL: cookiesFile)   // or CookieJar(): in memory only
        })
        _ = client
    }

    static func cookies(definitions: APIDefinitions, password: String) async throws {
        let jar = CookieJar()
        let client = APIClient(definitions: definitions, configuration: .init { $0.cookies = jar })
        _ = try await client.call("SignIn", parameters: ["user": "ann", "password": .string(password)])
        print(jar.all().map(\.name))   // ["session"]
        jar.removeAll()                // signing out: the file's cookies go too
    }

    static func proxies(definitions: APIDefinitions) throws {
        let client = try APIClient(definitions: definitions, configuration: .init {
            $0.proxy = ProxySettings(all: try Proxy(url: "http://alice:s3cret@proxy.internal:3128"), bypass: ["localhost", ".internal"])
        })
        let fromEnvironment = APIClient(definitions: definitions, configuration: try .environment())
        _ = (client, fromEnvironment)
    }
}

/// What the product catalogs and the core articles claim about behaviour, run.
@Suite("Documentation: what the product and configuration articles claim", .hangGuard)
struct ProductDocumentationTests {
    /// Counts what reaches it. Its level starts at `info`, as swift-log's own handlers' do;
    /// the `Logger` holding it sets it.
    private struct CountingHandler: LogHandler {
        final class Lines: Sendable { let values = Mutex<[String]>([]) }
        let lines = Lines()
        var logLevel: Logger.Level = .info
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { lines.values.withLock { $0.append("\(event.level) \(event.message)") } }
    }

    @Test("Observability: a Logger left at swift-log's default level (info) shows nothing of a call; at debug it does")
    func loggerLevel() async throws {
        // swift-log's own default handler starts at info.
        #expect(Logger(label: "api", factory: { StreamLogHandler.standardOutput(label: $0) }).logLevel == .info)
        try await TestServer.withRunning { server in
            let quiet = CountingHandler()
            let quietClient = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.retry = .none
                $0.observability.logger = Logger(label: "api") { _ in quiet }
            })
            _ = try await quietClient.get("get").send()
            _ = await #expect(throws: APIError.self) { try await quietClient.get("misbehave/close").send() }
            #expect(quiet.lines.values.withLock { $0 }.isEmpty)

            let loud = CountingHandler()
            var loudLogger = Logger(label: "api") { _ in loud }
            loudLogger.logLevel = .debug
            let loudClient = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.retry = .none
                $0.observability.logger = loudLogger
            })
            _ = try await loudClient.get("get").send()
            _ = await #expect(throws: APIError.self) { try await loudClient.get("misbehave/close").send() }
            let lines = loud.lines.values.withLock { $0 }
            #expect(lines.contains("debug sending attempt"), "\(lines)")
            #expect(lines.contains("debug request finished"), "\(lines)")
            #expect(lines.contains("debug request failed"), "\(lines)")
        }
    }

    @Test("The pipeline diagram image names the pipeline table's stages, in its order")
    func pipelineImage() throws {
        let image = try String(
            contentsOf: MessageScanner.repository.appendingPathComponent("Sources/Callsign/Callsign.docc/Resources/pipeline.svg"), encoding: .utf8)
        let named = image.matches(of: /data-stage=['"]([^'"]+)['"]/).map { String($0.1) }
        #expect(named == PipelineTableTests.expected, "run scripts/charts to draw it again")
    }
}
