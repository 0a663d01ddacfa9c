package import Foundation
import Callsign

/// A 32-byte secret in a file of its own, readable and writable by its owner only (0600),
/// created on first use. Kept beside a database rather than in it, so a copy of the database
/// alone (a backup, a support bundle) holds no key.
package enum KeyFile {
    package static let size = 32

    /// The key in `path`, created with `make` when the file does not exist or does not hold a
    /// key of the right size (a damaged key only costs the entries it protected).
    ///
    /// The name is Callsign's own: a symbolic link or another user's file found there is an
    /// ``APIError`` (``APIError/Code/storage``), never followed.
    package static func load(_ path: String, make: () -> Data) throws -> Data {
        let url = URL(fileURLWithPath: path)
        if let existing = try FileWriter.readPrivate(url, limit: 4096), existing.count == size { return existing }
        let key = make()
        // O_EXCL: two processes starting at once agree on one key; the loser reads the winner's.
        // Through the one writer: owner-only, never through a link planted at the name.
        guard let writer = try FileWriter.createPrivate(url) else {
            if let existing = try FileWriter.readPrivate(url, limit: 4096), existing.count == size { return existing }
            // Present but damaged: replace it, owner-only, in one rename.
            try FileWriter.replacePrivate(url, with: key, sync: true)
            return key
        }
        try writer.write(key)
        try writer.commit(to: .file(path: path, existingMode: nil), permissions: .ownerOnly, sync: true)
        return key
    }
}
