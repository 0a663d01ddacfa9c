import Callsign
import Foundation
import Testing

@Suite("JSONValue and Headers", .hangGuard)
struct ValueTypeTests {
    @Test("JSONValue literals, access and a Codable round trip")
    func jsonValue() throws {
        let value: JSONValue = ["page": 1, "tags": ["a"], "on": true, "ratio": 0.5, "x": nil, "name": "Ann \(1)"]
        #expect(value["page"]?.intValue == 1)
        #expect(value["tags"]?[0] == "a")
        #expect(value["tags"]?[5] == nil)
        #expect(value["x"]?.isNull == true)
        #expect(value["name"]?.stringValue == "Ann 1")
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
        #expect(try JSONValue(parsing: Data("[true, 1, 1.5, \"s\", null]".utf8)) == [true, 1, 1.5, "s", nil])
        struct Thing: Encodable { let id: Int; let name: String }
        #expect(try JSONValue(encoding: Thing(id: 3, name: "t")) == ["id": 3, "name": "t"])
        #expect(value.description.hasPrefix("{\"name\":\"Ann 1\""))
    }

    @Test("Headers: case-insensitive, ordered, set replaces, add keeps, merging wins per name")
    func headers() {
        var headers: Headers = ["Accept": "application/json", "X-A": "1"]
        headers.add("x-a", "2")
        #expect(headers.values(for: "X-A") == ["1", "2"])
        headers["X-A"] = "3"
        #expect(headers.values(for: "x-a") == ["3"])
        #expect(headers.fields.map(\.name) == ["Accept", "X-A"])
        let merged = headers.merging(["accept": "text/plain", "X-New": "n"])
        #expect(merged["ACCEPT"] == "text/plain")
        #expect(merged["X-A"] == "3")
        #expect(merged.contains("x-new"))
        headers["Accept"] = nil
        #expect(!headers.contains("accept"))
        // Only letters fold: "@" and "`" differ by the same bit as "A" and "a"; past ASCII,
        // names compare lowercased.
        let odd: Headers = ["X-@": "at", "Überschrift": "u", "X-Z": "z"]
        #expect(odd["x-@"] == "at" && odd["x-`"] == nil && odd["X-["] == nil && odd["x-z"] == "z")
        #expect(odd["überschrift"] == "u" && odd["ÜBERSCHRIFT"] == "u" && odd["Uberschrift"] == nil)
    }

    @Test("StatusCodes from codes, ranges and text")
    func statusCodes() {
        let codes: StatusCodes = [200, 204]
        #expect(codes.contains(204))
        #expect(!codes.contains(201))
        #expect(StatusCodes.successful.contains(299))
        #expect(StatusCodes(ranges: [200...299, 304...304]).description == "200-299, 304")
    }

    @Test("requests: idempotency and adding parameters and headers")
    func requests() {
        #expect(Request.get("a").isIdempotent)
        #expect(Request.put("a").isIdempotent)
        #expect(!Request.post("a").isIdempotent)
        let request = Request.get("a", parameters: ["x": 1]).adding(parameters: ["y": 2], headers: ["H": "v"])
        #expect(request.parameters == ["x": 1, "y": 2])
        #expect(request.headers["h"] == "v")
    }
}

@Suite("Copy-on-write values keep value semantics", .hangGuard)
struct CopyOnWriteTests {
    @Test("a changed copy of a request, response, error or configuration leaves the original alone")
    func copiesAreIndependent() {
        let original = Request.post("boards", parameters: ["title": "Balsa"], headers: ["X-A": "1"])
        var copy = original
        copy.headers["X-A"] = "2"
        copy.parameters["title"] = "Fish"
        copy.path = "other"
        #expect(original.headers["X-A"] == "1")
        #expect(original.parameters == ["title": "Balsa"])
        #expect(original.path == "boards")
        #expect(copy.headers["X-A"] == "2" && copy.path == "other")

        let response = Response(request: original, status: .ok, body: Data("a".utf8))
        var changedResponse = response
        changedResponse.body = Data("b".utf8)
        changedResponse.request.path = "changed"
        #expect(response.string() == "a" && response.request.path == "boards")
        #expect(changedResponse.string() == "b" && changedResponse.request.path == "changed")

        let error = APIError(.timedOut, "slow", request: original)
        var changedError = error
        changedError.message = "slower"
        changedError.request?.path = "elsewhere"
        #expect(error.message == "slow" && error.request?.path == "boards")
        #expect(changedError.message == "slower" && changedError.request?.path == "elsewhere")

        let configuration = APIClient.Configuration()
        let changedConfiguration = configuration.with { $0.timeouts.attempt = .seconds(1); $0.headers["X-B"] = "b" }
        #expect(configuration.timeouts.attempt == .seconds(60) && configuration.headers["X-B"] == nil)
        #expect(changedConfiguration.timeouts.attempt == .seconds(1) && changedConfiguration.headers["X-B"] == "b")
    }

    @Test("copies of one request changed on many tasks at once never see each other's changes")
    func concurrentCopies() async {
        let shared = Request.get("items", headers: ["X-Base": "yes"])
        let seen = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                group.addTask {
                    var mine = shared
                    mine.headers["X-Index"] = String(index)
                    mine.parameters["page"] = .int(index)
                    return mine.headers["X-Index"] == String(index) && mine.parameters["page"] == .int(index)
                        && mine.headers["X-Base"] == "yes"
                }
            }
            var all: [Bool] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(seen.count == 64 && seen.allSatisfy { $0 })
        #expect(shared.headers["X-Index"] == nil && shared.parameters.isEmpty)
    }
}
