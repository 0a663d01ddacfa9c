import CallsignSQLite
import CallsignTesting
import Foundation
import HTTPTypes
import Testing

@testable import Callsign

@Suite("Digests and keyed cache partitions", .hangGuard)
struct DigestTests {
    @Test("SHA-256 and HMAC-SHA256 match FIPS 180-4 and RFC 4231")
    func vectors() {
        #expect(Digest.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // RFC 4231 test case 2.
        #expect(
            Digest.hmacHex(key: Data("Jefe".utf8), "what do ya want for nothing?")
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(Digest.randomKey().count == 32)
        #expect(Digest.randomKey() != Digest.randomKey())
    }

    @Test("a partition name is an HMAC under the storage's key: no key, no offline guessing")
    func keyedPartition() {
        let headers: Headers = ["Authorization": "Basic dXNlcjpodW50ZXIy"]
        let url = URL(fileURLWithPath: "/")
        let one = CacheStage.key(url: url, headers: headers, method: .get, redaction: .default, digestKey: Data(repeating: 1, count: 32))
        let two = CacheStage.key(url: url, headers: headers, method: .get, redaction: .default, digestKey: Data(repeating: 2, count: 32))
        #expect(one.partition != two.partition)
        // The unkeyed digest of the same credentials (what a brute force would compute) is not it.
        #expect(one.partition != Digest.sha256Hex("callsign-cache-partition\nauthorization: Basic dXNlcjpodW50ZXIy"))
    }

    @Test("the SQLite cache keeps its key beside the file, owner-only, and the same across opens")
    func sqliteKeyFile() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-key-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try await SQLiteCacheStorage(directory: folder).partitionKey()
        let again = try await SQLiteCacheStorage(directory: folder).partitionKey()
        try await SQLiteCacheStorage(directory: folder).removeAll()  // creates the database
        #expect(first == again)
        #expect(first.count == 32)
        let keyPath = folder.appendingPathComponent("callsign-cache.sqlite.key").path
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0, "mode \(String(mode, radix: 8))")
        // The database holds nothing of the key.
        let database = try Data(contentsOf: folder.appendingPathComponent("callsign-cache.sqlite"))
        #expect(database.range(of: first) == nil)
    }

    @Test("authentication headers and query parameters partition the cache and never reach storage as text")
    func authenticationPartitions() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-partition-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await TestServer.withRunning { server in
            let storage = SQLiteCacheStorage(directory: folder)
            func client(session: String) -> APIClient {
                APIClient(configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.retry = .none
                    $0.cache = HTTPCache(storage: storage)
                    $0.authentication = .headers(["X-Session": session], parameters: ["session_id": .string(session)])
                    $0.authentication?.parameterPlacement = .query
                })
            }
            var request = Request.get("/cache/max-age/600/a")
            request.needsAuthorization = true
            _ = try await client(session: "alice-secret").send(request)
            let bob = try await client(session: "bob-secret").send(request)
            #expect(bob.source == .network, "another user's session must not be served alice's copy")
            let again = try await client(session: "alice-secret").send(request)
            #expect(again.source == .cache)
            // Nothing stored names a session: not the file, not its write-ahead log.
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where !name.hasSuffix(".key") {
                let bytes = try Data(contentsOf: folder.appendingPathComponent(name))
                #expect(bytes.range(of: Data("alice-secret".utf8)) == nil, "\(name) holds a session")
                #expect(bytes.range(of: Data("bob-secret".utf8)) == nil, "\(name) holds a session")
            }
        }
    }

    @Test("removeAll(partitionOf:) signs one user out of the cache; removeAll() empties it")
    func signOut() async throws {
        try await TestServer.withRunning { server in
            let cache = HTTPCache.memory()
            func client(_ token: String) -> APIClient {
                APIClient(configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.cache = cache
                    $0.authentication = .bearer(token)
                })
            }
            var request = Request.get("/cache/max-age/600/b")
            request.needsAuthorization = true
            _ = try await client("alice").send(request)
            _ = try await client("bob").send(request)
            try await cache.removeAll(partitionOf: ["Authorization": "Bearer alice"])
            #expect(try await client("alice").send(request).source == .network)
            #expect(try await client("bob").send(request).source == .cache)
            try await cache.removeAll()
            #expect(try await client("bob").send(request).source == .network)
        }
    }

    @Test("a 304 updates the stored response unless a validator it names is another one (RFC 9111 §4.3.4)")
    func notModifiedMustMatch() {
        let stored: HTTPFields = [.eTag: "\"v1\"", .lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"]
        #expect(CacheStage.selects(notModified: [.eTag: "\"v1\""], stored: stored))
        #expect(!CacheStage.selects(notModified: [.eTag: "\"v2\""], stored: stored))
        // No validator: the request was conditional on this one response alone.
        #expect(CacheStage.selects(notModified: [:], stored: stored))
        #expect(CacheStage.selects(notModified: [.lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"], stored: stored))
        #expect(!CacheStage.selects(notModified: [.lastModified: "Mon, 07 Nov 1994 08:49:37 GMT"], stored: stored))
        #expect(CacheStage.selects(notModified: [:], stored: [:]))
    }

    @Test("a 304 naming another representation makes Callsign ask again without conditions")
    func mismatchedNotModifiedRefetches() async throws {
        let stored = rawResponse(headers: ["Cache-Control: max-age=0", "ETag: \"v1\"", "Content-Length: 3"], body: "old")
        let wrong = rawResponse(status: "304 Not Modified", headers: ["ETag: \"other\""])
        let fresh = rawResponse(headers: ["Cache-Control: max-age=0", "ETag: \"v2\"", "Content-Length: 3"], body: "new")
        try await RawServer.withRunning(script: { [[stored], [wrong], [fresh]][min($0, 2)] }) { server in
            let cache = HTTPCache.memory()
            let outcome = try await exchange(server, kind: .asyncHTTPClient, configure: { $0.cache = cache }, call: { client throws(APIError) in
                _ = try await client.get("/x").send()
                return try await client.get("/x").send()
            })
            #expect(outcome.response?.body == Data("new".utf8))
            #expect(server.connectionCount == 3)
        }
    }
}
