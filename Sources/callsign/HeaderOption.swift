import ArgumentParser
import Callsign

/// `-H/--header 'Name: value'`, declared once for every command that sends a request it shapes
/// (`call`, `get`/`post`/…, `download`).
///
/// The values are read with those ``HeaderOptions`` takes out of the process's command line
/// before ArgumentParser sees it (kept out of this file, which the fuzz package compiles
/// without ArgumentParser).
struct HeaderOption: ParsableArguments {
    @Option(name: [.customShort("H"), .customLong("header")], help: .localized("A header: 'Name: value'. Repeatable."))
    var headers: [String] = []

    /// The headers given: the default-options file's (or a test's), then the command line's,
    /// which replace those of the same name.
    func given() throws -> Headers {
        try ParameterArguments.headers(HeaderOptions.all(headers))
    }
}
