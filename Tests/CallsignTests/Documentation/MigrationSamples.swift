import Callsign
import CallsignOpenAPI
import Foundation
import Logging
import OpenAPIRuntime
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if os(Linux) || os(Android) || os(Windows)
import AsyncHTTPClient
#endif

// The ```swift blocks of the migration guides (Sources/Callsign/Callsign.docc/Migrating-from-*.md)
// that ArticleSamples.swift does not hold, each inside the context it needs, so the compiler
// checks them against the API. ArticleSamplesTests checks that every block of every article
// appears in a *Samples.swift file line for line: change a guide and its sample together.
// The other library's code in a guide is fenced as ```text and is not compiled.

/// What the guides' samples call but do not define: the app's own code.
private func alert(_ error: APIError) async {}
private func showQueuedBanner() {}

// Types the samples name.
extension MigrationSamples {
struct Repository: Decodable { let name: String }
struct NewOrder: Encodable { let sku: String }
struct Order: Decodable { let id: Int }
struct NewBoard: Encodable { let title: String }
struct Pet: Decodable { let id: Int; let name: String }

struct GitHubTokens: TokenProvider {
    func initialToken() async throws -> AccessToken { AccessToken("t") }
    func refreshToken(replacing stale: AccessToken) async throws -> AccessToken { AccessToken("t2") }
}
}

// Migrating-from-Malibu.md
extension MigrationSamples {
enum Account: Endpoint {
    case me
    static let baseURL = URL(string: "https://sharkywaters.com/api/")
    var request: Request {
        var request = Request.get("me")
        request.needsAuthorization = true
        return request
    }
}
}

// Migrating-from-APEReactiveNetworking.md
extension MigrationSamples {
enum UserAPI: Endpoint {
    case getUser(id: String)
    case updateUser(id: String, name: String)

    static let baseURL = URL(string: "https://api.apegroup.com/")
    var request: Request {
        var request: Request = switch self {
        case .getUser(let id): .get("users/{id}", parameters: ["id": .string(id)])
        case .updateUser(let id, let name): .post("users/{id}", parameters: ["id": .string(id), "name": .string(name)])
        }
        request.needsAuthorization = true
        return request
    }
    var acceptedStatusCodes: StatusCodes? { [200, 204] }
}
}

// Migrating-from-Moya.md
extension MigrationSamples {
enum ProfileTarget: Endpoint {
    case me
    static let baseURL = URL(string: "https://api.example.com/")
    var request: Request {
        var request = Request.get("me")
        request.needsAuthorization = true
        return request
    }
}
}

/// Compiled, never run: each function holds samples of one guide.
enum MigrationSamples {
    // MARK: Migrating-from-Get.md

    static func getFirstCall() async throws {
        let client = APIClient(configuration: .init { $0.baseURL = URL(string: "https://api.github.com/") })
        let user = try await client.get("/user").decode(User.self)
        _ = user
    }

    static func getCommonTasks(client: APIClient, traceID: String, archiveURL: URL) async throws {
        let repositories = try await client.get("/user/repos").query(["sort": "updated"])
            .header("X-Trace", traceID).decode([Repository].self)

        try await client.post("/user/emails").body(["octocat@github.com"]).send().validate()

        let archive = try await client.download(.get("/repos/kean/Get/zipball"), to: archiveURL)
        print(archive.status.code)   // 206 when it continued a partial file
        _ = repositories
    }

    static func getDelegate() async throws {
        let client = APIClient(configuration: .init {
            $0.baseURL = URL(string: "https://api.github.com/")
            $0.authentication = .tokens(GitHubTokens())
            $0.retry = RetryPolicy(maximumAttempts: 2)
        })
        let me = try await client.get("/user").decode(User.self)   // the base URL's origin: token sent
        _ = me
    }

    static func getDefaults() {
        let client = APIClient(configuration: .init {
            $0.baseURL = URL(string: "https://api.github.com/")
            $0.responses.decoder.dateDecodingStrategy = .iso8601
            $0.encoder.dateEncodingStrategy = .iso8601
            $0.headers["Accept"] = "application/json"
        })
        _ = client
    }

    // MARK: Migrating-from-AsyncHTTPClient.md

    static func asyncHTTPClientFirstCall() async throws {
        let client = APIClient(configuration: .init { $0.baseURL = URL(string: "https://api.example.com/") })
        let order = try await client.post("orders").body(NewOrder(sku: "B-42")).timeout(.seconds(30))
            .decode(Order.self)
        _ = order
    }

    static func asyncHTTPClientTransfers(client: APIClient, handle: FileHandle, archiveURL: URL) async throws {
        let export = try await client.stream(.get("exports/today.csv"))
        for try await chunk in export.chunks { try handle.write(contentsOf: chunk) }

        let archive = try await client.download(.get("exports/archive.zip"), to: archiveURL)
        _ = archive
    }

    static func asyncHTTPClientConfiguration(logger: Logger) {
        let client = APIClient(configuration: .init {
            $0.baseURL = URL(string: "https://api.example.com/")
            $0.timeouts = .init(attempt: .seconds(30), deadline: .seconds(90), idle: .seconds(20))
            $0.redirects = RedirectPolicy(maximumHops: 3)
            $0.limits.maximumResponseBodySize = 8 << 20
            $0.acceptLanguage = .none
            $0.observability.logger = logger
        })
        _ = client
    }

    static func asyncHTTPClientBorrowed(configuration: APIClient.Configuration) {
        #if os(Linux) || os(Android) || os(Windows)
        var settings = HTTPClient.Configuration()
        settings.redirectConfiguration = .disallow
        settings.decompression = .disabled
        let httpClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: settings)
        let client = APIClient(configuration: configuration, transport: AsyncHTTPClientTransport(client: httpClient))
        #endif
        #if os(Linux) || os(Android) || os(Windows)
        _ = client
        #endif
    }

    // MARK: Migrating-from-URLSession.md

    static func urlSessionFirstCall() async throws {
        let client = APIClient(configuration: .init { $0.baseURL = URL(string: "https://api.example.com/") })
        let board = try await client.post("boards").body(NewBoard(title: "Balsa")).decode(Board.self)
        _ = board
    }

    static func urlSessionCommonTasks(client: APIClient, archiveURL: URL, csvURL: URL) async throws {
        let page = try await client.get("boards").query(["page": 2, "sort": "title"]).decode([Board].self)
        let logo = try await client.get("boards/7/logo.png").send().validate().data()

        let download = client.startDownload(.get("exports/archive.zip"), to: archiveURL)
        for await progress in download.progress { print(progress.fraction ?? 0) }

        let upload = try await client.send(Request(method: .put, path: "exports/today.csv", body: .file(csvURL, contentType: "text/csv")))
        _ = (page, logo, upload)
    }

    static func urlSessionConfiguration(configuration: APIClient.Configuration) {
        let sessionConfiguration = URLSessionConfiguration.default
        sessionConfiguration.httpMaximumConnectionsPerHost = 4
        let client = APIClient(configuration: configuration, transport: URLSessionTransport(configuration: sessionConfiguration))
        _ = client
    }

    // MARK: Migrating-from-swift-openapi-generator.md

    static func openAPIGeneratedClient(token: String) async throws {
        let serverURL = try Servers.Server1.url()
        let callsign = APIClient(configuration: .init {
            $0.baseURL = serverURL                    // the origin credentials may go to
            $0.authentication = .bearer(token)
        })
        let petstore = Client(serverURL: serverURL, transport: CallsignClientTransport(callsign))
        let pets = try await petstore.listPets(query: .init(limit: 10)).ok.body.json

        let transport = CallsignClientTransport(callsign, policies: [
            "listPets": .cached(for: .seconds(60)),      // served from the client's cache for a minute
            "createPet": .queuedOffline,                 // queued with an Idempotency-Key when offline
            "showPetById": OperationPolicy(retry: RetryPolicy.none, deadline: .seconds(5)),
        ])

        do {
            _ = try await petstore.createPet(body: .json(.init(name: "Rex")))
        } catch let error as ClientError where error.apiError?.code == .queuedOffline {
            showQueuedBanner()   // sent later by callsign.replay()
        }

        let mocked = APIClient(configuration: .init {
            $0.baseURL = serverURL
            $0.mocks = Mocks { request in
                request.apiName == "listPets" ? .json([["id": 1, "name": "Rex"]]) : nil
            }
        })
        _ = (pets, transport, mocked)
    }

    static func openAPIOperations(apiKey: String) async throws {
        var petstoreDocument = try OpenAPIOperations(contentsOf: URL(fileURLWithPath: "petstore.yaml"))
        petstoreDocument.baseURL = URL(string: "https://staging.example.com/v1/")   // default: servers[0]
        var configuration = OpenAPIOperations.clientConfiguration(.init())   // exploded query arrays as repeated keys
        configuration.authentication = try petstoreDocument.authentication(scheme: "api_key", secret: apiKey)
        let client = APIClient(definitions: petstoreDocument.definitions, configuration: configuration)
        let pet = try await client.send(petstoreDocument.request("showPetById", parameters: ["petId": 1])).decode(Pet.self)
        _ = pet
    }

    // MARK: Migrating-from-xAPI.md (inline code)

    static func xapiDeleteWithBody(client: APIClient) -> RequestBuilder {
        client.delete("boards").body(["ids": [1, 2]])
    }

    // MARK: Migrating-from-RFAPI.md

    static func rfapiDefaults(definitions: APIDefinitions) {
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.retry = .none                                     // RFAPI sent each request once
            $0.callbacks.errorHandler = { failure in             // RFAPI alerted when a call had no failure block
                if !failure.callHandlesFailure { await alert(failure.error) }
                return false
            }
        })
        _ = client
    }

    // MARK: Migrating-from-APEReactiveNetworking.md

    static func ape(token: String, installationID: String) async throws {
        let client = APIClient(configuration: .init {
            $0.authentication = .bearer(token)
            $0.timeouts.deadline = .seconds(10)   // APE's default abort-after
            $0.clientInfo = .automatic.with(vendorIdentifier: installationID)
        })
        let user = try await client.send(UserAPI.getUser(id: "42")).validate().decode(User.self)
        _ = user
    }
}
