package import Foundation

/// The JSON of the files Callsign keeps for itself (definitions fetched from a URL, the CLI's
/// sessions): dates as seconds since 1970, so a file reads the same on every platform and
/// Foundation version. Reading and writing such a file goes through ``FileWriter``'s doors;
/// this is only its form. The fuzz package links this file (`Fuzz/Sources/CallsignFuzz/CLI/`)
/// beside the CLI's session file that uses it: it stays Foundation only.
///
/// ```swift
/// let data = try KeptJSON.encoder(readable: true).encode(file)
/// let back = try KeptJSON.decoder().decode(SessionFile.self, from: data)
/// ```
package enum KeptJSON {
    /// A decoder for a kept file.
    package static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }

    /// An encoder for a kept file; `readable` ones are indented with sorted keys, for files a
    /// person may open.
    package static func encoder(readable: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        if readable { encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] }
        return encoder
    }
}
