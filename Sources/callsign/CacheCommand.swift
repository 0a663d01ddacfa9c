import ArgumentParser
import Callsign
import CallsignOpenAPI
import Foundation

/// `callsign cache`: the description cache, where loaded OpenAPI documents are kept so that the
/// next command reads them in milliseconds.
struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: localized("Show or clear the cache of loaded OpenAPI documents."),
        discussion: localized("""
            Examples:
              callsign cache
              callsign cache clear

            An OpenAPI document given with -D is kept, once loaded, in $XDG_CACHE_HOME/callsign/descriptions \
            (else ~/.cache/callsign/descriptions) in the form a load makes, keyed by its bytes and Callsign's \
            version: the next command that names it reads it in milliseconds. A changed document has a new \
            entry; a damaged entry, a link or another user's file is ignored and rebuilt. The entries take \
            at most 128 MiB; the least recently used go first.
            """),
        subcommands: [CacheInfoCommand.self, CacheClearCommand.self],
        defaultSubcommand: CacheInfoCommand.self
    )
}

struct CacheInfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "info", abstract: localized("Show where the cache is and how much it holds."))

    @OptionGroup var config: ConfigFileOption

    func run() async throws {
        try await reportingErrors {
            let cache = DescriptionCache.user
            let entries = cache.entries()
            let bytes = entries.reduce(0) { $0 + $1.size }
            Terminal.out(cache.directory.path)
            Terminal.out(localized("\(entries.count) documents, \(ByteCountFormatter.string(fromByteCount: Int64(bytes), countStyle: .file)) of at most \(ByteCountFormatter.string(fromByteCount: Int64(cache.maximumSize), countStyle: .file))"))
        }
    }
}

struct CacheClearCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "clear", abstract: localized("Remove every kept document (they are loaded again when next named)."))

    @OptionGroup var config: ConfigFileOption

    func run() async throws {
        try await reportingErrors {
            let removed = try DescriptionCache.user.removeAll()
            Terminal.out(localized("Removed \(removed) kept documents."))
        }
    }
}
