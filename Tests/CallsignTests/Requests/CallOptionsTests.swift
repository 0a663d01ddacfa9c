import ArgumentParser
import Callsign
import CallsignOpenAPI
import CallsignTesting
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization
import Testing

@testable import callsign

/// ``CallOptions`` is the one declaration of what shapes a call. This suite walks it: every option
/// has a row below (a new option without one fails `everyOptionHasARow`), and each option, set in
/// a definitions file, a builder call, a callback's context, an OpenAPI operation's policy and the
/// command line, reaches the request the pipeline sends.
@Suite("Call options: one declaration, one merge rule, every way of calling reaches the request", .hangGuard)
struct CallOptionsTests {
    /// One option: its name (as ``CallOptions`` declares it), a value different from "unset", and
    /// the key and value a definitions file writes for that same value.
    struct Row: Sendable {
        let name: String
        let set: @Sendable (inout CallOptions) -> Void
        let key: String
        let file: JSONValue
    }

    static let rows: [Row] = [
        Row(name: "contentType", set: { $0.contentType = .formURLEncoded }, key: "contentType", file: "form"),
        Row(name: "commonParameterPlacement", set: { $0.commonParameterPlacement = .parameters }, key: "commonParameterPlacement", file: "parameters"),
        Row(name: "acceptedStatusCodes", set: { $0.acceptedStatusCodes = StatusCodes(ranges: [200...200, 204...204]) }, key: "acceptedStatusCodes", file: [200, 204]),
        Row(name: "needsAuthorization", set: { $0.needsAuthorization = true }, key: "needsAuthorization", file: true),
        Row(name: "usesEnvelope", set: { $0.usesEnvelope = false }, key: "envelope", file: false),
        Row(name: "responseType", set: { $0.responseType = .objects }, key: "responseType", file: "objects"),
        Row(name: "responseClass", set: { $0.responseClass = "User" }, key: "responseClass", file: "User"),
        Row(name: "errorClasses", set: { $0.errorClasses = .all("ProblemDetails") }, key: "errorClass", file: "ProblemDetails"),
        Row(name: "acceptsNullResponse", set: { $0.acceptsNullResponse = true }, key: "acceptsNullResponse", file: true),
        Row(name: "responseFormat", set: { $0.responseFormat = .propertyList }, key: "responseFormat", file: "propertyList"),
        Row(name: "pagination", set: { $0.pagination = .link }, key: "pagination", file: "link"),
        Row(name: "timeout", set: { $0.timeout = .seconds(7) }, key: "timeout", file: 7),
        Row(name: "deadline", set: { $0.deadline = .seconds(11) }, key: "deadline", file: 11),
        Row(name: "retry", set: { $0.retry = RetryPolicy(maximumAttempts: 2) }, key: "retry", file: 2),
        Row(name: "hedging", set: { $0.hedging = .off }, key: "hedging", file: false),
        Row(name: "cachePolicy", set: { $0.cachePolicy = .reloadIgnoringCache }, key: "cache", file: "reloadIgnoringCache"),
        Row(name: "servesStaleWhenOffline", set: { $0.servesStaleWhenOffline = false }, key: "servesStaleWhenOffline", file: false),
        Row(name: "storePolicy", set: { $0.storePolicy = StorePolicy.none }, key: "storePolicy", file: "none"),
        Row(name: "tag", set: { $0.tag = "billing" }, key: "tag", file: "billing"),
    ]

    /// Every option set, each as its row says.
    static var every: CallOptions {
        var options = CallOptions()
        for row in rows { row.set(&options) }
        return options
    }

    /// The options' names as the type declares them.
    static var declared: [String] { Mirror(reflecting: CallOptions()).children.compactMap(\.label) }

    /// A definitions file with one API that sets every option, and a route that answers it.
    static func definitionsFile(in folder: URL, base: URL) throws -> URL {
        var every: [String: JSONValue] = ["path": "every"]
        for row in rows { every[row.key] = row.file }
        let document: JSONValue = ["DEFAULT": ["baseURL": .string(base.absoluteString)], "Every": .object(every)]
        let file = folder.appendingPathComponent("every.json")
        try JSONEncoder().encode(document).write(to: file)
        return file
    }

    /// Records the options of each request that passes through the client's chain.
    final class Seen: Middleware {
        let options = Mutex<[CallOptions]>([])
        func intercept(_ request: Request, context: MiddlewareContext, next: MiddlewareNext) async throws -> Response {
            options.withLock { $0.append(request.options) }
            return try await next(request)
        }
        var last: CallOptions? { options.withLock { $0.last } }
    }

    @Test("every declared option has a row, every row sets its option, and the merge rule covers each one")
    func everyOptionHasARow() {
        #expect(Set(Self.declared) == Set(Self.rows.map(\.name)), "an option without a row, or a row without an option")
        #expect(Self.declared.count == Self.rows.count)
        // Each row sets its own option and no other.
        for row in Self.rows {
            var options = CallOptions()
            row.set(&options)
            let set = Mirror(reflecting: options).children.filter { !Self.isNil($0.value) }.compactMap(\.label)
            #expect(set == [row.name], "\(row.name) sets \(set)")
        }
        // One rule: what a call leaves unset comes from below, what it sets wins.
        let every = Self.every
        #expect(CallOptions().merged(over: every) == every)
        #expect(every.merged(over: CallOptions()) == every)
        var call = CallOptions()
        call.timeout = .seconds(1)
        #expect(call.merged(over: every).timeout == .seconds(1))
        #expect(call.merged(over: every).retry == every.retry)
    }

    @Test("a definitions file, a definition in code and DEFAULT: each option read, merged and carried into the request sent")
    func definitionsFileReachesTheRequest() async throws {
        try await TestServer.withRunning { server in
            server.route("/every") { _ in .json([]) }
            try await withTemporaryFolder("call-options") { folder in
                let file = try Self.definitionsFile(in: folder, base: server.baseURL)
                let definitions = try APIDefinitions(contentsOf: file)
                #expect(try definitions.definition(named: "Every").options == Self.every)
                let seen = Seen()
                let client = APIClient(definitions: definitions, configuration: .init { $0.middlewares = [seen] })
                _ = try? await client.call("Every")
                #expect(seen.last == Self.every)

                // The same options from DEFAULT reach a definition that sets none of them.
                var defaults = APIDefinition(baseURL: server.baseURL)
                defaults.options = Self.every
                let inherited = try APIDefinitions(default: defaults, [APIDefinition(name: "Plain", path: "every")])
                let inheriting = APIClient(definitions: inherited, configuration: .init { $0.middlewares = [seen] })
                _ = try? await inheriting.call("Plain")
                #expect(seen.last == Self.every)
            }
        }
    }

    @Test("the builder, a hand-made request and a callback's context carry every option to the request sent")
    func codeReachesTheRequest() async throws {
        try await TestServer.withRunning { server in
            server.route("/every") { _ in .json([]) }
            let seen = Seen()
            let client = APIClient(configuration: .init {
                $0.baseURL = server.baseURL
                $0.middlewares = [seen]
            })
            _ = try? await client.get("every").options(Self.every).send()
            #expect(seen.last == Self.every)

            // One option at a time through the builder's key-path form.
            _ = try? await client.get("every").option(\.deadline, .seconds(3)).option(\.tag, "one").send()
            #expect(seen.last?.deadline == .seconds(3))
            #expect(seen.last?.tag == "one")

            var request = Request.get("every")
            request.options = Self.every
            _ = try? await client.send(request)
            #expect(seen.last == Self.every)

            // A callback's context: its options win over the definition's.
            let definitions = try APIDefinitions([APIDefinition(name: "Every", baseURL: server.baseURL, path: "every", timeout: .seconds(30))])
            let calling = APIClient(definitions: definitions, configuration: .init {
                $0.middlewares = [seen]
                $0.callbacks.delivery = .immediate
            })
            let finished = AsyncStream<Void>.makeStream()
            _ = calling.request("Every") { c in
                c.options = Self.every
                c.finished { finished.continuation.finish() }
            }
            for await _ in finished.stream {}
            #expect(seen.last == Self.every)
        }
    }

    @Test("an OpenAPI operation's policy carries every option to the request sent")
    func openAPIPolicyReachesTheRequest() async throws {
        try await TestServer.withRunning { server in
            server.route("/every") { _ in .json([]) }
            let seen = Seen()
            let client = APIClient(configuration: .init { $0.middlewares = [seen] })
            let transport = CallsignClientTransport(client, policies: ["every": OperationPolicy(options: Self.every)])
            _ = try? await transport.send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/every"), body: nil, baseURL: server.baseURL, operationID: "every")
            #expect(seen.last == Self.every)

            // Without a word on credentials, an operation asks for them: its document's security decides.
            var quiet = Self.every
            quiet.needsAuthorization = nil
            #expect(OperationPolicy(options: quiet).needsAuthorization == true)
        }
    }

    @Test("the command line: a definitions file's options reach callsign call's request, and --timeout, --deadline and --retry win over them")
    func commandLineReachesTheRequest() async throws {
        try await withTemporaryFolder("call-options-cli") { folder in
            let file = try Self.definitionsFile(in: folder, base: try #require(URL(string: "http://127.0.0.1:9/")))
            // Reading a command line takes a second in a debug build: a thread of its own.
            let options = try await onOwnThread { () throws -> CallOptions in
                let parsed = try CallsignCommand.parseAsRoot(
                    ["call", "Every", "-D", file.path, "--timeout", "5", "--deadline", "9", "--retry", "3"])
                guard let command = parsed as? CallCommand else { throw ValidationError("not a call command") }
                let loaded = try DefinitionsArgument.loaded(file.path, baseURL: nil)
                var request = try command.request(from: loaded, items: AdHocItems(parsing: []))
                var configuration = APIClient.Configuration()
                _ = command.exchange.clientOptions.limit(&request, configuration: &configuration, says: false)
                return request.options
            }
            var expected = Self.every
            expected.timeout = .seconds(5)
            expected.deadline = .seconds(9)
            #expect(options.retry?.maximumAttempts == 3)
            var rest = options
            rest.retry = expected.retry
            #expect(rest == expected)
        }
    }

    /// Whether a reflected stored property is an optional holding nothing.
    private static func isNil(_ value: Any) -> Bool {
        let mirror = Mirror(reflecting: value)
        return mirror.displayStyle == .optional && mirror.children.isEmpty
    }
}
