import Callsign
import CallsignTesting
import Foundation
import Logging
import Synchronization
import Testing

/// A log handler that keeps every message with its metadata, for assertions.
final class CapturingLogHandler: LogHandler, Sendable {
    let lines = Mutex<[String]>([])
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        let metadata = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        lines.withLock { $0.append("\(event.level) \(event.message) \(metadata.joined(separator: " "))") }
    }
}

@Suite("Logging", .hangGuard)
struct LoggingTests {
    @Test("silent by default; with a logger, debug lines per request with a redacted URL")
    func logs() async throws {
        let handler = CapturingLogHandler()
        let logger = Logger(label: "test") { _ in handler }
        let yaml = "Thing:\n  path: json\n  Cache Policy: 3\n"
        try await withServer(
            definitions: yamlDefinitions(yaml),
            configure: { $0.observability.logger = logger }
        ) { server, client in
            _ = try await client.call("Thing", parameters: ["token": "s3cr3t-sentinel"])
            _ = await apiError { _ = try await client.get("/misbehave/close").send() }
        }
        let lines = handler.lines.withLock { $0 }
        #expect(lines.contains { $0.hasPrefix("warning") && $0.contains("Cache Policy") })
        let finished = try #require(lines.first { $0.contains("request finished") })
        #expect(finished.contains("callsign.api=Thing"))
        #expect(finished.contains("callsign.status=200"))
        #expect(finished.contains("token=REDACTED"))
        // Per request only debug and trace: the error itself is thrown, not logged as an error.
        #expect(lines.contains { $0.hasPrefix("debug request failed") && $0.contains("callsign.error=transport") })
        #expect(lines.allSatisfy { $0.hasPrefix("debug") || $0.hasPrefix("trace") || $0.hasPrefix("warning definitions warning") })
        #expect(!lines.joined().contains("s3cr3t-sentinel"))
    }
}
