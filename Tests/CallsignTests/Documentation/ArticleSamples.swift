import Callsign
import CallsignSQLite
import Crypto
import Foundation
import HTTPTypes

// Every ```swift block of the DocC articles, written here inside the context it needs, so the
// compiler checks each one against the API. ArticleSamplesTests checks that every block of every
// article appears here line for line: change an article and its sample together.
// (Package manifest fragments, which start with `.package(`, are checked by SwiftPM instead.)

/// What the samples call but do not define: the app's own code.
private enum AppStubs {
    struct Keychain { func token() async throws -> AccessToken { AccessToken("t") } }
    struct Auth { func refresh(_ stale: AccessToken) async throws -> AccessToken { stale } }
}

private let keychain = AppStubs.Keychain()

/// The app's session store, as the Alamofire guide's scheme uses one.
struct SessionStore: Sendable {
    func current() async throws -> String { "t" }
    func refreshed() async throws -> String { "t2" }
}
private let auth = AppStubs.Auth()
private func showLogin() async {}
private func show(_ text: String) {}

// ThePipeline.md
extension ArticleSamples {
struct Timing: Middleware {
    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        let started = ContinuousClock.now
        defer { context.logger?.info("\(context.apiName ?? request.path) attempt \(context.attempt): \(ContinuousClock.now - started)") }
        return try await next(request)
    }
}

struct ExactBytes: WireMiddleware {
    func intercept(_ request: WireRequest, context: MiddlewareContext, next: WireNext) async throws -> TransportResponse {
        print(request.head.method, request.head.path ?? "", request.body?.count ?? 0, "bytes")
        let response = try await next(request)
        print(response.head.status, response.httpVersion)
        return response
    }
}
}

// SendingCredentials.md
extension ArticleSamples {
struct SessionTokens: TokenProvider {
    func initialToken() async throws -> AccessToken { try await keychain.token() }
    func refreshToken(replacing stale: AccessToken) async throws -> AccessToken { try await auth.refresh(stale) }
}
}

// Migrating-from-Alamofire.md
extension ArticleSamples {
struct DeviceHeader: Middleware {
    let deviceID: String
    func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
        var request = request
        request.headers["X-Device"] = deviceID
        return try await next(request)
    }
}

struct SessionScheme: AuthenticationScheme {
    let store: SessionStore
    func authorize(_ request: Request, context: MiddlewareContext) async throws -> Request {   // apply(_:to:)
        var request = request
        request.headers["Authorization"] = "Bearer \(try await store.current())"
        return request
    }
    func reauthorize(_ request: Request, after response: Response, context: MiddlewareContext) async throws -> Request? {
        guard response.status.code == 401 else { return nil }                                  // didRequest(…failDueToAuthenticationError:)
        var request = request
        request.headers["Authorization"] = "Bearer \(try await store.refreshed())"             // refresh(_:for:completion:)
        return request
    }
}
}

// Migrating-from-Moya.md
extension ArticleSamples {
enum Boards: Endpoint {
    case show(id: Int)
    static let baseURL = URL(string: "https://api.example.com/")
    var request: Request {
        switch self { case .show(let id): .get("boards/{id}", parameters: ["id": .int(id)]) }
    }
}
}

/// Compiled, never run: each function holds the samples of one article.
enum ArticleSamples {
    static func callsign(apiFile: URL) async throws {
        let client = APIClient(definitions: try APIDefinitions(contentsOf: apiFile))
        let profile = try await client.call("UserProfile", parameters: ["user_id": 42], as: Profile.self)
        _ = profile
    }

    static func gettingStarted() async throws {
        let client = APIClient(definitions: try APIDefinitions(contentsOf: URL(fileURLWithPath: "api.yaml")))
        let profile = try await client.call("UserProfile", parameters: ["user_id": 42], as: Profile.self)
        let topics = try await client.call("TopicListRecommended", parameters: ["page": 1, "page_size": 20],
                                           as: [Topic].self)
        _ = (profile, topics)
    }

    static func languages(definitions: APIDefinitions, userLocale: Locale) async {
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.locale = Locale(identifier: "zh-Hans")
        })
        do {
            _ = try await Task { try await client.call("UserProfile") }.value
        }
        catch let error as APIError {
            show(error.localizedMessage(in: userLocale))   // English or Simplified Chinese
        }
        catch {}
    }

    static func moya(client: APIClient) async throws {
        let board = try await client.send(Boards.show(id: 7)).validate().decode(Board.self)
        _ = board
    }

    static func rfapi() throws {
        let client = APIClient(definitions: try APIDefinitions(contentsOf: Bundle.main.url(forResource: "APIDefine", withExtension: "plist")!))
        _ = client
    }

    static func xapi() async throws {
        let client = APIClient(configuration: .init {
            $0.responses.envelope = .standard
            $0.common.parameters = { tag in tag == "system1" ? ["app": "demo"] : [:] }
        })
        let user = try await client.get("/v1/me").tag("system1").decode(User.self)   // decodes "data"
        _ = user
    }

    static func offlineDrain(showQueuedBadge: (Int64?) -> Void) async throws {
        let client = APIClient(configuration: .init {
            $0.baseURL = URL(string: "https://notes.example.com/")
            $0.offline.queue = SQLiteOfflineQueue(url: SQLiteOfflineQueue.defaultURL)   // CallsignSQLite
        })
        do {
            _ = try await client.post("notes").parameters(["text": "Wax the longboard"]).storePolicy(.offline).send()
        } catch {
            guard error.code == .queuedOffline else { throw error }
            showQueuedBadge(error.queuedRequestID)   // it goes out by itself
        }
        var configuration = APIClient.Configuration()
        configuration.offline.drain = .automaticOnUnmeteredNetworks   // not over cellular or in Low Data Mode
        configuration.offline.drain = .manual                         // only replay() sends, as before
        client.pauseDrain()
        client.resumeDrain()
        for await event in client.drainEvents {
            switch event {
            case .item(let item): print(item.request.id, item.outcome)
            case .waiting(let origin, let retryIn): print("\(origin) is down; next try in \(retryIn)")
            case .drained: print("all sent")
            case .paused, .resumed: break
            }
        }
    }

    static func offlineQueue(accountID: Int) {
        var request = Request.post("accounts/\(accountID)/charges", parameters: ["amount": 1200])
        request.storePolicy = .offline
        request.orderingKey = "account-\(accountID)"   // one account's charges in order
        _ = request
    }

    static func retries() {
        let client = APIClient(configuration: .init {
            $0.retry = RetryPolicy(maximumAttempts: 4, baseDelay: .milliseconds(200))
            $0.timeouts = .init(attempt: .seconds(10), deadline: .seconds(30))   // per attempt; whole call
        })
        var configuration = APIClient.Configuration()
        configuration.timeouts.idle = .seconds(300)   // a feed that may be quiet for minutes
        let suggestions = AnyMiddleware { request, context, next in
            var context = context
            context.tightenDeadline(within: .milliseconds(300))   // never later than the call's own deadline
            return try await next(request, context: context)
        }
        _ = (client, configuration, suggestions)
    }

    static func credentials(definitions: APIDefinitions, token: String) {
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.authentication = .bearer(token)                  // or .basic(username:password:), .authorization(_:)
        })
        var configuration = APIClient.Configuration()
        configuration.authentication = .tokens(SessionTokens()) { _ in await showLogin() }
        _ = (client, configuration)
    }

    static func tls(privateCA: URL, certificate: String, key: String, currentKeyPin: String, backupKeyPin: String, pinsExpire: Date) throws {
        let client = try APIClient(configuration: .init {
            $0.tls.trustRoots = .adding(try TLSCertificate.load(pemFile: privateCA))
            $0.tls.clientIdentity = try TLSClientIdentity(certificatePEM: certificate, privateKeyPEM: key)
            $0.tls.pins = try CertificatePins(["api.example.com": [currentKeyPin, backupKeyPin]], expires: pinsExpire)
        })
        _ = client
    }

    static func pkcs12(identityFile: URL, password: String) throws {
        let configuration = try APIClient.Configuration {
            $0.tls.clientIdentity = try .load(pkcs12File: identityFile, password: password)   // the app's client.p12
        }
        _ = configuration
    }

    // Observability.md
    static func phaseTimings(client: APIClient) async throws {
        let response = try await client.call("User", parameters: ["id": 7])
        let timings = response.timings
        print(timings.connect ?? .zero, timings.firstByte ?? .zero, timings.complete ?? .zero)
        print(timings.reusedConnection == true ? "kept-alive" : "new or unknown", response.httpVersion)
    }

    static func caching(cachesFolder: URL) async throws {
        let client = APIClient(configuration: .init {
            $0.cache = HTTPCache(storage: SQLiteCacheStorage(directory: cachesFolder))   // or .memory(byteBudget:)
        })
        let response = try await client.call("Boards")
        print(response.source)   // network, cache, revalidated, staleCache or staleWhileRevalidating
    }

    static func alamofire(deviceID: String, store: SessionStore) {
        let client = APIClient(configuration: .init {
            $0.middlewares = [DeviceHeader(deviceID: deviceID)]
            $0.retry = RetryPolicy(maximumAttempts: 3)   // what `retry(_:for:dueTo:completion:)` decided by hand
        })
        var configuration = APIClient.Configuration()
        configuration.authentication = Authentication(SessionScheme(store: store))
        _ = (client, configuration)
    }

    static func pipeline(definitions: APIDefinitions, key: SymmetricKey) {
        let client = APIClient(definitions: definitions, configuration: .init {
            $0.middlewares = [.changingRequest { $0.adding(parameters: ["app": "surf"]) }]   // first, on every call
            $0.insert(Timing(), after: .retry)                                               // every attempt
        })
        var configuration = APIClient.Configuration()
        configuration.wireMiddlewares = [ExactBytes(), .changingHead { head in var head = head; head.headerFields[.userAgent] = "surf/2"; return head }]
        configuration.insert(ExactBytes(), before: .transport)   // below the mocks: the network's requests only
        configuration.authentication = Authentication(HMACSigning(keyID: "app-1", key: key))
        _ = (client, configuration)
    }

    static func events(client: APIClient) async throws {
        struct Price: Decodable { let text: String }
        for try await event in client.events(.get("prices")) {
            if event.type == "price" { show(try event.decode(Price.self).text) }
        }
        var completion = Request.post("completions")
        completion.body = .json(["prompt": "Hello", "stream": true])
        for try await event in client.events(completion) {
            if event.data == "[DONE]" { break }
            show(event.data)
        }
    }
}
