package import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The second kind of path ``FileWriter`` knows: a name Callsign picks itself (partial and state
// files of a download, temporary files, private folders), created owner-only with
// `O_CREAT | O_EXCL | O_NOFOLLOW` and never followed through a link.

extension FileWriter {
    /// Creates a new private file (0600) at `url`, never following a link; `nil` when something —
    /// a file, a link, anything — already has that name.
    package static func createPrivate(_ url: URL) throws(APIError) -> FileWriter? {
        try create(url, mode: 0o600)
    }

    /// Reopens a private file Callsign created earlier (a partial download), to continue it.
    ///
    /// - Throws: ``APIError/Code/storage`` when the name is a symbolic link, not a regular file,
    ///   or not this user's: such a file was not made by Callsign and is never written into.
    package static func reopenPrivate(_ url: URL) throws(APIError) -> FileWriter {
        let path = url.path
        // O_NONBLOCK: a FIFO planted at the name must not hold the open; it is refused below.
        let descriptor = systemOpen(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ELOOP { throw symbolicLink(path) }
            throw failure(path, errno, what: "cannot be opened for writing")
        }
        let writer = FileWriter(descriptor: descriptor, path: path, removesUnlessCommitted: false)
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid() else {
            throw APIError(.storage, localized: "\(path) is not a regular file of this user; Callsign does not write into it (remove it)")
        }
        try makeBlocking(descriptor, path: path)
        return writer
    }

    /// The contents of a small private file Callsign wrote (a download's state), read without
    /// following a link; `nil` when there is none.
    ///
    /// - Throws: ``APIError/Code/storage`` when the name is a link, not a regular file of this
    ///   user, or larger than `limit` bytes.
    package static func readPrivate(_ url: URL, limit: Int) throws(APIError) -> Data? {
        let path = url.path
        let descriptor = systemOpen(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            if errno == ELOOP { throw symbolicLink(path) }
            throw failure(path, errno, what: "cannot be read")
        }
        defer { _ = systemClose(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid() else {
            throw APIError(.storage, localized: "\(path) is not a regular file of this user; Callsign does not read it (remove it)")
        }
        guard info.st_size >= 0, info.st_size <= off_t(limit) else {
            throw APIError(.storage, localized: "\(path) is larger than the \(limit) bytes such a file can hold; remove it")
        }
        var data = Data(count: Int(info.st_size))
        var filled = 0
        while filled < data.count {
            let count = data.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress.map { $0 + filled }, buffer.count - filled)
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            filled += count
        }
        return data.prefix(filled)
    }

    /// The size of a private file Callsign wrote, without following a link; `nil` when there is none.
    ///
    /// - Throws: ``APIError/Code/storage`` when the name is a symbolic link or not a regular file.
    package static func privateFileSize(_ url: URL) throws(APIError) -> Int64? {
        var info = stat()
        guard lstat(url.path, &info) == 0 else {
            guard errno == ENOENT else { throw failure(url.path, errno, what: "cannot be examined") }
            return nil
        }
        if info.st_mode & S_IFMT == S_IFLNK { throw symbolicLink(url.path) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw APIError(.storage, localized: "\(url.path) is not a regular file of this user; Callsign does not read it (remove it)")
        }
        return Int64(info.st_size)
    }

    /// Removes a private file Callsign wrote; nothing when there is none.
    ///
    /// - Throws: ``APIError/Code/storage`` when the name is a symbolic link or anything but a
    ///   regular file: that was not made by Callsign, and a person should look at it.
    package static func removePrivate(_ url: URL) throws(APIError) {
        guard try privateFileSize(url) != nil else { return }
        guard unlink(url.path) == 0 || errno == ENOENT else { throw failure(url.path, errno, what: "cannot be removed") }
    }

    /// Creates `folder` and the folders above it that are missing, owner-only (0700): a folder
    /// Callsign keeps its own files in (sessions, the description cache). With `checked`, `folder`
    /// must also be a folder of this user and not a symbolic link.
    ///
    /// - Throws: ``APIError/Code/storage`` naming the folder that cannot be created, or (`checked`)
    ///   that is a link, not a folder, or another user's.
    package static func makePrivateFolder(_ folder: URL, checked: Bool = false) throws(APIError) {
        var missing: [URL] = []
        var current = folder.standardizedFileURL
        while !FileManager.default.fileExists(atPath: current.path), current.path != "/" {
            missing.append(current)
            current = current.deletingLastPathComponent()
        }
        for url in missing.reversed() {
            guard mkdir(url.path, 0o700) == 0 || errno == EEXIST else { throw failure(url.path, errno, what: "cannot be created") }
        }
        guard checked else { return }
        var info = stat()
        guard lstat(folder.path, &info) == 0 else { throw failure(folder.path, errno, what: "cannot be examined") }
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid() else {
            throw APIError(.storage, localized: "\(folder.path) is not a folder of this user (a link or another user's); Callsign does not keep files in it")
        }
    }

    /// Replaces a private file Callsign names itself with `data`, atomically and owner-only:
    /// a link or anything but a regular file found at the name is an error, never followed.
    package static func replacePrivate(_ url: URL, with data: Data, sync: Bool = false) throws(APIError) {
        _ = try privateFileSize(url)
        let writer = try open(.file(path: url.path, existingMode: nil), permissions: .ownerOnly)
        try writer.write(data)
        try writer.commit(to: .file(path: url.path, existingMode: nil), permissions: .ownerOnly, sync: sync)
    }

    /// Gives a finished file Callsign wrote a new name, never replacing anything already there:
    /// `link(2)` fails on any existing name (a file, a link, a folder), then the old name is
    /// unlinked. `false`, with the file left where it was, when the name is taken.
    ///
    /// - Throws: ``APIError/Code/storage`` naming the path for any other failure.
    package static func renameWithoutReplacing(_ source: URL, to destination: URL) throws(APIError) -> Bool {
        guard link(source.path, destination.path) == 0 else {
            if errno == EEXIST { return false }
            throw failure(destination.path, errno, what: "cannot be created")
        }
        guard unlink(source.path) == 0 else { throw failure(source.path, errno, what: "cannot be removed") }
        return true
    }

    /// Renames a finished file Callsign wrote over the file the user named at `destination`
    /// (through a symbolic link, as ``target(_:)`` resolves it), in one `rename(2)`.
    ///
    /// - Throws: ``APIError/Code/storage`` for a folder, a device or a path that cannot be replaced.
    package static func renameFinished(_ source: URL, over destination: URL) throws(APIError) {
        guard case .file(let path, _) = try target(destination) else {
            throw APIError(.storage, localized: "\(destination.path) is not a regular file; Callsign does not replace it")
        }
        guard rename(source.path, path) == 0 else { throw failure(path, errno, what: "cannot be replaced") }
    }
}
