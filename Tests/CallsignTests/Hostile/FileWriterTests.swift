@testable import Callsign
import CallsignTesting
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What stands at a path, without following a link.
private func kind(_ path: String) -> mode_t? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return info.st_mode & S_IFMT
}

private func mode(_ path: String) -> mode_t? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o7777
}

/// A character device to write into: a null device made in `folder` when this process may
/// (root), else the system's `/dev/null` (which the test then checks was not replaced).
private func characterDevice(in folder: URL) -> String {
    let path = folder.appendingPathComponent("null").path
    #if canImport(Glibc)
    if mknod(path, S_IFCHR | 0o666, dev_t(0x0103)) == 0 { return path }  // major 1, minor 3: what /dev/null is
    #endif
    return "/dev/null"
}

/// A FIFO in `folder` and a reader on a thread of its own that collects what arrives until the
/// writer closes it.
private func fifoWithReader(in folder: URL) throws -> (path: String, received: () async -> Data) {
    let path = folder.appendingPathComponent("pipe").path
    try #require(mkfifo(path, 0o600) == 0)
    let received = AsyncStream<Data> { continuation in
        Thread.detachNewThread {
            // Opened again when a signal (a test's child process ending) interrupts the wait for
            // the writer: a reader that gave up would leave the writer waiting for good.
            var descriptor: Int32
            repeat { descriptor = open(path, O_RDONLY | O_CLOEXEC) } while descriptor < 0 && errno == EINTR
            let data = descriptor < 0 ? Data() : FileHandle(fileDescriptor: descriptor, closeOnDealloc: true).readDataToEndOfFile()
            continuation.yield(data)
            continuation.finish()
        }
    }
    return (path, { await received.first { _ in true } ?? Data() })
}

@Suite("Files written: devices, FIFOs, links and Callsign's own names", .hangGuard)
struct FileWriterTests {
    @Test("a regular file is replaced in one rename, keeps its mode, and leaves no temporary file")
    func regularFile() throws {
        let folder = Scratch.folder()
        let file = folder.appendingPathComponent("out.json")
        try Data("old".utf8).write(to: file)
        chmod(file.path, 0o640)
        try FileWriter.write(Data("new".utf8), to: file)
        #expect(try Data(contentsOf: file) == Data("new".utf8))
        #expect(mode(file.path) == 0o640)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["out.json"])
        try FileWriter.write(Data("private".utf8), to: folder.appendingPathComponent("new.har"), permissions: .ownerOnly)
        #expect(mode(folder.appendingPathComponent("new.har").path) == 0o600)
    }

    @Test("a FIFO is written into: its reader gets the bytes, and it stays a FIFO")
    func fifo() async throws {
        let folder = Scratch.folder()
        let (path, received) = try fifoWithReader(in: folder)
        try FileWriter.write(Data("through the pipe".utf8), to: URL(fileURLWithPath: path))
        #expect(await received() == Data("through the pipe".utf8))
        #expect(kind(path) == S_IFIFO)
    }

    @Test("a character device is written into and stays a character device")
    func characterDeviceStays() throws {
        let folder = Scratch.folder()
        let device = characterDevice(in: folder)
        try FileWriter.write(Data(repeating: 7, count: 100_000), to: URL(fileURLWithPath: device))
        #expect(kind(device) == S_IFCHR)
        #expect(kind("/dev/null") == S_IFCHR)
    }

    @Test("a symbolic link the user names is written through: the link stays, its file is replaced")
    func linkWrittenThrough() throws {
        let folder = Scratch.folder()
        let real = folder.appendingPathComponent("real.txt")
        try Data("old".utf8).write(to: real)
        let link = folder.appendingPathComponent("link.txt")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: real.path)
        try FileWriter.write(Data("new".utf8), to: link)
        #expect(kind(link.path) == S_IFLNK)
        #expect(try Data(contentsOf: real) == Data("new".utf8))
    }

    @Test("a link to nothing, a folder: clear errors, nothing created or replaced")
    func refusedTargets() throws {
        let folder = Scratch.folder()
        let dangling = folder.appendingPathComponent("dangling")
        try FileManager.default.createSymbolicLink(atPath: dangling.path, withDestinationPath: folder.appendingPathComponent("nowhere").path)
        let error = #expect(throws: APIError.self) { try FileWriter.write(Data("x".utf8), to: dangling) }
        #expect(error?.code == .storage)
        #expect(error?.message.contains("symbolic link") == true)
        #expect(kind(dangling.path) == S_IFLNK)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("nowhere").path))
        let folderError = #expect(throws: APIError.self) { try FileWriter.write(Data("x".utf8), to: folder) }
        #expect(folderError?.message.contains("folder") == true)
        let missing = folder.appendingPathComponent("no/such/folder/out.json")
        let missingError = #expect(throws: APIError.self) { try FileWriter.write(Data("x".utf8), to: missing) }
        #expect(missingError?.message.contains(missing.path) == true, "the path the user gave, not a temporary one")
    }

    @Test("Callsign's own names: a planted link is never followed, and new files are 0600")
    func privateNames() throws {
        let folder = Scratch.folder()
        let victim = folder.appendingPathComponent("victim")
        try Data("keep me".utf8).write(to: victim)
        let planted = folder.appendingPathComponent(".x.callsign-partial")
        try FileManager.default.createSymbolicLink(atPath: planted.path, withDestinationPath: victim.path)
        #expect(try FileWriter.createPrivate(planted) == nil)
        let reopen = #expect(throws: APIError.self) { try FileWriter.reopenPrivate(planted) }
        #expect(reopen?.message.contains("symbolic link") == true)
        #expect(throws: APIError.self) { try FileWriter.readPrivate(planted, limit: 100) }
        #expect(throws: APIError.self) { try FileWriter.removePrivate(planted) }
        #expect(throws: APIError.self) { try FileWriter.replacePrivate(planted, with: Data("x".utf8)) }
        #expect(try Data(contentsOf: victim) == Data("keep me".utf8))
        #expect(kind(planted.path) == S_IFLNK)

        let own = folder.appendingPathComponent(".y.callsign-partial")
        let writer = try #require(try FileWriter.createPrivate(own))
        try writer.write(Data("abc".utf8))
        try writer.close()
        #expect(mode(own.path) == 0o600)
        let state = folder.appendingPathComponent(".y.callsign-partial.json")
        try FileWriter.replacePrivate(state, with: Data("{}".utf8))
        #expect(mode(state.path) == 0o600)
        #expect(throws: APIError.self) { try FileWriter.readPrivate(state, limit: 1) }
    }

    @Test("download --continue with a planted partial link: an error, and the link's target is untouched")
    func plantedPartial() async throws {
        try await withServer { _, client in
            let folder = Scratch.folder()
            let victim = folder.appendingPathComponent("victim")
            try Data("keep me".utf8).write(to: victim)
            let destination = folder.appendingPathComponent("file.bin")
            let partial = folder.appendingPathComponent(".file.bin.callsign-partial")
            try FileManager.default.createSymbolicLink(atPath: partial.path, withDestinationPath: victim.path)
            for resuming in [true, false] {
                let error = await apiError { _ = try await client.download(.get("/bytes/1000"), to: destination, resuming: resuming) }
                #expect(error?.code == .storage)
                #expect(error?.message.contains("symbolic link") == true)
            }
            // A planted state file too: not read through.
            try FileManager.default.removeItem(at: partial)
            let state = folder.appendingPathComponent(".file.bin.callsign-partial.json")
            try FileManager.default.createSymbolicLink(atPath: state.path, withDestinationPath: victim.path)
            let stateError = await apiError { _ = try await client.download(.get("/bytes/1000"), to: destination) }
            #expect(stateError?.code == .storage)
            #expect(try Data(contentsOf: victim) == Data("keep me".utf8))
            #expect(!FileManager.default.fileExists(atPath: destination.path))
        }
    }

    @Test("a download into a FIFO or a character device writes into it; no partial file beside it")
    func downloadIntoStreams() async throws {
        try await withServer { _, client in
            let folder = Scratch.folder()
            let (path, received) = try fifoWithReader(in: folder)
            let response = try await client.download(.get("/bytes/300000"), to: URL(fileURLWithPath: path))
            #expect(response.status.code == 200)
            #expect(await received() == TestServer.expectedBytes(count: 300_000))
            #expect(kind(path) == S_IFIFO)
            let device = characterDevice(in: folder)
            _ = try await client.download(.get("/bytes/1000"), to: URL(fileURLWithPath: device))
            #expect(kind(device) == S_IFCHR)
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).allSatisfy { !$0.contains("callsign-partial") })
        }
    }

    @Test("downloads into FIFOs nobody reads wait without holding the pool's threads, and end when cancelled")
    func unreadFIFOs() async throws {
        try await withServer { server, client in
            let folder = Scratch.folder()
            // More waiting downloads than the cooperative pool has threads (one per core).
            let count = ProcessInfo.processInfo.activeProcessorCount + 2
            let (answers, answer) = AsyncStream.makeStream(of: Void.self)
            server.route("/fifo-body") { _ in
                answer.yield()
                return .json(["to": "a FIFO nobody reads"])
            }
            var waiting: [Task<APIError?, Never>] = []
            for index in 0..<count {
                let path = folder.appendingPathComponent("unread-\(index)").path
                try #require(mkfifo(path, 0o600) == 0)
                waiting.append(Task {
                    do {
                        _ = try await client.download(.get("/fifo-body"), to: URL(fileURLWithPath: path))
                        return nil
                    } catch let error as APIError {
                        return error
                    } catch {
                        return APIError.wrap(error, request: nil)
                    }
                })
            }
            // The server has answered every download: each goes on to wait for its FIFO's reader.
            var answered = 0
            for await _ in answers {
                answered += 1
                if answered == count { break }
            }
            // The pool still runs calls while they wait.
            let response = try await client.send(.get("/json"))
            #expect(response.status.code == 200)
            for task in waiting { task.cancel() }
            for task in waiting {
                let error = await task.value
                #expect(error?.code == .cancelled, "\(String(describing: error))")
            }
        }
    }

    @Test("a download's partial and state files are 0600 while it waits to be resumed")
    func stateFilesPrivate() async throws {
        try await withServer { server, client in
            server.route("/cut") { _ in
                ServerResponse(status: 200, headers: [("ETag", "\"v1\"")], body: .generated(count: 10_000)).with(.truncate(afterBodyBytes: 5_000))
            }
            let destination = Scratch.folder().appendingPathComponent("cut.bin")
            _ = await apiError { _ = try await client.download(.get("/cut"), to: destination) }
            let folder = destination.deletingLastPathComponent()
            #expect(mode(folder.appendingPathComponent(".cut.bin.callsign-partial").path) == 0o600)
            #expect(mode(folder.appendingPathComponent(".cut.bin.callsign-partial.json").path) == 0o600)
        }
    }

    @Test("callsign get -o and download -o: a FIFO gets the bytes, a device stays a device, a planted partial is refused")
    func commandLine() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let folder = Scratch.folder()
            let (path, received) = try fifoWithReader(in: folder)
            let get = try await CLIRunner.run(["get", server.url("/bytes/5000").absoluteString, "-o", path])
            #expect(get.status == 0, "\(get.standardError)")
            #expect(await received() == TestServer.expectedBytes(count: 5000))
            #expect(kind(path) == S_IFIFO)

            let device = characterDevice(in: folder)
            for arguments in [["get", server.url("/bytes/5000").absoluteString, "-o", device], ["download", server.url("/bytes/5000").absoluteString, "-o", device, "-q"]] {
                let run = try await CLIRunner.run(arguments)
                #expect(run.status == 0, "\(run.standardError)")
                #expect(kind(device) == S_IFCHR)
            }

            let victim = folder.appendingPathComponent("victim")
            try Data("keep me".utf8).write(to: victim)
            try FileManager.default.createSymbolicLink(
                atPath: folder.appendingPathComponent(".big.bin.callsign-partial").path, withDestinationPath: victim.path)
            let planted = try await CLIRunner.run(
                ["download", server.url("/bytes/5000").absoluteString, "-o", folder.appendingPathComponent("big.bin").path, "--continue", "-q"])
            #expect(planted.status != 0)
            #expect(planted.standardError.contains("symbolic link"))
            #expect(try Data(contentsOf: victim) == Data("keep me".utf8))
        }
    }
}
