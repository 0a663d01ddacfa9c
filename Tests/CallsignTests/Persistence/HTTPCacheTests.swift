import Callsign
import CallsignSQLite
import CallsignTesting
import Foundation
import Testing

/// The storages every cache test runs against.
enum CacheStorageKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqlite

    var testDescription: String { rawValue }

    /// A fresh storage; for SQLite, in a new temporary folder.
    func make() -> (storage: any HTTPCacheStorage, file: URL?) {
        switch self {
        case .memory:
            return (MemoryCacheStorage(byteBudget: 8 << 20), nil)
        case .sqlite:
            let file = Scratch.folder().appendingPathComponent("cache.sqlite")
            return (SQLiteCacheStorage(url: file, byteBudget: 8 << 20), file)
        }
    }
}

/// Temporary folders for database files.
enum Scratch {
    static func folder() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-test-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Every byte of a SQLite database: the file and its write-ahead log.
    static func databaseBytes(_ file: URL) -> Data {
        var bytes = Data()
        for suffix in ["", "-wal"] {
            if let data = FileManager.default.contents(atPath: file.path + suffix) { bytes.append(data) }
        }
        return bytes
    }
}

@Suite("HTTP cache (RFC 9111)", .hangGuard)
struct HTTPCacheTests {
    private func withCache<T>(
        _ kind: CacheStorageKind, configure: (inout APIClient.Configuration) -> Void = { _ in },
        _ body: (TestServer, APIClient, URL?) async throws -> T
    ) async throws -> T {
        let (storage, file) = kind.make()
        return try await withServer(configure: { configuration in
            configuration.cache = HTTPCache(storage: storage)
            configure(&configuration)
        }) { server, client in
            try await body(server, client, file)
        }
    }

    @Test("ETag: a stale entry is revalidated; the 304 becomes the stored 200", arguments: CacheStorageKind.allCases)
    func etagRevalidation(kind: CacheStorageKind) async throws {
        try await withCache(kind) { server, client, _ in
            let path = "/cache/etag/\(UUID().uuidString)"
            let first = try await client.get(path).send()
            let second = try await client.get(path).send()
            let third = try await client.get(path).send()
            #expect(first.source == .network)
            #expect(second.source == .revalidated)
            #expect(third.source == .revalidated)
            #expect(second.status.code == 200)
            #expect(second.body == first.body)
            #expect(server.responses(path, status: 200) == 1)
            #expect(server.responses(path, status: 304) == 2)
            #expect(server.requests.last?.header("If-None-Match") == "\"1-\(path.split(separator: "/").last ?? "")\"")
        }
    }

    @Test("Last-Modified: revalidated with If-Modified-Since", arguments: CacheStorageKind.allCases)
    func lastModifiedRevalidation(kind: CacheStorageKind) async throws {
        try await withCache(kind) { server, client, _ in
            let path = "/cache/last-modified/\(UUID().uuidString)"
            let first = try await client.get(path).send()
            let second = try await client.get(path).send()
            #expect(first.source == .network)
            #expect(second.source == .revalidated)
            #expect(try second.json()["served"] == 1)
            #expect(server.responses(path, status: 200) == 1)
            #expect(server.responses(path, status: 304) == 1)
            #expect(server.requests.last?.header("If-Modified-Since") == HTTPDate.format(Date(timeIntervalSince1970: 1_767_225_600)))
        }
    }

    @Test("max-age: fresh hits never reach the server and carry an Age", arguments: CacheStorageKind.allCases)
    func freshHits(kind: CacheStorageKind) async throws {
        try await withCache(kind) { server, client, _ in
            let path = "/cache/max-age/86400/\(UUID().uuidString)"
            let first = try await client.get(path).send()
            for _ in 0..<5 {
                let hit = try await client.get(path).send()
                #expect(hit.source == .cache)
                #expect(hit.body == first.body)
                #expect(hit.headers[.age].flatMap(Int.init) != nil)
            }
            #expect(server.hits(path) == 1)
            // HEAD is answered from the stored GET, without a body.
            let head = try await client.head(path).send()
            #expect(head.source == .cache)
            #expect(head.body.isEmpty)
            #expect(server.hits(path) == 1)
        }
    }

    @Test("no-store is never written (the SQLite file does not contain it)", arguments: CacheStorageKind.allCases)
    func noStore(kind: CacheStorageKind) async throws {
        try await withCache(kind) { server, client, file in
            let id = UUID().uuidString
            let path = "/cache/no-store/\(id)"
            _ = try await client.get(path).send()
            let second = try await client.get(path).send()
            #expect(second.source == .network)
            #expect(server.hits(path) == 2)
            // A storable response next to it, so the file certainly exists and holds something.
            _ = try await client.get("/cache/max-age/86400/\(id)-control").send()
            if let file {
                let bytes = Scratch.databaseBytes(file)
                #expect(!bytes.isEmpty)
                #expect(bytes.range(of: Data("\(id)-control".utf8)) != nil)
                #expect(bytes.range(of: Data("no-store/\(id)".utf8)) == nil)
            }
        }
    }

    @Test("Vary: each Accept-Language has its own entry", arguments: CacheStorageKind.allCases)
    func vary(kind: CacheStorageKind) async throws {
        try await withCache(kind) { server, client, _ in
            let path = "/cache/vary/\(UUID().uuidString)"
            let english = try await client.get(path).header("Accept-Language", "en").send()
            let french = try await client.get(path).header("Accept-Language", "fr").send()
            let englishAgain = try await client.get(path).header("Accept-Language", "en").send()
            let frenchAgain = try await client.get(path).header("Accept-Language", "fr").send()
            #expect(english.source == .network)
            #expect(french.source == .network)
            #expect(englishAgain.source == .cache)
            #expect(frenchAgain.source == .cache)
            #expect(try englishAgain.json()["language"] == "en")
            #expect(try frenchAgain.json()["language"] == "fr")
            #expect(server.hits(path) == 2)
        }
    }

    @Test("Responses to authorized requests are kept per user, and no token reaches the file", arguments: CacheStorageKind.allCases)
    func perUser(kind: CacheStorageKind) async throws {
        let (storage, file) = kind.make()
        try await TestServer.withRunning { server in
            func client(_ token: String) -> APIClient {
                APIClient(configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.retry = .none
                    $0.cache = HTTPCache(storage: storage)
                    $0.authentication = .bearer(token)
                })
            }
            let alice = client("alice-secret-token-alice")
            let bob = client("bob-secret-token-bob")
            let path = "/cache/private/\(UUID().uuidString)"
            let aliceFirst = try await alice.get(path).authorized().send()
            let bobFirst = try await bob.get(path).authorized().send()
            let aliceAgain = try await alice.get(path).authorized().send()
            let bobAgain = try await bob.get(path).authorized().send()
            #expect(try aliceFirst.json()["user"] == "alice")
            #expect(bobFirst.source == .network)
            #expect(try bobFirst.json()["user"] == "bob")
            #expect(aliceAgain.source == .cache)
            #expect(try aliceAgain.json()["user"] == "alice")
            #expect(try bobAgain.json()["user"] == "bob")
            #expect(server.hits(path) == 2)
            // Without credentials nobody's entry is served.
            let anonymous = try await client("x").get(path).send()
            #expect(anonymous.source == .network)
            if let file {
                let bytes = Scratch.databaseBytes(file)
                #expect(bytes.range(of: Data("alice-secret-token".utf8)) == nil)
                #expect(bytes.range(of: Data("bob-secret-token".utf8)) == nil)
            }
        }
    }

    @Test("A successful POST invalidates the URL", arguments: CacheStorageKind.allCases)
    func invalidation(kind: CacheStorageKind) async throws {
        try await withCache(kind) { server, client, _ in
            let path = "/cache/max-age/86400/\(UUID().uuidString)"
            _ = try await client.get(path).send()
            #expect(try await client.get(path).send().source == .cache)
            let post = try await client.post(path).parameters(["x": 1]).send()
            #expect(post.status.code == 204)
            let after = try await client.get(path).send()
            #expect(after.source == .network)
            #expect(try after.json()["served"] == 2)
        }
    }

    @Test("stale-if-error serves the stored copy while the server is stopped", arguments: CacheStorageKind.allCases)
    func staleIfError(kind: CacheStorageKind) async throws {
        let (storage, _) = kind.make()
        let refusing = try RefusingPort()
        defer { refusing.release() }  // held for the whole test, so no parallel test takes the port
        let server = try await TestServer.start(port: refusing.port)  // shares the port `refusing` holds
        let client = APIClient(configuration: .init {
            $0.baseURL = server.baseURL
            $0.retry = .none
            $0.cache = HTTPCache(storage: storage)
        }, transport: TransportKind.asyncHTTPClient.make())
        let path = "/cache/stale-if-error/\(UUID().uuidString)"
        let first = try await client.get(path).send()
        await server.stop()
        let stale = try await client.get(path).send()
        #expect(stale.source == .staleCache)
        #expect(stale.body == first.body)
        // Without stale-if-error, a stopped server is an error…
        let plain = "/cache/etag/\(UUID().uuidString)"
        let restarted = try await TestServer.start(port: refusing.port)
        _ = try await client.get(plain).send()
        await restarted.stop()
        let failure = await apiError { _ = try await client.get(plain).send() }
        #expect(failure?.code == .transport)
        // …unless the app asks for stale copies when offline.
        let offlineFriendly = APIClient(configuration: .init {
            $0.baseURL = server.baseURL
            $0.retry = .none
            $0.cache = HTTPCache(storage: storage, servesStaleWhenOffline: true)
        }, transport: TransportKind.asyncHTTPClient.make())
        #expect(try await offlineFriendly.get(plain).send().source == .staleCache)
        try await client.transport.shutdown()
        try await offlineFriendly.transport.shutdown()
    }

    @Test("Cache policies: reload, return-cache-else-load, cache-only", arguments: CacheStorageKind.allCases)
    func policies(kind: CacheStorageKind) async throws {
        try await withCache(kind) { server, client, _ in
            let fresh = "/cache/max-age/86400/\(UUID().uuidString)"
            _ = try await client.get(fresh).send()
            let reloaded = try await client.get(fresh).cachePolicy(.reloadIgnoringCache).send()
            #expect(reloaded.source == .network)
            #expect(server.hits(fresh) == 2)
            // The reload's answer replaced the stored one.
            #expect(try await client.get(fresh).send().json()["served"] == 2)

            let stale = "/cache/etag/\(UUID().uuidString)"
            _ = try await client.get(stale).send()
            let offlineFirst = try await client.get(stale).cachePolicy(.returnCacheElseLoad).send()
            #expect(offlineFirst.source == .cache)
            #expect(server.hits(stale) == 1)

            let missing = "/cache/max-age/86400/\(UUID().uuidString)"
            let miss = await apiError { _ = try await client.get(missing).cachePolicy(.cacheOnly).send() }
            #expect(miss?.code == .cacheMiss)
            #expect(server.hits(missing) == 0)
            let loaded = try await client.get(missing).cachePolicy(.returnCacheElseLoad).send()
            #expect(loaded.source == .network)
            #expect(try await client.get(missing).cachePolicy(.cacheOnly).send().source == .cache)
        }
    }

    @Test("5xx answers without explicit freshness and responses behind a cross-origin redirect are not stored", arguments: CacheStorageKind.allCases)
    func notStored(kind: CacheStorageKind) async throws {
        try await withCache(kind) { server, client, _ in
            let failing = "/status/500"
            _ = try await client.get(failing).send()
            _ = try await client.get(failing).send()
            #expect(server.hits(failing) == 2)

            try await TestServer.withRunning { other in
                let target = other.url("/cache/max-age/86400/\(UUID().uuidString)")
                let hop = "/redirect-to?url=\(target.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
                let first = try await client.get(hop).send()
                #expect(first.status.code == 200)
                _ = try await client.get(hop).send()
                #expect(other.hits(target.path) == 2)
            }
        }
    }

    @Test("The SQLite cache survives a restart and keeps within its byte budget")
    func sqliteRestartAndBudget() async throws {
        let file = Scratch.folder().appendingPathComponent("cache.sqlite")
        try await TestServer.withRunning { server in
            let path = "/cache/max-age/86400/\(UUID().uuidString)"
            func client(_ storage: SQLiteCacheStorage) -> APIClient {
                APIClient(configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.cache = HTTPCache(storage: storage)
                })
            }
            _ = try await client(SQLiteCacheStorage(url: file)).get(path).send()
            let reopened = try await client(SQLiteCacheStorage(url: file)).get(path).send()
            #expect(reopened.source == .cache)
            #expect(server.hits(path) == 1)

            let small = SQLiteCacheStorage(url: Scratch.folder().appendingPathComponent("small.sqlite"), byteBudget: 64 << 10)
            let budgeted = client(small)
            for index in 0..<40 { _ = try await budgeted.get("/cache/max-age/86400/\(index)-\(String(repeating: "x", count: 200))").send() }
            let stored = try await small.storedBytes()
            #expect(stored > 0)
            #expect(stored <= 64 << 10)
            let memory = MemoryCacheStorage(byteBudget: 8 << 10)
            let memoryClient = APIClient(configuration: .init { $0.baseURL = server.baseURL; $0.cache = HTTPCache(storage: memory) })
            for index in 0..<40 { _ = try await memoryClient.get("/cache/max-age/86400/m\(index)").send() }
            let memoryStored = await memory.storedBytes
            #expect(memoryStored > 0 && memoryStored <= 8 << 10)
        }
    }

    @Test("SHA-256 and HTTP dates match their standards")
    func primitives() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse("0") == nil)
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 951_782_400)) == "Tue, 29 Feb 2000 00:00:00 GMT")
    }
}
