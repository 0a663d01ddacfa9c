package import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one way Callsign creates or writes a file: `-o` output, downloads with their partial and
/// state files, HAR recordings, the cookie jar, database and key files.
///
/// Two kinds of path, two sets of rules:
///
/// - **A path the user named** (``target(_:)``): a character device or a FIFO (`/dev/null`,
///   `/dev/stdout`, a named pipe) is written into directly, as `curl -o` and the shell's `>` do —
///   never unlinked, never replaced by a regular file. A regular file (or a missing one) is
///   replaced in one `rename(2)`: the bytes go to a temporary file beside it first, so a failed or
///   interrupted write never leaves half a file where a good one was, and a reader never sees a
///   torn one. A symbolic link is written *through*, as curl and the shell do: the file it points
///   to is replaced and the link stays a link. A link to nothing, a folder, a block device or a
///   socket is an ``APIError`` (``APIError/Code/storage``).
/// - **A name Callsign picks itself** (partial and state files of a download, temporary files):
///   created with `O_CREAT | O_EXCL | O_NOFOLLOW` in the owner's private mode (0600), reopened
///   with `O_NOFOLLOW`, and only when it is a regular file of this user. A symbolic link or
///   anything else found at such a name is an ``APIError`` naming it, never followed: in a shared
///   folder, a planted `.NAME.callsign-partial` link must not turn a download into a write to
///   the file it points to.
///
/// ```swift
/// try FileWriter.write(response.body, to: URL(fileURLWithPath: "out.json"))
/// ```
package final class FileWriter {
    /// What the final file's permissions are.
    package enum Permissions: Sendable {
        /// A new file gets the mode the process's umask gives (0666 minus the umask, as curl
        /// and the shell do); a file that exists keeps its own.
        case standard
        /// Readable and writable by the owner only (0600), whatever was there.
        case ownerOnly
    }

    /// What stands at a path the user named, after following a symbolic link.
    package enum Target: Equatable, Sendable {
        /// A regular file to replace (its mode, when it exists) or to create.
        case file(path: String, existingMode: mode_t?)
        /// A character device or a FIFO, written into as it is.
        case stream(path: String)

        /// The path written to (a link's target, not the link).
        package var path: String {
            switch self {
            case .file(let path, _), .stream(let path): path
            }
        }
    }

    private var descriptor: Int32
    /// Where the bytes are written (a temporary or partial file, or the target itself).
    package let path: String
    /// A temporary file this writer created and removes unless it was committed.
    private let removesUnlessCommitted: Bool
    private var committed = false

    /// Wraps an open descriptor (the writer closes it); for FileWriter's own files only.
    init(descriptor: Int32, path: String, removesUnlessCommitted: Bool) {
        self.descriptor = descriptor
        self.path = path
        self.removesUnlessCommitted = removesUnlessCommitted
    }

    deinit {
        if descriptor >= 0 { _ = systemClose(descriptor) }
        if removesUnlessCommitted && !committed { unlink(path) }
    }

    // MARK: - Paths the user named

    /// What stands at `url`: a regular file (or nothing yet) to replace, or a device or FIFO to
    /// write into. A symbolic link is followed to the file it names.
    ///
    /// - Throws: ``APIError/Code/storage`` for a link to nothing, a folder, a block device or a
    ///   socket, or a path that cannot be examined.
    package static func target(_ url: URL) throws(APIError) -> Target {
        let path = url.path
        var info = stat()
        guard lstat(path, &info) == 0 else {
            guard errno == ENOENT else { throw failure(path, errno, what: "cannot be examined") }
            return .file(path: path, existingMode: nil)
        }
        var resolved = path
        if info.st_mode & S_IFMT == S_IFLNK {
            guard let real = realpath(path, nil) else {
                throw APIError(
                    .storage,
                    localized: "\(path) is a symbolic link to a file that does not exist; name the file itself, or remove the link")
            }
            resolved = String(cString: real)
            free(real)
            guard stat(resolved, &info) == 0 else { throw failure(resolved, errno, what: "cannot be examined") }
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .file(path: resolved, existingMode: info.st_mode & 0o7777)
        case S_IFCHR, S_IFIFO: return .stream(path: resolved)
        case S_IFDIR: throw APIError(.storage, localized: "\(resolved) is a folder; name a file to write")
        default:
            throw APIError(
                .storage, localized: "\(resolved) is a block device or a socket; Callsign writes to regular files, character devices and FIFOs only")
        }
    }

    /// Writes `data` to the file the user named at `url` (see ``FileWriter`` for the rules).
    ///
    /// - Parameters:
    ///   - permissions: the mode of the file written. Default ``Permissions/standard``.
    ///   - sync: whether the bytes reach the disk before the file is renamed into place.
    /// - Throws: ``APIError/Code/storage`` naming the path; the file that was there is unchanged.
    package static func write(_ data: Data, to url: URL, permissions: Permissions = .standard, sync: Bool = false) throws(APIError) {
        let target = try target(url)
        let writer = try open(target, permissions: permissions)
        try writer.write(data)
        try writer.commit(to: target, permissions: permissions, sync: sync)
    }

    /// A writer for the target: the device or FIFO itself, or a new temporary file beside the
    /// regular file, renamed over it by ``commit(to:permissions:sync:)``.
    ///
    /// Opening a FIFO waits for a reader, as `curl -o fifo` does, holding the calling thread: async
    /// code uses ``openWaiting(_:permissions:)``, which holds none.
    package static func open(_ target: Target, permissions: Permissions) throws(APIError) -> FileWriter {
        switch target {
        case .stream(let path):
            let descriptor = systemOpen(path, O_WRONLY | O_NOCTTY | O_CLOEXEC)
            guard descriptor >= 0 else { throw failure(path, errno, what: "cannot be opened for writing") }
            return FileWriter(descriptor: descriptor, path: path, removesUnlessCommitted: false)
        case .file(let path, let existingMode):
            let url = URL(fileURLWithPath: path)
            let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).callsign-\(UUID().uuidString).tmp")
            // A new file with standard permissions is created as the shell would (the kernel
            // applies the umask); any other starts private and gets its mode on commit.
            let mode: mode_t = permissions == .standard && existingMode == nil ? 0o666 : 0o600
            let descriptor = systemOpen(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode)
            // Named by the path the user gave (a missing folder, no permission), not the temporary one.
            guard descriptor >= 0 else { throw failure(path, errno, what: "cannot be created") }
            return FileWriter(descriptor: descriptor, path: temporary.path, removesUnlessCommitted: true)
        }
    }

    /// ``open(_:permissions:)`` for async code: a FIFO with no reader yet is tried again every
    /// 20 ms instead of holding a thread of the cooperative pool until one comes (a download into
    /// a FIFO nobody reads would otherwise hold it for good); the wait ends when the task is
    /// cancelled.
    package static func openWaiting(_ target: Target, permissions: Permissions) async throws(APIError) -> FileWriter {
        guard case .stream(let path) = target else { return try open(target, permissions: permissions) }
        let cancelled = "the download was cancelled while \(path) waited for a reader" as LocalizedMessage
        let opened = try await polling(until: nil, cancelled: cancelled) { () throws(APIError) -> FileWriter? in
            // O_NONBLOCK: a FIFO without a reader is refused at once (ENXIO) instead of waited for.
            let descriptor = systemOpen(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
            guard descriptor >= 0 else {
                guard errno == ENXIO || errno == EINTR else { throw failure(path, errno, what: "cannot be opened for writing") }
                return nil
            }
            let writer = FileWriter(descriptor: descriptor, path: path, removesUnlessCommitted: false)
            try makeBlocking(descriptor, path: path)  // written as `open` makes it
            return writer
        }
        guard let opened else { throw APIError(.cancelled, localized: cancelled) }
        return opened
    }

    // MARK: - Locks

    /// Takes an exclusive advisory lock (`flock(2)`) on this file, waiting up to `limit` while
    /// another process holds it; it is released when the file is closed (``close()``, or this
    /// writer's end — also when the process dies, so a crashed command never leaves it held).
    ///
    /// For a private lock file beside a file several commands read, change and write back (a
    /// `--session`), so that their turns come one at a time. Waits in short steps rather than in a
    /// blocking `flock(2)`, so a process that never lets go costs `limit`, never a hang.
    ///
    /// - Returns: `false` when the lock was still held by another after `limit`.
    /// - Throws: ``APIError/Code/storage`` when the file cannot be locked at all, or
    ///   ``APIError/Code/cancelled`` when the task is cancelled while waiting.
    package func lockExclusively(waitingUpTo limit: Duration) async throws(APIError) -> Bool {
        let cancelled = "the wait for the lock on \(path) was cancelled" as LocalizedMessage
        let locked = try await Self.polling(until: .now + limit, cancelled: cancelled) { () throws(APIError) -> Bool? in
            guard flock(descriptor, LOCK_EX | LOCK_NB) != 0 else { return true }
            guard errno == EWOULDBLOCK || errno == EINTR else { throw Self.failure(path, errno, what: "cannot be locked") }
            return nil
        }
        return locked ?? false
    }

    // MARK: - Writing

    /// Writes all of `bytes`, however many `write(2)` calls it takes.
    package func write(_ bytes: some DataProtocol) throws(APIError) {
        let failed = Self.writeAll(bytes, to: descriptor)
        if failed != 0 { throw Self.failure(path, failed, what: "cannot be written") }
    }

    /// Writes all of `bytes` to `descriptor`, however many `write(2)` calls it takes, again after
    /// an interrupted call: the one write loop, for files and for the command line's terminal.
    ///
    /// - Returns: 0, or the `errno` that stopped it (`EIO` when `write(2)` wrote nothing).
    package static func writeAll(_ bytes: some DataProtocol, to descriptor: Int32) -> Int32 {
        for region in bytes.regions {
            var failed: Int32 = 0
            region.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
                guard var next = buffer.baseAddress else { return }
                var remaining = buffer.count
                while remaining > 0 {
                    let written = systemWrite(descriptor, next, remaining)
                    if written > 0 {
                        next += written
                        remaining -= written
                    } else if written < 0 && errno == EINTR {
                        continue
                    } else {
                        failed = written < 0 ? errno : EIO
                        return
                    }
                }
            }
            if failed != 0 { return failed }
        }
        return 0
    }

    /// Cuts the file to `offset` bytes and continues writing there (a resumed download).
    package func continueAt(_ offset: Int64) throws(APIError) {
        guard offset >= 0, ftruncate(descriptor, off_t(offset)) == 0, lseek(descriptor, off_t(offset), SEEK_SET) >= 0 else {
            throw Self.failure(path, errno, what: "cannot be written")
        }
    }

    /// Finishes the write: a device or FIFO is closed; a temporary or partial file gets its final
    /// mode and is renamed over the target's regular file in one step.
    package func commit(to target: Target, permissions: Permissions, sync: Bool = false) throws(APIError) {
        if case .file(let finalPath, let existingMode) = target, finalPath != path {
            let mode: mode_t? = permissions == .ownerOnly ? 0o600 : existingMode
            if let mode, fchmod(descriptor, mode) != 0 { throw Self.failure(path, errno, what: "cannot be written") }
            if sync, fsync(descriptor) != 0 { throw Self.failure(path, errno, what: "cannot be written") }
            try close()
            // rename(2) replaces a regular file (or a link's target, named by its real path) atomically.
            guard rename(path, finalPath) == 0 else { throw Self.failure(finalPath, errno, what: "cannot be replaced") }
        } else {
            if sync, fsync(descriptor) != 0 { throw Self.failure(path, errno, what: "cannot be written") }
            try close()
        }
        committed = true
    }

    /// Closes the file, keeping it (a partial download waiting to be resumed).
    package func close() throws(APIError) {
        guard descriptor >= 0 else { return }
        let closing = descriptor
        descriptor = -1
        let result = systemClose(closing)
        // EINTR from close(2) still released the descriptor on Linux and macOS.
        guard result == 0 || errno == EINTR else { throw Self.failure(path, errno, what: "cannot be written") }
    }

    // MARK: - Helpers (shared with FileWriter+Private.swift)

    /// What `attempt` gives once it gives something, tried again every 20 ms without holding a
    /// thread (a FIFO's reader, another process's lock); `nil` once `end` has passed.
    /// - Throws: what `attempt` throws, or ``APIError/Code/cancelled`` (worded by `cancelled`)
    ///   when the task is cancelled while waiting.
    private static func polling<T>(
        until end: ContinuousClock.Instant?, cancelled: LocalizedMessage, _ attempt: () throws(APIError) -> T?
    ) async throws(APIError) -> T? {
        while true {
            if let value = try attempt() { return value }
            if let end, ContinuousClock.now >= end { return nil }
            do {
                try await Task.sleep(for: .milliseconds(20))
            } catch {
                throw APIError(.cancelled, localized: cancelled)
            }
        }
    }

    /// Makes a descriptor opened with `O_NONBLOCK` (so that a FIFO could not hold the open) block
    /// again for its writes.
    static func makeBlocking(_ descriptor: Int32, path: String) throws(APIError) {
        guard fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK) == 0 else {
            throw failure(path, errno, what: "cannot be opened for writing")
        }
    }

    static func create(_ url: URL, mode: mode_t) throws(APIError) -> FileWriter? {
        let descriptor = systemOpen(url.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            if errno == EEXIST { return nil }
            throw failure(url.path, errno, what: "cannot be created")
        }
        return FileWriter(descriptor: descriptor, path: url.path, removesUnlessCommitted: false)
    }

    static func symbolicLink(_ path: String) -> APIError {
        APIError(
            .storage,
            localized: "\(path) is a symbolic link where Callsign keeps a file of its own; it is not followed — remove the link")
    }

    static func failure(_ path: String, _ number: Int32, what: LocalizedMessage) -> APIError {
        APIError(.storage, localized: "\(path) \(what) (\(String(cString: strerror(number))))")
    }
}

#if canImport(Glibc)
func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 { Glibc.open(path, flags, mode) }
private let systemWrite = Glibc.write
let systemClose = Glibc.close
#elseif canImport(Darwin)
func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 { Darwin.open(path, flags, mode) }
private let systemWrite = Darwin.write
let systemClose = Darwin.close
#endif
