public import Callsign
public import Foundation
import Synchronization

/// A small demo API the ``TestServer`` serves under `/demo/`, with a definitions file that
/// describes it — what `callsign demo` walks through, and a ready-made playground for tests.
///
/// | route | answer |
/// |---|---|
/// | `GET /demo/api/v2/topics/recommended?page=&page_size=` | an array of topics |
/// | `GET /demo/api/v2/user/{id}/profile` | a profile; 404 for unknown ids |
/// | `POST /demo/api/v2/user/login` | `{token, user}` for password `secret`, else 401 |
/// | `GET /demo/boards`, `GET /demo/boards/{id}`, `POST /demo/boards` | boards (Malibu's example) |
/// | `GET /demo/api/v2/me` | the signed-in user, for `Bearer demo-access-2` only; else 401 |
/// | `POST /demo/api/v2/token/refresh` | `{"access_token": "demo-access-2"}` |
/// | `GET /demo/old-boards/{id}` | 301 to `/demo/boards/{id}` |
/// | `GET /demo/v1/{room}/users` | users, inside an xAPI envelope |
/// | `GET /demo/v1/{room}/audiences` | an envelope with error code 40001 for room `closed` |
/// | `GET /demo/api/v2/catalog` | a catalog with `ETag` and `no-cache`: 304 when `If-None-Match` matches |
/// | `POST /demo/api/v2/notes` | 201 with the note and an id |
/// | `GET /demo/boards` | also `Cache-Control: max-age=30` |
public enum DemoAPI {
    /// The demo API's definitions, in YAML, for a server at `baseURL`.
    public static func definitionsYAML(baseURL: URL) -> String {
        """
        # The demo API of Callsign's test server. RFAPI keys and camelCase keys mix freely.
        DEFAULT:
          Base: \(baseURL.absoluteString)demo/
          Path Prefix: api/v2/
          Method: GET
          Authorization: false
        TopicListRecommended:
          Path: topics/recommended
          Response Type: 3
          Response Class: Topic
        UserProfile:
          path: user/{user_id}/profile
          responseType: object
          responseClass: Profile
        UserLogin:
          method: POST
          path: user/login
          contentType: form
          responseType: object
        Me:
          path: me
          needsAuthorization: true
          responseType: object
        TokenRefresh:
          method: POST
          path: token/refresh
        OldBoard:
          baseURL: \(baseURL.absoluteString)demo/
          pathPrefix: ""
          path: old-boards/{id}
          responseType: object
        RoomUsers:
          baseURL: \(baseURL.absoluteString)demo/
          pathPrefix: v1/
          path: "{room}/users"
          envelope: true
          responseType: objects
          tag: system1
        Catalog:
          path: catalog
          responseType: object
          cache: useProtocol
        CreateNote:
          method: POST
          path: notes
          responseType: object
          storePolicy: offline
        RoomAudiences:
          baseURL: \(baseURL.absoluteString)demo/
          pathPrefix: v1/
          path: "{room}/audiences"
          envelope: true
          tag: system2
        """
    }

    /// The boards of the demo API as an OpenAPI 3.1 document, for a server at `baseURL`.
    public static func openAPIYAML(baseURL: URL) -> String {
        """
        openapi: 3.1.0
        info: {title: Demo boards, version: "1.0"}
        servers:
          - url: \(baseURL.absoluteString)demo
        paths:
          /boards/{id}:
            get:
              operationId: showBoard
              summary: One board
              parameters:
                - {name: id, in: path, required: true, schema: {type: integer, minimum: 1}}
              responses:
                '200':
                  description: The board.
                  content:
                    application/json:
                      schema: {$ref: '#/components/schemas/Board'}
        components:
          schemas:
            Board:
              type: object
              required: [id, title]
              properties:
                id: {type: integer}
                title: {type: string}
        """
    }

    /// The demo definitions, loaded.
    public static func definitions(baseURL: URL) throws(APIError) -> APIDefinitions {
        try APIDefinitions(data: Data(definitionsYAML(baseURL: baseURL).utf8), format: .yaml)
    }

    /// The access token the demo API accepts; `demo-access-1` is an expired one.
    public static let currentAccessToken = "demo-access-2"

    static let topics: [JSONValue] = (1...45).map { index in
        ["id": .int(index), "title": .string("Topic \(index)"), "author": .string(["ann", "bo", "cy"][index % 3])]
    }

    private static let notes = NoteCounter()

    /// Numbers notes.
    final class NoteCounter: Sendable {
        private let value = Mutex(0)
        func next() -> Int { value.withLock { $0 += 1; return $0 } }
    }

    static let boards: [JSONValue] = [
        ["id": 1, "title": "Balsa Fish", "type": 1],
        ["id": 7, "title": "Longboard", "type": 2],
    ]

    static func respond(to request: ServerRequest, segments: [String]) -> ServerResponse {
        switch (request.method, segments) {
        case ("GET", ["api", "v2", "topics", "recommended"]):
            let page = max(Int(request.query("page") ?? "1") ?? 1, 1)
            let size = min(max(Int(request.query("page_size") ?? "20") ?? 20, 1), 100)
            let start = (page - 1) * size
            let slice = start < topics.count ? Array(topics[start..<min(start + size, topics.count)]) : []
            return .json(.array(slice))
        case ("GET", let path) where path.count == 5 && path[0...2] == ["api", "v2", "user"] && path[4] == "profile":
            guard let id = Int(path[3]), (1...1000).contains(id) else {
                return .json(["error": .string("no user \(path[3])")], status: 404)
            }
            return .json(["id": .int(id), "name": .string("User \(id)"), "bio": "Surfs the demo API."])
        case ("POST", ["api", "v2", "user", "login"]):
            let form = Dictionary(
                ServerRequest.decodeForm(String(decoding: request.body, as: UTF8.self)), uniquingKeysWith: { $1 })
            let json = (try? JSONValue(parsing: request.body))?.objectValue ?? [:]
            let name = form["name"] ?? json["name"]?.stringValue ?? ""
            let password = form["password"] ?? json["password"]?.stringValue ?? ""
            guard !name.isEmpty, password == "secret" else {
                return .json(["error": "wrong name or password"], status: 401)
            }
            return .json(["token": "demo-token-for-\(name)", "user": ["id": 1, "name": .string(name)]])
        case ("GET", ["api", "v2", "me"]):
            guard request.header("Authorization") == "Bearer \(currentAccessToken)" else {
                return .json(["error": "the access token expired"], status: 401, headers: [("WWW-Authenticate", "Bearer realm=\"demo\"")])
            }
            return .json(["id": 1, "name": "Ann", "plan": "pro"])
        case ("POST", ["api", "v2", "token", "refresh"]):
            return .json(["access_token": .string(currentAccessToken), "expires_in": 3600])
        case ("GET", let path) where path.count == 2 && path[0] == "old-boards":
            return ServerResponse(status: 301, headers: [("Location", "/demo/boards/\(path[1])")])
        case ("GET", ["boards"]):
            return .json(.array(boards), headers: [("Cache-Control", "max-age=30")])
        case ("GET", ["api", "v2", "catalog"]):
            let tag = "\"catalog-v1\""
            if request.header("If-None-Match") == tag {
                return ServerResponse(status: 304, headers: [("ETag", tag), ("Cache-Control", "no-cache")])
            }
            return .json(
                ["version": 1, "items": .array((1...40).map { ["sku": .string("SKU-\($0)"), "price": .int(10 + $0)] })],
                headers: [("ETag", tag), ("Cache-Control", "no-cache")])
        case ("POST", ["api", "v2", "notes"]):
            var note = (try? JSONValue(parsing: request.body))?.objectValue ?? [:]
            note["id"] = .int(notes.next())
            return .json(.object(note), status: 201)
        case ("GET", let path) where path.count == 2 && path[0] == "boards":
            guard let board = boards.first(where: { $0["id"]?.intValue == Int(path[1]) }) else {
                return .json(["error": "no such board"], status: 404)
            }
            return .json(board)
        case ("POST", ["boards"]):
            var board = (try? JSONValue(parsing: request.body))?.objectValue ?? [:]
            board["id"] = 99
            return .json(.object(board), status: 201)
        case ("GET", let path) where path.count == 3 && path[0] == "v1" && path[2] == "users":
            return .json([
                "code": 0, "msg": "",
                "data": [["id": 1, "name": "Ann", "room": .string(path[1])], ["id": 2, "name": "Bo", "room": .string(path[1])]],
            ])
        case ("GET", let path) where path.count == 3 && path[0] == "v1" && path[2] == "audiences":
            if path[1] == "closed" { return .json(["errcode": 40001, "errmsg": "the room is closed"]) }
            return .json(["errcode": 0, "ret": [["id": 3, "name": "Cy"]]])
        default:
            return .json(["error": .string("no demo route for \(request.method) \(request.rawPath)")], status: 404)
        }
    }
}
