package import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A 32-byte secret in a file of its own, readable and writable by its owner only (0600),
/// created on first use. Kept beside a database rather than in it, so a copy of the database
/// alone (a backup, a support bundle) holds no key.
package enum KeyFile {
    package static let size = 32

    /// The key in `path`, created with `make` when the file does not exist or does not hold a
    /// key of the right size (a damaged key only costs the entries it protected).
    package static func load(_ path: String, make: () -> Data) throws -> Data {
        if let existing = FileManager.default.contents(atPath: path), existing.count == size { return existing }
        let key = make()
        // O_EXCL: two processes starting at once agree on one key; the loser reads the winner's.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if descriptor < 0 {
            guard errno == EEXIST else { throw KeyFileError(path: path, errno: errno) }
            if let existing = FileManager.default.contents(atPath: path), existing.count == size { return existing }
            // Present but damaged: replace it, owner-only.
            let temporary = path + ".new-\(getpid())"
            guard FileManager.default.createFile(atPath: temporary, contents: key, attributes: [.posixPermissions: 0o600]),
                rename(temporary, path) == 0
            else { throw KeyFileError(path: path, errno: errno) }
            return key
        }
        defer { close(descriptor) }
        let written = key.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == size, fsync(descriptor) == 0 else { throw KeyFileError(path: path, errno: errno) }
        return key
    }
}

/// A key file that could not be read or written.
struct KeyFileError: Error, CustomStringConvertible {
    let path: String
    let errno: Int32
    var description: String { "the key file \(path) cannot be written (\(String(cString: strerror(errno))))" }
}
