import Callsign
import CallsignTesting
import Foundation
import Testing

@Suite("Mocks", .hangGuard)
struct MockTests {
    @Test("file, JSON, data and error mocks, mixed with real calls, through validation and decoding")
    func kinds() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-mocks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(#"[{"id": 1, "title": "From a file"}]"#.utf8).write(to: folder.appendingPathComponent("topics.json"))

        try await TestServer.withRunning { server in
            let real = TransportKind.asyncHTTPClient.make()
            let mocks = Mocks(directory: folder) { request in
                switch (request.apiName, request.url.path) {
                case ("TopicListRecommended", _): .file("topics.json")
                case ("UserProfile", _): .json(["id": 5, "name": "Mocked"])
                case (_, "/demo/boards/7"): .data(Data("{\"id\":7,\"title\":\"Data\"}".utf8), headers: ["Content-Type": "application/json"])
                case (_, "/demo/boards/404"): .json(["error": "nope"], status: 404)
                case (_, "/offline"): .error(URLError(.notConnectedToInternet))
                default: nil
                }
            }
            let client = APIClient(
                definitions: try DemoAPI.definitions(baseURL: server.baseURL),
                configuration: .init { $0.baseURL = server.baseURL; $0.retry = .none; $0.mocks = mocks }, transport: real)

            let topics = try await client.call("TopicListRecommended", as: [Topic].self)
            #expect(topics == [Topic(id: 1, title: "From a file")])
            let profile = try await client.call("UserProfile", parameters: ["user_id": 1], as: Profile.self)
            #expect(profile.name == "Mocked")
            let board = try await client.get("demo/boards/7").decode(Board.self)
            #expect(board.title == "Data")
            let missing = await apiError { _ = try await client.get("demo/boards/404").decode(Board.self) }
            #expect(missing?.code == .unacceptableStatus)
            let offline = await apiError { _ = try await client.get("offline").send() }
            #expect(offline?.code == .transport)

            // Not mocked: a real request.
            let realBoard = try await client.get("demo/boards/1").decode(Board.self)
            #expect(realBoard.title == "Balsa Fish")
            #expect(server.requests.map(\.rawPath) == ["/demo/boards/1"])
            try await real.shutdown()
        }
    }

    @Test("a sequence mock (503, then 200) drives retries; endpoint values reach the provider")
    func sequenceAndRetry() async throws {
        let flaky = Mock.sequence([.json(["error": "busy"], status: 503, headers: ["Retry-After": "2"]), .json(["id": 7, "title": "Longboard"])])
        let mocks = Mocks(realRequests: false) { request in
            if case .show(let id)? = request.endpoint as? Boards, id == 7 { return flaky }
            return nil
        }
        let clock = TestClock()
        let client = APIClient(
            configuration: .init { $0.baseURL = URL(string: "https://api.example.test/"); $0.clock = clock; $0.mocks = mocks })
        let board = try await client.send(Boards.show(id: 7)).validate().decode(Board.self)
        #expect(board.id == 7)
        #expect(clock.sleeps == [.seconds(2)])
        let unmocked = await apiError { _ = try await client.send(Boards.list) }
        #expect(unmocked?.code == .transport)
        #expect(unmocked?.message.contains("no mock") == true)
    }

    @Test("a mock's delay is honoured, and is cancellable")
    func delay() async throws {
        let mocks = Mocks(defaultDelay: .milliseconds(150), realRequests: false) { _ in .json(["ok": true]) }
        let client = APIClient(configuration: .init { $0.baseURL = URL(string: "https://api.example.test/"); $0.mocks = mocks })
        let clock = ContinuousClock()
        let started = clock.now
        _ = try await client.get("x").send()
        #expect(clock.now - started >= .milliseconds(150))
        let task = client.start(.get("slow"))
        task.cancel()
        #expect(await task.result.error?.code == .cancelled)
    }

    @Test("mock mode from definitions that name mock files")
    func definitionsMockMode() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-mockmode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(#"{"id": 3, "name": "Fixture"}"#.utf8).write(to: folder.appendingPathComponent("me.json"))
        let yaml = "DEFAULT:\n  baseURL: https://api.example.test/\nMe:\n  path: me\n  mock: me.json\nOther:\n  path: other\n"
        let definitions = try APIDefinitions(data: Data(yaml.utf8), format: .yaml)
        let client = APIClient(
            definitions: definitions, configuration: .init { $0.mocks = Mocks(definitions: definitions, directory: folder, realRequests: false) })
        #expect(try await client.call("Me", as: Profile.self).name == "Fixture")
        let other = await apiError { try await client.call("Other") }
        #expect(other?.code == .transport)
    }
}
