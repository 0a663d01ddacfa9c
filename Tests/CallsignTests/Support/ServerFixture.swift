import Callsign
@testable import CallsignTesting
import Foundation
import Synchronization

/// The transports every integration test runs against.
enum TransportKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case asyncHTTPClient
    case urlSession

    /// Both where Callsign builds its AsyncHTTPClient transport; URLSession alone on Apple
    /// platforms, where `.asyncHTTPClient` would only run URLSession a second time under a name
    /// whose expectations it does not meet.
    static var allCases: [TransportKind] {
        #if os(Linux) || os(Android) || os(Windows)
        [.asyncHTTPClient, .urlSession]
        #else
        [.urlSession]
        #endif
    }

    /// Whether Callsign's AsyncHTTPClient transport is built here, and so is the default: a
    /// test of behaviour only that transport has (Unix sockets, client certificates, the HTTP
    /// version it reports, its own decompression and error wording) runs only then
    /// (`.enabled(if: TransportKind.asyncHTTPClientIsBuilt)`). Documentation/Platforms.md lists
    /// those tests and what URLSession does instead on Apple platforms.
    static var asyncHTTPClientIsBuilt: Bool { allCases.contains(.asyncHTTPClient) }

    var testDescription: String { rawValue }

    func make() -> any Transport {
        switch self {
        case .asyncHTTPClient:
            #if os(Linux) || os(Android) || os(Windows)
            // A hang guard, not an assertion: on a loaded 2-core machine a loopback connect, a
            // proxy's CONNECT or a debug-build TLS handshake can take many seconds. A refused port
            // fails at once whatever the limit; no test measures connect time.
            AsyncHTTPClientTransport(connectTimeout: .seconds(600))
            #else
            URLSessionTransport()
            #endif
        case .urlSession: URLSessionTransport()
        }
    }
}

/// Starts the in-process server and a client pointed at it; stops both on every path.
func withServer<T>(
    transport kind: TransportKind = .asyncHTTPClient,
    definitions: (URL) throws -> APIDefinitions = { _ in APIDefinitions() },
    configure: (inout APIClient.Configuration) -> Void = { _ in },
    _ body: (TestServer, APIClient) async throws -> T
) async throws -> T {
    _ = StallWatch.started
    return try await TestServer.withRunning { server in
        var configuration = APIClient.Configuration()
        configuration.baseURL = server.baseURL
        configuration.retry = .none  // tests of retries set their own policy
        configure(&configuration)
        let transport = kind.make()
        let client = APIClient(definitions: try definitions(server.baseURL), configuration: configuration, transport: transport)
        do {
            let result = try await body(server, client)
            try await transport.shutdown()
            return result
        } catch {
            try? await transport.shutdown()
            throw error
        }
    }
}

/// Definitions from YAML whose DEFAULT base URL is the test server's, for ``withServer``.
func yamlDefinitions(_ yaml: String) -> (URL) throws -> APIDefinitions {
    { base in
        var definitions = try APIDefinitions(data: Data(yaml.utf8), format: .yaml)
        definitions.defaultDefinition.baseURL = base
        return definitions
    }
}

/// Runs `body` and returns the `APIError` it throws, or `nil` if it did not throw.
func apiError(_ body: () async throws -> Void) async -> APIError? {
    do {
        try await body()
        return nil
    } catch let error as APIError {
        return error
    } catch {
        return APIError(.transport, "unexpected non-APIError: \(error)")
    }
}

import Testing

/// A loopback port that refuses every connection while this value lives: bound but never
/// listening, so the kernel answers with a reset and no other test's server can take the port
/// (a stopped server's port can be reused at once by a parallel test).
final class RefusingPort: Sendable {
    let port: Int
    private let descriptor: Mutex<Int32>

    init() throws {
        let descriptor = socket(AF_INET, streamSocket(SOCK_STREAM), 0)
        // SO_REUSEPORT lets a test server listen on the port later while this socket still holds
        // it (TestServer sets it too): the port is never free for a parallel test to take.
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard descriptor >= 0, bound == 0, named == 0 else {
            close(descriptor)
            throw APIError(.transport, "no loopback port to refuse connections on")
        }
        self.descriptor = Mutex(descriptor)
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Frees the port (also done when the value goes away). A server can listen on the port
    /// while it is still held: ``TestServer/start(host:port:)`` shares it through SO_REUSEPORT.
    func release() {
        descriptor.withLock { descriptor in
            if descriptor >= 0 { close(descriptor) }
            descriptor = -1
        }
    }

    deinit { release() }
}

/// Runs `body` with a new empty folder under the temporary directory, removed afterwards.
func withTemporaryFolder<T>(_ prefix: String = "callsign", _ body: (URL) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try await body(folder)
}

/// Tells each retry the client is about to make to a closure.
struct RetryRecorder: CallObserver {
    let record: @Sendable (AttemptReport) -> Void

    func callWillRetry(_ call: ObservedCall, after report: AttemptReport) { record(report) }
}

