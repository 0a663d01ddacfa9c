import Callsign
import Foundation
import OpenAPIKit
import OpenAPIKit30
import OpenAPIKitCompat

/// How a document that deviates from the specification is loaded: what can be repaired is
/// repaired and reported, what cannot be read costs only itself (one component, one operation),
/// and in strict mode every deviation is a problem, all of them listed in one error.
extension OpenAPIOperations {
    /// What a load noticed: repairs and left-out parts (warnings), or, in strict mode, the
    /// problems the document is refused for.
    struct LoadReport {
        let strict: Bool
        private(set) var findings: [DocumentNormalizer.Finding] = []

        init(strict: Bool) {
            self.strict = strict
        }

        mutating func add(_ kind: String, _ message: LocalizedMessage) {
            findings.append(DocumentNormalizer.Finding(kind: kind, message: message))
        }

        mutating func add(_ more: [DocumentNormalizer.Finding]) {
            findings += more
        }

        /// At most three of each kind, then how many more: a document with 400 schemas written
        /// the same wrong way gets four lines, not 400. Each kind's places in the order of their
        /// text, the kinds in the order of their first line: the same document says the same
        /// lines on every load, however its maps were walked.
        var warnings: [String] {
            var byKind: [String: [String]] = [:]
            for finding in findings {
                byKind[finding.kind, default: []].append(finding.message.description)
            }
            let sorted = byKind.mapValues { $0.sorted() }
            let order = sorted.keys.sorted { (sorted[$0]?.first ?? "", $0) < (sorted[$1]?.first ?? "", $1) }
            return order.flatMap { kind -> [String] in
                let messages = sorted[kind] ?? []
                var lines = Array(messages.prefix(3))
                if messages.count > 3 {
                    lines.append(("… and \(messages.count - 3) more like these" as LocalizedMessage).description)
                }
                return lines
            }
        }

        /// In strict mode, the error listing every problem; `nil` when there is none.
        var refusal: APIError? {
            guard strict, !findings.isEmpty else { return nil }
            // One line, so that a terminal shows it whole and a name in the document cannot start
            // a line of its own.
            let list = findings.enumerated().map { "(\($0.offset + 1)) " + $0.element.message.description }.joined(separator: " ")
            return APIError(
                .invalidDefinition,
                localized: "the OpenAPI document does not follow the specification (\(findings.count) problems; without strict, they are repaired or left out): \(list)")
        }
    }

    /// OpenAPIKit's account of a decoding or expansion error (what it expected, and where), on
    /// one line, at most 300 characters.
    static func describe(_ error: any Error) -> String {
        let text: String
        switch error {
        case let reference as OpenAPIKit.OpenAPI.Components.ReferenceError:
            switch reference {
            case .cannotLookupRemoteReference: text = ("a $ref to another file is not followed" as LocalizedMessage).description
            case .missingOnLookup(let name, let key), .missingOnCreation(let name, let key):
                text = ("the $ref names \(name), which components › \(key) does not define" as LocalizedMessage).description
            }
        case let cycle as OpenAPIKit.OpenAPI.Components.ReferenceCycleError:
            text = ("the $ref \(cycle.ref) is recursive" as LocalizedMessage).description
        default:
            text = OpenAPIKit.OpenAPI.Error(from: error).localizedDescription
        }
        let line = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
        return line.count > 300 ? line.prefix(299) + "…" : line
    }

    /// The document's `openapi` version as text OpenAPIKit reads, and what was repaired; `nil`
    /// without one. A number is read as its text, a missing patch number as `.0`, and a patch
    /// release newer than OpenAPIKit knows (`3.0.5`, `3.1.3`) as the newest it knows: patch
    /// releases change only the specification's wording.
    static func version(of root: [String: JSONValue]) -> (text: String, repair: LocalizedMessage?)? {
        let written: String
        switch root["openapi"] {
        case .string(let text)?: written = text.trimmingCharacters(in: .whitespaces)
        case .number(let number)?: written = number.text
        case .double(let value)?: written = JSONValue.double(value).description
        case .int(let value)?: written = String(value)
        default: return nil
        }
        let parts = written.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
        let newestPatch = ["3.0": 4, "3.1": 2, "3.2": 0]
        guard parts.count == 2 || parts.count == 3, let major = parts[0], let minor = parts[1], parts.allSatisfy({ ($0 ?? -1) >= 0 }),
            let newest = newestPatch["\(major).\(minor)"]
        else {
            return (written, nil)
        }
        let patch = parts.count == 3 ? min(parts[2] ?? 0, newest) : 0
        let read = "\(major).\(minor).\(patch)"
        if case .string? = root["openapi"], read == written { return (read, nil) }
        return (read, "the document's openapi version \(written) is read as \"\(read)\" (a version is text with a patch number OpenAPIKit knows)" as LocalizedMessage)
    }

    /// Decodes the document without its operations. Tolerantly, a top-level member or a
    /// component that cannot be read is left out (an operation that uses it is then left out
    /// when it is expanded); strictly, each is a problem too. A document whose `info` or
    /// `openapi` cannot be read is refused either way.
    static func decodeShell(
        _ shell: [String: JSONValue], version: String, report: inout LoadReport
    ) throws(APIError) -> (document: OpenAPIKit.OpenAPI.Document, components: [String: JSONValue]) {
        if let document = try? decoded(shell, version: version) {
            return (document, shell["components"]?.objectValue ?? [:])
        }
        var base = shell
        let components = base.removeValue(forKey: "components")?.objectValue ?? [:]
        let minimal: [String: JSONValue] = ["openapi": .string(version), "info": shell["info"] ?? .object([:]), "paths": .object([:])]
        for key in base.keys.sorted() where minimal[key] == nil {
            guard let value = base[key] else { continue }
            var alone = minimal
            alone[key] = value
            do {
                _ = try decoded(alone, version: version)
            } catch {
                base[key] = nil
                report.add("unreadable", "the document's \(key) cannot be read (\(error.reason)); it is left out" as LocalizedMessage)
            }
        }
        var kept: [String: JSONValue] = [:]
        for section in components.keys.sorted() {
            guard let value = components[section] else { continue }
            var alone = minimal
            alone["components"] = .object([section: value])
            if (try? decoded(alone, version: version)) != nil {
                kept[section] = value
                continue
            }
            guard let entries = value.objectValue else {
                report.add("unreadable", "components › \(section) is not a map; it is left out" as LocalizedMessage)
                continue
            }
            var readable: [String: JSONValue] = [:]
            for name in entries.keys.sorted() {
                guard let entry = entries[name] else { continue }
                alone["components"] = .object([section: .object([name: entry])])
                do {
                    _ = try decoded(alone, version: version)
                    readable[name] = entry
                } catch {
                    report.add(
                        "unreadable",
                        "components › \(section) › \(name) cannot be read (\(error.reason)); operations that use it are left out" as LocalizedMessage)
                }
            }
            kept[section] = .object(readable)
        }
        base["components"] = .object(kept)
        return (try decode(base, version: version), kept)
    }

    /// The operations of `entries` (path text and path item), decoded and expanded with the
    /// components of `template`. When the batch fails, each path is tried alone, then each of a
    /// path's methods alone: one operation that cannot be read or expanded is left out (and
    /// reported), never the document.
    static func endpoints(
        of entries: [(text: String, item: JSONValue)], template: OpenAPIKit.OpenAPI.Document, version: String,
        checked: [String: JSONValue], info: JSONValue?, stubs: ComponentSchemas, report: inout LoadReport
    ) -> [OpenAPIKit.ResolvedEndpoint] {
        func resolve(_ part: [(text: String, item: JSONValue)]) throws(DecodingFailure) -> [OpenAPIKit.ResolvedEndpoint] {
            var document: [String: JSONValue] = ["openapi": .string(version)]
            document["paths"] = .object(Dictionary(part.map { ($0.text, stubs.stubbed($0.item)) }, uniquingKeysWith: { first, _ in first }))
            document["info"] = info
            document["components"] = .object(checked)
            var single = template
            single.paths = try decoded(document, version: version).paths
            do {
                return try single.locallyDereferenced().resolved().endpoints
            } catch {
                throw DecodingFailure(reason: describe(error))
            }
        }
        do {
            return try resolve(entries)
        } catch {
            guard entries.count == 1, let entry = entries.first else {
                return entries.flatMap {
                    endpoints(of: [$0], template: template, version: version, checked: checked, info: info, stubs: stubs, report: &report)
                }
            }
            let members = entry.item.objectValue ?? [:]
            let methods = members.keys.filter { DocumentNormalizer.methods.contains($0.lowercased()) }.sorted()
            guard methods.count > 1 else {
                let what = methods.first.map { "\($0.uppercased()) \(entry.text)" } ?? entry.text
                report.add("operation", "\(what) cannot be read (\(error.reason)); it is left out" as LocalizedMessage)
                return []
            }
            var found: [OpenAPIKit.ResolvedEndpoint] = []
            let shared = members.filter { !DocumentNormalizer.methods.contains($0.key.lowercased()) }
            for method in methods {
                var one = shared
                one[method] = members[method]
                do {
                    found += try resolve([(entry.text, .object(one))])
                } catch {
                    report.add("operation", "\(method.uppercased()) \(entry.text) cannot be read (\(error.reason)); it is left out" as LocalizedMessage)
                }
            }
            return found
        }
    }
}

/// The operations of a document's batches of paths, read by a few threads while the caller
/// turns the ones already read into operations.
///
/// OpenAPIKit's decoding and expansion of a batch is most of a large document's load, and one
/// batch does not depend on another. Threads of their own (as many as the machine has
/// processors, four at most; never the cooperative pool's) each take the next batch not yet
/// taken, and the caller is handed the batches in order. A thread stays at most `ahead` batches
/// in front of the caller, so what exists at once is a few batches, never the whole document's.
/// When the caller stops early (an error), the threads finish the batch in hand and end.
struct BatchReader: Sequence, IteratorProtocol {
    /// One batch's endpoints, and what reading them noticed (in the order a sequential read
    /// would have noticed it).
    typealias Batch = (endpoints: [OpenAPIKit.ResolvedEndpoint], findings: [DocumentNormalizer.Finding])

    private let reading: Reading
    private var position = 0

    init(
        _ batches: [[(text: String, item: JSONValue)]], template: OpenAPIKit.OpenAPI.Document, version: String,
        checked: [String: JSONValue], info: JSONValue?, stubs: ComponentSchemas, strict: Bool,
        threads: Int = Swift.min(4, Swift.max(1, ProcessInfo.processInfo.activeProcessorCount))
    ) {
        let batches = batches.filter { !$0.isEmpty }
        let threads = Swift.max(1, Swift.min(threads, batches.count))
        let queue = Queue(count: batches.count, ahead: 2 * threads)
        reading = Reading(queue: queue)
        guard !batches.isEmpty else { return }
        for _ in 0..<threads {
            let thread = Thread {
                while let index = queue.take() {
                    var report = OpenAPIOperations.LoadReport(strict: strict)
                    let endpoints = OpenAPIOperations.endpoints(
                        of: batches[index], template: template, version: version, checked: checked, info: info, stubs: stubs, report: &report)
                    queue.put(index, (endpoints, report.findings))
                }
            }
            thread.name = "callsign-openapi"
            thread.start()
        }
    }

    mutating func next() -> Batch? {
        guard let batch = reading.queue.result(position) else { return nil }
        position += 1
        return batch
    }

    /// Tells the threads to stop when the caller drops the reader, whether or not it read
    /// every batch.
    private final class Reading {
        let queue: Queue

        init(queue: Queue) {
            self.queue = queue
        }

        deinit {
            queue.stop()
        }
    }

    /// The batches taken and read, under one lock. Every member is read and written with the
    /// condition's lock held, which is what makes the class safe to share.
    private final class Queue: @unchecked Sendable {
        private let condition = NSCondition()
        private let count: Int
        private let ahead: Int
        private var taken = 0
        private var handedOut = 0
        private var stopped = false
        private var done: [Int: Batch] = [:]

        init(count: Int, ahead: Int) {
            self.count = count
            self.ahead = ahead
        }

        /// The next batch to read, once it is no more than `ahead` in front of the caller;
        /// `nil` when none is left or the caller has stopped.
        func take() -> Int? {
            condition.lock()
            defer { condition.unlock() }
            while !stopped, taken < count, taken - handedOut >= ahead { condition.wait() }
            guard !stopped, taken < count else { return nil }
            taken += 1
            return taken - 1
        }

        func put(_ index: Int, _ batch: Batch) {
            condition.lock()
            defer { condition.unlock() }
            if !stopped { done[index] = batch }
            condition.broadcast()
        }

        /// Batch `index`, waiting for it; `nil` past the last.
        func result(_ index: Int) -> Batch? {
            condition.lock()
            defer { condition.unlock() }
            guard index < count else { return nil }
            while done[index] == nil { condition.wait() }
            handedOut = index + 1
            condition.broadcast()
            return done.removeValue(forKey: index)
        }

        func stop() {
            condition.lock()
            defer { condition.unlock() }
            stopped = true
            done = [:]
            condition.broadcast()
        }
    }
}

/// Reading (parts of) a document with OpenAPIKit.
extension OpenAPIOperations {
    /// The most values the paths decoded together stand for once expanded (a larger path is
    /// decoded alone): what OpenAPIKit builds at once stays a few hundred megabytes at most.
    static let batchNodes = 250_000

    /// Why OpenAPIKit could not read (a part of) a document, in its words.
    struct DecodingFailure: Error {
        let reason: String
    }

    /// Decodes (a part of) a document with OpenAPIKit, as OpenAPI 3.1.
    static func decode(_ value: [String: JSONValue], version: String) throws(APIError) -> OpenAPIKit.OpenAPI.Document {
        do {
            return try decoded(value, version: version)
        } catch {
            throw APIError(.invalidDefinition, localized: "the OpenAPI document is not valid: \(error.reason)")
        }
    }

    /// Decodes (a part of) a document with OpenAPIKit, as OpenAPI 3.1.
    static func decoded(_ value: [String: JSONValue], version: String) throws(DecodingFailure) -> OpenAPIKit.OpenAPI.Document {
        let json = JSONValue.object(value).jsonData()
        // Vendor extensions (`x-…`) mean nothing to Callsign, and looking for them decodes every
        // object of the document a second time: more than half of the load.
        let decoder = JSONDecoder()
        decoder.userInfo[OpenAPIKit.VendorExtensionsConfiguration.enabledKey] = false
        decoder.userInfo[OpenAPIKit30.VendorExtensionsConfiguration.enabledKey] = false
        do {
            if version.hasPrefix("3.0") {
                return try decoder.decode(OpenAPIKit30.OpenAPI.Document.self, from: json).convert(to: .v3_1_0)
            }
            return try decoder.decode(OpenAPIKit.OpenAPI.Document.self, from: json)
        } catch {
            throw DecodingFailure(reason: Self.describe(error))
        }
    }
}
