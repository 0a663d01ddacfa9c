@testable import Callsign
import CallsignTesting
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
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

    @Test("an attempt's time limit that passes once a stream's head has arrived leaves the stream alone: its body is still to be read")
    func expiryAfterTheHead() async throws {
        let delegate = SessionDelegate(proxyCredentials: nil, tls: TLSSettings(), hooks: URLSessionHooks())
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let url = try #require(URL(string: "http://127.0.0.1:9/stream"))
        let task = session.dataTask(with: url)  // never resumed: the delegate is told what URLSession would say
        let (stream, body) = AsyncThrowingStream<Data, any Error>.makeStream()
        let answer = try #require(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:]))
        let head = try await withCheckedThrowingContinuation { (head: CheckedContinuation<HTTPURLResponse, any Error>) in
            delegate.register(task.taskIdentifier, head: head, body: body)
            delegate.urlSession(session, dataTask: task, didReceive: answer) { _ in }
        }
        #expect(head.statusCode == 200)
        // The timer fires now: nothing to end, so the task is not to be cancelled.
        #expect(delegate.expire(task.taskIdentifier) == false)
        body.yield(Data("still read".utf8))
        body.finish()
        var received = Data()
        for try await chunk in stream { received += chunk }
        #expect(String(decoding: received, as: UTF8.self) == "still read")

        // Before the head, the same timer ends the wait.
        let waiting = session.dataTask(with: url)
        let (_, waitingBody) = AsyncThrowingStream<Data, any Error>.makeStream()
        await #expect(throws: Deadline.Expired.self) {
            _ = try await withCheckedThrowingContinuation { (head: CheckedContinuation<HTTPURLResponse, any Error>) in
                delegate.register(waiting.taskIdentifier, head: head, body: waitingBody)
                #expect(delegate.expire(waiting.taskIdentifier))
            }
        }
    }

    @Test("an app's challenge hook answers what Callsign leaves open, sees only those, and nil keeps Callsign's answer")
    func challengeHook() async throws {
        try await TestServer.withRunning { server in
            let asked = Mutex<[String]>([])
            let hooks = URLSessionHooks(challenge: { challenge, _ in
                let space = challenge.protectionSpace
                asked.withLock { $0.append("\(space.authenticationMethod) \(space.host) \(space.realm ?? "")") }
                // The app checks the host before it hands out a credential.
                guard space.host == "127.0.0.1", space.realm == "Fake Realm", challenge.previousFailureCount == 0 else { return nil }
                return (.useCredential, URLCredential(user: "ann", password: "s3cret", persistence: .forSession))
            })
            let transport = URLSessionTransport(configuration: .ephemeral, hooks: hooks)
            let client = APIClient(configuration: .init { $0.baseURL = server.baseURL }, transport: transport)

            // Answered by the hook: URLSession sends the request again with the credential.
            let answer = try await client.get("basic-auth/ann/s3cret").send().validate().json()
            #expect(answer["authenticated"] == true)
            #expect(server.requests.last?.header("Authorization") == "Basic " + Data("ann:s3cret".utf8).base64EncodedString())
            #expect(asked.withLock { $0 }.count == 1)

            // A wrong password fails once more: the hook returns nil the second time, and
            // Callsign's answer lets the 401 reach the caller as a response.
            let refused = try await client.get("basic-auth/ann/other").send()
            #expect(refused.status.code == 401)
            #expect(asked.withLock { $0 }.allSatisfy { $0.contains("127.0.0.1") && $0.contains("Fake Realm") })

            // Without hooks, nothing answers: the 401 is the caller's.
            let plain = APIClient(configuration: .init { $0.baseURL = server.baseURL }, transport: URLSessionTransport())
            #expect(try await plain.get("basic-auth/ann/s3cret").send().status.code == 401)
        }
    }
}
