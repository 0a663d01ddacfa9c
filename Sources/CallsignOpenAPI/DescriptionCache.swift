public import Callsign
public import Foundation

/// A folder where loaded OpenAPI documents are kept in the form a load makes, so that the next
/// load of the same document takes milliseconds instead of seconds.
///
/// Loading a large description (OpenAI's 3 MB document, a generated one with thousands of
/// operations) reads YAML, repairs, expands every `$ref` and reads every operation. What comes
/// out — the operations, their definitions' options, the response rules and the warnings — is
/// kept here, keyed by a SHA-256 of the document's bytes and of everything else the result depends
/// on (Callsign's version, the `Limits`, `strict`, the message language). Another document, or the
/// same one changed by a byte, has another key; an entry is never updated in place.
///
/// ```swift
/// let caches = try FileManager.default.url(for: .cachesDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
/// let api = try OpenAPIOperations(
///     contentsOf: URL(fileURLWithPath: "openai.yaml"),
///     cache: DescriptionCache(directory: caches.appendingPathComponent("descriptions")))
/// ```
///
/// An entry is written as Callsign writes its own files: owner-only (0600), replaced in one
/// rename, in a folder of the user's (0700). It is trusted as little as the document: an entry
/// that is a symbolic link, another user's file, larger than ``maximumSize``, for another key,
/// or whose checksum or contents do not hold is ignored, removed and rebuilt from the document.
/// When the entries together pass ``maximumSize``, the least recently used go first. A cache
/// that cannot be written (a read-only folder) slows the load down and never fails it.
public struct DescriptionCache: Sendable, Hashable {
    /// The folder the entries are kept in; created owner-only when missing.
    public var directory: URL
    /// The most bytes the entries may take together; the least recently used go first.
    /// Default 128 MiB.
    public var maximumSize: Int

    /// A cache in `directory`.
    public init(directory: URL, maximumSize: Int = 128 << 20) {
        self.directory = directory
        self.maximumSize = maximumSize
    }

    /// The user's cache folder: on Linux `$XDG_CACHE_HOME/callsign/descriptions`, else
    /// `~/.cache/callsign/descriptions`; on Apple platforms `callsign/descriptions` in the
    /// user's Caches folder. What `callsign` uses, and what `callsign cache clear` empties.
    public static var user: DescriptionCache {
        user(environment: ProcessInfo.processInfo.environment)
    }

    package static func user(environment: [String: String]) -> DescriptionCache {
        let base: URL
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            base = URL(fileURLWithPath: xdg, isDirectory: true)
        } else if let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first {
            base = caches
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache", isDirectory: true)
        }
        return DescriptionCache(directory: base.appendingPathComponent("callsign/descriptions", isDirectory: true))
    }

    /// Removes every entry (and nothing else in the folder); returns how many there were.
    ///
    /// ```swift
    /// try DescriptionCache.user.removeAll()
    /// ```
    ///
    /// - Throws: `APIError` (`storage`) when an entry cannot be removed.
    @discardableResult
    public func removeAll() throws(APIError) -> Int {
        let entries = self.entries()
        for entry in entries {
            do {
                try FileManager.default.removeItem(at: entry.url)
            } catch {
                throw APIError(.storage, localized: "\(entry.url.path) cannot be removed", underlyingError: error)
            }
        }
        return entries.count
    }

    // MARK: - Entries

    /// What a load found in the cache.
    package enum Outcome: Sendable, Equatable {
        /// Loaded from its entry.
        case used
        /// No entry: loaded from the document, and kept.
        case missing
        /// An entry that could not be trusted: removed, loaded from the document, and kept.
        case rebuilt(reason: String)
        /// The cache folder cannot be used (a link, another user's, unwritable): loaded from the
        /// document, not kept.
        case unavailable
    }

    /// The first line of every entry: what it is and the version of its layout.
    static let magic = Data("callsign-description 1\n".utf8)

    /// The key of a document's entry: a SHA-256 of what the load's result depends on.
    package static func key(for data: Data, format: APIDefinitions.Format, limits: Limits, strict: Bool) -> String {
        let context = [
            "callsign \(APIClient.version)", "layout \(String(decoding: magic, as: UTF8.self))", "format \(format)",
            "strict \(strict)", "language \(MessageLanguage.process.rawValue)", "\(limits)",
        ]
        return Digest.sha256Hex([Data(context.joined(separator: "\u{0}").utf8), Data([0]), data])
    }

    /// The entry's file for `key`.
    func url(for key: String) -> URL {
        directory.appendingPathComponent("\(key).description", isDirectory: false)
    }

    /// The operations kept for `key`, or why there are none. An entry that cannot be trusted is
    /// removed (a link itself, not what it points to).
    package func operations(for key: String) -> (operations: OpenAPIOperations?, outcome: Outcome) {
        do {
            try FileWriter.makePrivateFolder(directory, checked: true)
        } catch {
            return (nil, .unavailable)
        }
        let url = url(for: key)
        let reason: String
        do {
            guard let data = try FileWriter.readPrivate(url, limit: maximumSize) else { return (nil, .missing) }
            let operations = try Self.operations(in: data, key: key)
            // Recently used: the last to go when the folder is over its size.
            try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: url.path)
            return (operations, .used)
        } catch {
            reason = error.message
        }
        try? FileManager.default.removeItem(at: url)
        return (nil, .rebuilt(reason: reason))
    }

    /// The operations an entry's bytes hold: its layout line, its key, the SHA-256 of the rest,
    /// and what a load made, checked for consistency before it is used.
    static func operations(in data: Data, key: String) throws(APIError) -> OpenAPIOperations {
        func damaged(what: LocalizedMessage) -> APIError {
            APIError(.invalidDefinition, localized: "the kept description is damaged (\(what))")
        }
        let keyLine = Data((key + "\n").utf8)
        var rest = data[...]
        guard rest.starts(with: magic) else { throw damaged(what: "not a description of this version") }
        rest = rest.dropFirst(magic.count)
        guard rest.starts(with: keyLine) else { throw damaged(what: "kept for another document") }
        rest = rest.dropFirst(keyLine.count)
        guard let newline = rest.firstIndex(of: UInt8(ascii: "\n")) else { throw damaged(what: "no checksum") }
        let checksum = String(decoding: rest[..<newline], as: UTF8.self)
        let payload = Data(rest[rest.index(after: newline)...])
        guard checksum == Digest.sha256Hex(payload) else { throw damaged(what: "its checksum does not match") }
        let compiled: CompiledDescription
        do {
            compiled = try PropertyListDecoder().decode(CompiledDescription.self, from: payload)
        } catch {
            throw damaged(what: "its contents cannot be read")
        }
        return try OpenAPIOperations(compiled: compiled)
    }

    /// Keeps what a load made under `key`; then, when the entries pass ``maximumSize``, removes
    /// the least recently used. Does nothing when the folder cannot be used or the entry would
    /// not fit.
    package func keep(_ operations: OpenAPIOperations, for key: String) {
        let payload: Data
        do {
            // A binary property list: its strings are stored as they are, so the schema texts
            // (most of an entry) are read back without parsing escapes.
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            payload = try encoder.encode(operations.compiled)
        } catch {
            return
        }
        var data = Self.magic
        data.append(Data((key + "\n" + Digest.sha256Hex(payload) + "\n").utf8))
        data.append(payload)
        guard data.count <= maximumSize, (try? FileWriter.makePrivateFolder(directory, checked: true)) != nil else { return }
        let url = url(for: key)
        // A link or anything else at the name is removed, never written through.
        if (try? FileWriter.privateFileSize(url)) == nil { try? FileManager.default.removeItem(at: url) }
        guard (try? FileWriter.replacePrivate(url, with: data)) != nil else { return }
        trim(keeping: url)
    }

    /// The entries in the folder, most recently used first.
    package func entries() -> [(url: URL, size: Int, used: Date)] {
        let keys: [URLResourceKey] = [.fileSizeKey, .contentModificationDateKey, .isSymbolicLinkKey]
        let found = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: keys)) ?? []
        return found.filter { $0.pathExtension == "description" }.map { url in
            let values = try? url.resourceValues(forKeys: Set(keys))
            return (url, values?.fileSize ?? 0, values?.contentModificationDate ?? .distantPast)
        }
        .sorted { $0.used > $1.used }
    }

    /// Removes the least recently used entries until the rest fit in ``maximumSize``; `kept`, just
    /// written, stays.
    private func trim(keeping kept: URL) {
        var total = 0
        for entry in entries() {
            total += entry.size
            if total > maximumSize, entry.url.lastPathComponent != kept.lastPathComponent {
                try? FileManager.default.removeItem(at: entry.url)
                total -= entry.size
            }
        }
    }
}
