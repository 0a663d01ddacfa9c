@testable import Callsign
import CallsignTesting
import Foundation
import Testing

/// RFAPI's `Cache Policy`, `Expire`, `Offline Policy` and `Response Serializer`: each acted on,
/// and a warning only for values that have no meaning here.
@Suite("RFAPI keys: cache policy, expire, offline policy, response serializer", .hangGuard)
struct RFAPIKeysTests {
    // MARK: - The table

    @Test("each of RFAPI's numeric cache policies becomes the documented Callsign policy")
    func cachePolicyTable() throws {
        let table: [(JSONValue, CachePolicy)] = [
            (0, .useProtocol), (1, .useProtocol), (2, .returnCacheElseLoad), (5, .reloadIgnoringCache),
            ("2", .returnCacheElseLoad),  // a property list written by hand
        ]
        for (number, expected) in table {
            let definitions = try APIDefinitions(values: ["Thing": ["Path": "thing", "Cache Policy": number]])
            #expect(try definitions.definition(named: "Thing").cachePolicy == expected, "Cache Policy \(number)")
            #expect(definitions.warnings.isEmpty, "Cache Policy \(number): \(definitions.warnings)")
        }
        // 3 counts Expire; so does any policy that has freshness, and Expire alone.
        let expiring = try APIDefinitions(values: [
            "A": ["Path": "a", "Cache Policy": 3, "Expire": 60],
            "B": ["Path": "b", "Cache Policy": 0, "Expire": 30],
            "C": ["Path": "c", "Expire": 2.5],
            "D": ["path": "d", "cache": "useProtocol", "expire": 10],
        ])
        #expect(try expiring.definition(named: "A").cachePolicy == .fresh(for: .seconds(60)))
        #expect(try expiring.definition(named: "B").cachePolicy == .fresh(for: .seconds(30)))
        #expect(try expiring.definition(named: "C").cachePolicy == .fresh(for: .milliseconds(2500)))
        #expect(try expiring.definition(named: "D").cachePolicy == .fresh(for: .seconds(10)))
        #expect(expiring.warnings.isEmpty)
        // Offline Policy as a number: 1 serves the stored response when offline; the words are store policies.
        let offline = try APIDefinitions(values: [
            "DEFAULT": ["Offline Policy": 1],
            "Kept": ["Path": "kept"],
            "Plain": ["Path": "plain", "Offline Policy": 0],
            "Queued": ["Path": "queued", "Offline Policy": "offline"],
        ])
        #expect(try offline.definition(named: "Kept").servesStaleWhenOffline == true)
        #expect(try offline.definition(named: "Plain").servesStaleWhenOffline == false)
        #expect(try offline.definition(named: "Queued").storePolicy == .offline)
        #expect(try offline.definition(named: "Queued").request().servesStaleWhenOffline == true)

    }

    @Test("DEFAULT's Expire and Cache Policy combine with a definition's, as RFAPI merged its rules")
    func mergedWithDefault() throws {
        let definitions = try APIDefinitions(values: [
            "DEFAULT": ["Base": "https://example.com/", "Expire": 120],
            "Counted": ["Path": "counted", "Cache Policy": 3],
            "Inherits": ["Path": "inherits"],
            "Never": ["Path": "never", "Cache Policy": 5],
            "Own": ["Path": "own", "Expire": 5],
        ])
        #expect(try definitions.definition(named: "Counted").cachePolicy == .fresh(for: .seconds(120)))
        #expect(try definitions.definition(named: "Inherits").cachePolicy == .fresh(for: .seconds(120)))
        #expect(try definitions.definition(named: "Own").cachePolicy == .fresh(for: .seconds(5)))
        // DEFAULT's Expire means nothing to a policy without freshness: no warning for this API.
        #expect(try definitions.definition(named: "Never").cachePolicy == .reloadIgnoringCache)
        #expect(definitions.warnings.isEmpty, "\(definitions.warnings)")
    }

    @Test("only values without a meaning here warn and are kept; values RFAPI refused are refused")
    func warningsAndRefusals() throws {
        let definitions = try APIDefinitions(values: [
            "Always": ["Path": "always", "Cache Policy": 2, "Expire": 60],
            "Uncounted": ["Path": "uncounted", "Cache Policy": 3],
            "XML": ["Path": "xml", "Response Serializer": "AFXMLParserResponseSerializer"],
            "Raw": ["Path": "raw", "Response Serializer": "AFHTTPResponseSerializer"],
            "Custom": ["Path": "custom", "Response Serializer": "MyJSONResponseSerializer"],
        ])
        let always = try definitions.definition(named: "Always")
        #expect(always.cachePolicy == .returnCacheElseLoad)
        #expect(always.recognizedButUnused == ["Expire": 60])
        let uncounted = try definitions.definition(named: "Uncounted")
        #expect(uncounted.cachePolicy == .useProtocol)
        #expect(uncounted.recognizedButUnused == ["Cache Policy": 3])
        #expect(try definitions.definition(named: "XML").recognizedButUnused == ["Response Serializer": "AFXMLParserResponseSerializer"])
        #expect(try definitions.definition(named: "Raw").recognizedButUnused == nil)
        #expect(try definitions.definition(named: "Custom").responseFormat == .json)
        #expect(definitions.warnings.count == 3, "\(definitions.warnings)")
        #expect(definitions.warnings.contains { $0.contains("\"Always\"") && $0.contains("Expire") })
        #expect(definitions.warnings.contains { $0.contains("\"Uncounted\"") && $0.contains("Cache Policy") })
        #expect(definitions.warnings.contains { $0.contains("AFXMLParserResponseSerializer") })

        for (key, value) in [("Cache Policy", JSONValue.int(4)), ("Offline Policy", 2), ("Expire", -1), ("Expire", "soon"), ("Expire", 1e12)] {
            let error = #expect(throws: APIError.self, "\(key): \(value)") {
                try APIDefinitions(values: ["Thing": ["Path": "thing", key: value]])
            }
            #expect(error?.code == .invalidDefinition)
            #expect(error?.key == key)
        }
        #expect(throws: APIError.self) { try APIDefinitions(values: ["Thing": ["responseFormat": "xml"]]) }
    }

    // MARK: - Against the server

    @Test("Expire serves a stored answer without asking the server, for a server that sends no freshness")
    func expireServesFromCache() async throws {
        let yaml = """
            DEFAULT:
              Expire: 60
            Counted:
              Path: plain/counted
              Cache Policy: 3
            Uncached:
              Path: plain/uncached
              Cache Policy: 5
            """
        try await withServer(definitions: yamlDefinitions(yaml), configure: { $0.cache = .memory() }) { server, client in
            server.route("/plain") { request in .json(["path": .string(request.rawPath)]) }
            let first = try await client.call("Counted")
            let second = try await client.call("Counted")
            #expect(first.source == .network)
            #expect(second.source == .cache)
            #expect(server.hits("/plain/counted") == 1)
            _ = try await client.call("Uncached")
            #expect(try await client.call("Uncached").source == .network)
            #expect(server.hits("/plain/uncached") == 2)
        }
    }

    @Test("Offline Policy 1 serves the stored answer when the server cannot be reached; 0 fails")
    func offlinePolicyServesStale() async throws {
        let refusing = try RefusingPort()
        defer { refusing.release() }  // held for the whole test, so no parallel test takes the port
        let server = try await TestServer.start(port: refusing.port)  // shares the port `refusing` holds
        server.route("/plain") { request in .json(["path": .string(request.rawPath)]) }
        let definitions = try APIDefinitions(values: [
            "DEFAULT": ["Base": .string(server.baseURL.absoluteString)],
            "Kept": ["Path": "plain/kept", "Offline Policy": 1],
            "Plain": ["Path": "plain/plain", "Offline Policy": 0],
        ])
        let transport = TransportKind.asyncHTTPClient.make()
        let client = APIClient(definitions: definitions, configuration: .init { $0.retry = .none; $0.cache = .memory() }, transport: transport)
        let first = try await client.call("Kept")
        _ = try await client.call("Plain")
        await server.stop()
        let stale = try await client.call("Kept")
        #expect(stale.source == .staleCache)
        #expect(stale.body == first.body)
        let failure = await apiError { _ = try await client.call("Plain") }
        #expect(failure?.code == .transport)
        try await transport.shutdown()
    }

    struct Settings: Decodable, Equatable {
        var name: String
        var count: Int
        var ratio: Double
        var enabled: Bool
        var updated: Date
        var token: Data
        var tags: [String]
    }

    static var settings: [String: Any] {
        [
            "name": "北京", "count": 3, "ratio": 0.5, "enabled": true, "updated": Date(timeIntervalSinceReferenceDate: 800_000_000),
            "token": Data([0, 1, 2, 255]), "tags": ["a", "b"],
        ]
    }

    @Test(
        "a property-list answer decodes like a JSON one, XML or binary, on both transports",
        arguments: TransportKind.allCases, [PropertyListSerialization.PropertyListFormat.xml, .binary])
    func propertyListResponses(kind: TransportKind, format: PropertyListSerialization.PropertyListFormat) async throws {
        let yaml = """
            Settings:
              Path: settings
              Response Serializer: AFPropertyListResponseSerializer
              Response Type: 2
            Wrapped:
              path: wrapped
              responseFormat: propertyList
              envelope: true
            """
        let body = try PropertyListSerialization.data(fromPropertyList: Self.settings, format: format, options: 0)
        let wrapped = try PropertyListSerialization.data(
            fromPropertyList: ["code": 0, "msg": "ok", "data": Self.settings] as [String: Any], format: format, options: 0)
        try await withServer(transport: kind, definitions: yamlDefinitions(yaml)) { server, client in
            server.route("/settings") { _ in ServerResponse(headers: [("Content-Type", "application/x-plist")], body: .data(body)) }
            server.route("/wrapped") { _ in ServerResponse(headers: [("Content-Type", "application/x-plist")], body: .data(wrapped)) }
            let expected = Settings(
                name: "北京", count: 3, ratio: 0.5, enabled: true, updated: Date(timeIntervalSinceReferenceDate: 800_000_000),
                token: Data([0, 1, 2, 255]), tags: ["a", "b"])
            let response = try await client.call("Settings")
            #expect(try response.validate().decode(Settings.self) == expected)
            #expect(try response.json()["name"] == "北京")
            #expect(response.body == body, "the raw body is kept as it came")
            #expect(server.requests.last?.header("Accept") == "application/x-plist")
            #expect(try await client.call("Wrapped", as: Settings.self) == expected)
        }
    }

    @Test("a hostile property-list answer is a decoding error: shared values expanding to 2^60, nesting 100,000 deep, not a list")
    func hostilePropertyLists() async throws {
        let yaml = """
            Hostile:
              path: hostile
              responseFormat: propertyList
            """
        let bodies: [Data] = [
            HostileFileTests.binaryPropertyListOfArrays(depth: 60, references: 2),
            Data(("<plist version=\"1.0\">" + String(repeating: "<array>", count: 100_000) + "</plist>").utf8),
            Data("{\"not\": \"a property list\"".utf8),
        ]
        try await withServer(definitions: yamlDefinitions(yaml)) { server, client in
            for body in bodies {
                server.route("/hostile") { _ in ServerResponse(headers: [("Content-Type", "application/x-plist")], body: .data(body)) }
                let started = ContinuousClock.now
                let error = await apiError { _ = try await client.call("Hostile").decode(JSONValue.self) }
                #expect(error?.code == .decoding)
                #expect(error?.message.contains("property list") == true, "\(error?.message ?? "")")
                // Generous: a full run on a busy 2-core machine has taken 33 s; an expansion to
                // 2^60 values would never end.
                #expect(ContinuousClock.now - started < .seconds(120))
            }
        }
        // The same door keeps definitions files from expanding.
        let error = #expect(throws: APIError.self) { try APIDefinitions(data: HostileFileTests.binaryPropertyListOfArrays(depth: 60, references: 2), format: .plist) }
        #expect(error?.message.contains("values") == true)
        #expect(PropertyListDepth.measure(HostileFileTests.binaryPropertyListOfArrays(depth: 10, references: 2), depthLimit: 64, valueLimit: 1023) == .fine)
        #expect(PropertyListDepth.measure(HostileFileTests.binaryPropertyListOfArrays(depth: 10, references: 2), depthLimit: 64, valueLimit: 1022) == .tooManyValues)
    }
}
