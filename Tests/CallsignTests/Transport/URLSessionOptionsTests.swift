import Callsign
import CallsignTesting
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

@Suite("URLSessionTransport options: your configuration, its URLCache unless Callsign caches", .hangGuard)
struct URLSessionOptionsTests {
    @Test("a configuration's URLCache answers when the client has no cache of its own, and is bypassed when it does")
    func urlCache() async throws {
        try await TestServer.withRunning { server in
            let configuration = URLSessionConfiguration.ephemeral
            let urlCache = URLCache(memoryCapacity: 1 << 20, diskCapacity: 0, diskPath: nil)
            configuration.urlCache = urlCache
            configuration.timeoutIntervalForRequest = 7
            let transport = URLSessionTransport(configuration: configuration)

            let plain = APIClient(configuration: .init { $0.baseURL = server.baseURL }, transport: transport)
            for _ in 0..<2 { _ = try await plain.get("cache/max-age/86400/url-cache").send() }
            #if canImport(FoundationNetworking)
            // FoundationNetworking's URLCache stores nothing for tasks driven by a delegate (checked
            // here so that the day it does, this test says so): both calls reach the server.
            #expect(server.hits("/cache/max-age/86400/url-cache") == 2)
            #else
            #expect(server.hits("/cache/max-age/86400/url-cache") == 1, "URLSession's own cache answered the second call")
            #endif

            let caching = APIClient(
                configuration: .init {
                    $0.baseURL = server.baseURL
                    $0.cache = HTTPCache(storage: MemoryCacheStorage())
                }, transport: transport)
            for _ in 0..<2 { _ = try await caching.get("cache/max-age/86400/callsign-cache").send() }
            #expect(server.hits("/cache/max-age/86400/callsign-cache") == 1, "Callsign's cache answered the second call")
            let request = URLRequest(url: server.url("/cache/max-age/86400/callsign-cache"))
            #expect(urlCache.cachedResponse(for: request) == nil, "URLSession did not cache it a second time")
        }
    }
}
