import Callsign
import CallsignTesting
import Foundation

/// The transports every integration test runs against.
enum TransportKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case asyncHTTPClient
    case urlSession

    var testDescription: String { rawValue }

    func make() -> any Transport {
        switch self {
        case .asyncHTTPClient:
            #if canImport(AsyncHTTPClient)
            AsyncHTTPClientTransport(connectTimeout: .seconds(2))
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
    try await TestServer.withRunning { server in
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
