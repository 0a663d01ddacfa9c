import Callsign
@testable import CallsignOpenAPI
import CallsignTesting
import Foundation
import Testing

@testable import callsign

/// A document with everything a load makes beyond plain operations: warnings (no operationId, a
/// repaired version), an operation with its own server, pagination, an event stream, security
/// schemes, and response schemas shared through a component.
private let richDocument = Data(
    """
    openapi: "3.1"
    info: {title: Rich, version: "1"}
    servers: [{url: "http://127.0.0.1:9/v1/"}]
    components:
      securitySchemes:
        key: {type: apiKey, name: X-Key, in: header}
        token: {type: http, scheme: bearer}
      schemas:
        Pet: {type: object, required: [id], properties: {id: {type: integer}, tag: {type: string, enum: [cat, dog]}, next: {$ref: '#/components/schemas/Pet'}}}
    security: [{key: []}]
    paths:
      /pets:
        get:
          operationId: listPets
          parameters: [{name: after, in: query, schema: {type: string}}]
          responses:
            '200': {description: a page, content: {application/json: {schema: {type: object, properties: {data: {type: array, items: {$ref: '#/components/schemas/Pet'}}, next: {type: string}}}}}}
          x-speakeasy-pagination:
            type: cursor
            inputs: [{name: after, in: parameters, type: cursor}]
            outputs: {nextCursor: $.next, results: $.data}
        post:
          requestBody: {required: true, content: {application/json: {schema: {$ref: '#/components/schemas/Pet'}}}}
          responses: {'201': {description: made}}
      /pets/{id}:
        get:
          operationId: showPet
          servers: [{url: "http://127.0.0.1:8/other/"}]
          parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
          responses: {'200': {description: one, content: {application/json: {schema: {$ref: '#/components/schemas/Pet'}}}}, default: {description: no}}
      /feed:
        get:
          operationId: feed
          security: []
          responses: {'200': {description: events, content: {text/event-stream: {schema: {type: string}}}}}
    """.utf8)

@Suite("The description cache: a loaded OpenAPI document kept, read back in its place, and never trusted", .hangGuard)
struct DescriptionCacheTests {
    /// What a test compares: everything a load makes, as plain data.
    private func same(_ left: OpenAPIOperations, _ right: OpenAPIOperations) throws {
        #expect(left.operations == right.operations)
        #expect(left.securitySchemes == right.securitySchemes)
        #expect(left.warnings == right.warnings)
        #expect(left.baseURL == right.baseURL)
        #expect(left.definitions.names == right.definitions.names)
        for name in left.definitions.names {
            #expect(try left.definitions.definition(named: name) == right.definitions.definition(named: name), "\(name)")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(try encoder.encode(left.compiled.rules) == encoder.encode(right.compiled.rules))
        #expect(left.compiled.responseSchemas == right.compiled.responseSchemas)
    }

    @Test("the second load is read from the entry and equals a fresh load: operations, definitions, schemes, warnings, response rules")
    func secondLoadIsKept() async throws {
        try await withTemporaryFolder("description-cache") { folder in
            let cache = DescriptionCache(directory: folder.appendingPathComponent("descriptions"))
            let fresh = try OpenAPIOperations(data: richDocument, format: .yaml)
            #expect(fresh.warnings.contains { $0.contains("no operationId") })
            #expect(try fresh.definitions.definition(named: "listPets").pagination != nil)
            #expect(try fresh.definitions.definition(named: "showPet").baseURL?.absoluteString == "http://127.0.0.1:8/other/")

            let first = try OpenAPIOperations.loading(richDocument, format: .yaml, cache: cache)
            #expect(first.outcome == .missing)
            let entries = cache.entries()
            #expect(entries.count == 1)
            let entry = try #require(entries.first)
            let attributes = try FileManager.default.attributesOfItem(atPath: entry.url.path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            let folderAttributes = try FileManager.default.attributesOfItem(atPath: cache.directory.path)
            #expect((folderAttributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)

            let second = try OpenAPIOperations.loading(richDocument, format: .yaml, cache: cache)
            #expect(second.outcome == .used)
            try same(second.operations, fresh)
            try same(first.operations, fresh)

            // The kept response rules check answers as the fresh ones do.
            let bad = #"{"data": [{"id": 1, "tag": "cat"}, {"tag": "dog"}]}"#
            let good = #"{"data": [{"id": 1, "tag": "cat", "next": {"id": 2}}]}"#
            for operations in [fresh, second.operations] {
                let rules = operations.compiled.rules
                let rule = try #require(operations.compiled.responseSchemas["listPets"]?["200"])
                let problem = rules.problem(with: try JSONValue(parsing: Data(bad.utf8)), rule: rule, at: "$")
                #expect(problem?.description == "$.data[1].id is missing", "\(problem?.description ?? "none")")
                #expect(rules.problem(with: try JSONValue(parsing: Data(good.utf8)), rule: rule, at: "$") == nil)
            }
            // The public initializer goes through the same cache.
            try same(try OpenAPIOperations(data: richDocument, format: .yaml, cache: cache), fresh)
        }
    }

    @Test("a changed document, other limits or strictness have their own entry; the old one is left alone")
    func otherKeys() async throws {
        try await withTemporaryFolder("description-cache") { folder in
            let cache = DescriptionCache(directory: folder)
            _ = try OpenAPIOperations.loading(richDocument, format: .yaml, cache: cache)
            var changed = richDocument
            changed.append(Data("\n".utf8))
            #expect(try OpenAPIOperations.loading(changed, format: .yaml, cache: cache).outcome == .missing)
            let limits = Limits { $0.maximumReferenceDepth = 40 }
            #expect(try OpenAPIOperations.loading(richDocument, format: .yaml, limits: limits, cache: cache).outcome == .missing)
            // Strict refuses this document (its version needs a repair): nothing is kept for it.
            #expect(throws: APIError.self) { try OpenAPIOperations.loading(richDocument, format: .yaml, strict: true, cache: cache) }
            #expect(cache.entries().count == 3)
            #expect(try OpenAPIOperations.loading(richDocument, format: .yaml, cache: cache).outcome == .used)
        }
    }

    @Test("a damaged entry is ignored, removed and rebuilt: a flipped byte, a cut file, another key's entry, inconsistent contents")
    func damagedEntries() async throws {
        try await withTemporaryFolder("description-cache") { folder in
            let cache = DescriptionCache(directory: folder)
            let fresh = try OpenAPIOperations(data: richDocument, format: .yaml)
            let key = DescriptionCache.key(for: richDocument, format: .yaml, limits: .default, strict: false)
            _ = try OpenAPIOperations.loading(richDocument, format: .yaml, cache: cache)
            let url = cache.url(for: key)
            let good = try Data(contentsOf: url)

            var flipped = good
            flipped[flipped.count - 10] ^= 0x20
            let otherKey = String(repeating: "0", count: 64)
            var foreign = good
            foreign.replaceSubrange(DescriptionCache.magic.count..<(DescriptionCache.magic.count + 64), with: Data(otherKey.utf8))
            // Contents that decode, with a checksum that holds, but a rule naming a later rule.
            var compiled = fresh.compiled
            compiled.responseSchemas["listPets"]?["200"] = compiled.rules.rules.count + 5
            let payload = try JSONEncoder().encode(compiled)
            var inconsistent = DescriptionCache.magic
            inconsistent.append(Data((key + "\n" + Digest.sha256Hex(payload) + "\n").utf8))
            inconsistent.append(payload)

            for (label, bytes) in [("flipped", flipped), ("cut", good.prefix(good.count / 2)), ("foreign", foreign), ("inconsistent", inconsistent), ("empty", Data())] {
                try Data(bytes).write(to: url)
                let loaded = try OpenAPIOperations.loading(richDocument, format: .yaml, cache: cache)
                guard case .rebuilt(let reason) = loaded.outcome else {
                    Issue.record("\(label): \(loaded.outcome as Any)")
                    continue
                }
                #expect(!reason.isEmpty, "\(label)")
                try same(loaded.operations, fresh)
                #expect(try Data(contentsOf: url) == good, "\(label): the entry is written again")
            }
            #expect(try OpenAPIOperations.loading(richDocument, format: .yaml, cache: cache).outcome == .used)
        }
    }

    @Test("an entry that is a link, or another user's file, is never read: the link itself is removed, its target untouched")
    func linksAndOtherUsers() async throws {
        try await withTemporaryFolder("description-cache") { folder in
            let cache = DescriptionCache(directory: folder.appendingPathComponent("descriptions"))
            let key = DescriptionCache.key(for: richDocument, format: .yaml, limits: .default, strict: false)
            _ = try OpenAPIOperations.loading(richDocument, format: .yaml, cache: cache)
            let url = cache.url(for: key)
            // A good entry elsewhere, planted by link: even a valid entry is not read through a link.
            let target = folder.appendingPathComponent("planted")
            try FileManager.default.moveItem(at: url, to: target)
            let planted = try Data(contentsOf: target)
            try FileManager.default.createSymbolicLink(at: url, withDestinationURL: target)
            let throughLink = try OpenAPIOperations.loading(richDocument, format: .yaml, cache: cache)
            guard case .rebuilt = throughLink.outcome else {
                Issue.record("a link was read: \(throughLink.outcome as Any)")
                return
            }
            #expect(try Data(contentsOf: target) == planted, "the link's target is untouched")
            let kind = try FileManager.default.attributesOfItem(atPath: url.path)[.type] as? FileAttributeType
            #expect(kind == .typeRegular, "a file of its own replaced the link")

            // Another user's file at the name (the tests run as root, who can give it away).
            guard geteuid() == 0 else { return }
            #expect(chown(url.path, 65534, 65534) == 0)
            let foreign = try OpenAPIOperations.loading(richDocument, format: .yaml, cache: cache)
            guard case .rebuilt = foreign.outcome else {
                Issue.record("another user's entry was read: \(foreign.outcome as Any)")
                return
            }
            #expect((try FileManager.default.attributesOfItem(atPath: url.path)[.ownerAccountID] as? NSNumber)?.intValue == 0)
        }
    }

    @Test("a cache folder that is a link or another user's is not used: the load reads the document and keeps nothing")
    func folderNotUsed() async throws {
        try await withTemporaryFolder("description-cache") { folder in
            let real = folder.appendingPathComponent("real")
            try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
            let linked = folder.appendingPathComponent("linked")
            try FileManager.default.createSymbolicLink(at: linked, withDestinationURL: real)
            let loaded = try OpenAPIOperations.loading(richDocument, format: .yaml, cache: DescriptionCache(directory: linked))
            #expect(loaded.outcome == .unavailable)
            #expect(try FileManager.default.contentsOfDirectory(atPath: real.path).isEmpty)
            #expect(loaded.operations.operations.count == 4)
        }
    }

    @Test("over its size, the least recently used entries go; removeAll removes entries and nothing else")
    func sizeAndClear() async throws {
        try await withTemporaryFolder("description-cache") { folder in
            var documents: [Data] = []
            for index in 0..<4 {
                var document = OpenAPIFixtures.large(operations: 20, depth: 2)
                document.append(Data("# \(index)\n".utf8))
                documents.append(document)
            }
            let unbounded = DescriptionCache(directory: folder)
            _ = try OpenAPIOperations.loading(documents[0], format: .yaml, cache: unbounded)
            let size = try #require(unbounded.entries().first?.size)
            try unbounded.removeAll()
            // Room for two entries and a half.
            let cache = DescriptionCache(directory: folder, maximumSize: size * 5 / 2)
            for (index, document) in documents.enumerated() {
                _ = try OpenAPIOperations.loading(document, format: .yaml, cache: cache)
                // Modification times one second apart, oldest first, whatever the file system's resolution.
                let key = DescriptionCache.key(for: document, format: .yaml, limits: .default, strict: false)
                try FileManager.default.setAttributes(
                    [.modificationDate: Date(timeIntervalSinceNow: Double(index - 10))], ofItemAtPath: cache.url(for: key).path)
            }
            let kept = cache.entries().map(\.url.lastPathComponent)
            #expect(kept.count == 2)
            let newest = documents.suffix(2).map { cache.url(for: DescriptionCache.key(for: $0, format: .yaml, limits: .default, strict: false)).lastPathComponent }
            #expect(Set(kept) == Set(newest))

            let other = folder.appendingPathComponent("notes.txt")
            try Data("mine".utf8).write(to: other)
            #expect(try cache.removeAll() == 2)
            #expect(cache.entries().isEmpty)
            #expect(FileManager.default.fileExists(atPath: other.path))
        }
    }

    @Test("the rule table's kept bytes read back as the same table; damaged bytes, later places or nesting past the limit are refused")
    func ruleTables() throws {
        let fresh = try OpenAPIOperations(data: richDocument, format: .yaml)
        let rules = fresh.compiled.rules
        #expect(rules.isWellFormed)
        #expect(fresh.compiled.isConsistent)
        let bytes = rules.bytes
        #expect(SchemaRules.rules(in: bytes) == rules.rules)
        #expect(rules.rules.contains { $0.allowed == ["cat", "dog"] }, "allowed values survive as JSON")
        // Every cut, and a count that claims more than there is, is refused rather than read past.
        for length in [0, 1, 4, 5, bytes.count / 2, bytes.count - 1] {
            #expect(SchemaRules.rules(in: bytes.prefix(length)) == nil, "cut at \(length)")
        }
        var claimsMore = bytes
        claimsMore[0] = 0xFF
        claimsMore[3] = 0x7F
        #expect(SchemaRules.rules(in: claimsMore) == nil)
        #expect(SchemaRules.rules(in: bytes + Data([0])) == nil, "bytes after the last rule")

        typealias Rule = SchemaRules.Rule
        #expect(SchemaRules(rules: [Rule(kind: .anything), Rule(kind: .all, parts: [0])]).isWellFormed)
        #expect(!SchemaRules(rules: [Rule(kind: .all, parts: [1]), Rule(kind: .anything)]).isWellFormed)
        #expect(!SchemaRules(rules: [Rule(kind: .value, items: 0)]).isWellFormed)
        #expect(!SchemaRules(rules: [Rule(kind: .anything), Rule(kind: .some, parts: [-1])]).isWellFormed)
        let chain = [Rule(kind: .anything)] + (0...SchemaRules.maximumDepth).map { Rule(kind: .value, type: "array", items: $0) }
        #expect(!SchemaRules(rules: chain).isWellFormed)
        #expect(SchemaRules(rules: Array(chain.dropLast())).isWellFormed)
    }

    @Test("the operations' kept bytes read back as the same operations; every cut is refused")
    func operationBytes() throws {
        let operations = try OpenAPIOperations(data: richDocument, format: .yaml).operations
        #expect(operations.contains { $0.parameters.contains { $0.allowedValues == nil } })
        #expect(operations.contains { $0.eventStream == .only })
        var out = ByteWriter()
        OpenAPIOperations.Operation.write(operations, to: &out)
        var input = ByteReader(out.bytes)
        #expect(OpenAPIOperations.Operation.all(from: &input) == operations)
        #expect(input.remaining == 0)
        for length in stride(from: 0, to: out.bytes.count, by: max(1, out.bytes.count / 97)) {
            var cut = ByteReader(Array(out.bytes.prefix(length)))
            #expect(OpenAPIOperations.Operation.all(from: &cut) == nil, "cut at \(length)")
        }
    }

    @Test("callsign reads an OpenAPI document from the user's cache on the second command; callsign cache and cache clear")
    func commandLine() async throws {
        try await withTemporaryFolder("description-cache-cli") { folder in
            let file = folder.appendingPathComponent("rich.yaml")
            try richDocument.write(to: file)
            // The user's cache, in a folder of this test's: XDG_CACHE_HOME as the command reads it.
            let environment = ["XDG_CACHE_HOME": folder.appendingPathComponent("cache").path]
            let cache = DescriptionCache.user(environment: environment)
            #expect(cache.directory.path == folder.appendingPathComponent("cache/callsign/descriptions").path)
            let key = DescriptionCache.key(for: richDocument, format: .yaml, limits: .default, strict: false)
            let first = try await CLIRunner.run(["list", "-D", file.path], environment: environment)
            #expect(first.status == 0, "\(first.standardError)")
            #expect(cache.entries().count == 1, "the first command kept the document")
            let second = try await CLIRunner.run(["list", "-D", file.path], environment: environment)
            #expect(second.standardOutput == first.standardOutput)
            #expect(second.standardError == first.standardError, "the warnings are the same")
            #expect(cache.operations(for: key).outcome == .used)
            let dry = try await CLIRunner.run(["call", "showPet", "-D", file.path, "id=7", "--dry-run"], environment: environment)
            #expect(dry.status == 0, "\(dry.standardError)")
            #expect(dry.standardOutput.contains("GET /other/pets/7"), "\(dry.standardOutput)")

            let info = try await CLIRunner.run(["cache"], environment: environment)
            #expect(info.status == 0)
            #expect(info.standardOutput.contains(cache.directory.path), "\(info.standardOutput)")
            #expect(info.standardOutput.contains("1 documents"), "\(info.standardOutput)")
            let cleared = try await CLIRunner.run(["cache", "clear"], environment: environment)
            #expect(cleared.status == 0)
            #expect(cleared.standardOutput.contains("Removed 1 kept documents."), "\(cleared.standardOutput)")
            #expect(cache.operations(for: key).outcome == .missing)
        }
    }
}
