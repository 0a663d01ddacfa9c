import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bodies read from files that are not regular files, and the time limits and Ctrl-C of `download`.
@Suite("callsign bodies from FIFOs and devices; download --timeout, --deadline and Ctrl-C", .hangGuard)
struct CLIBodyAndInterruptTests {
    /// A FIFO in `folder` that a thread of its own fills with `bytes` once a reader opens it.
    private static func fifo(in folder: URL, feeding bytes: Data) throws -> URL {
        let url = folder.appendingPathComponent("body.fifo")
        try #require(mkfifo(url.path, 0o600) == 0)
        Thread.detachNewThread {
            // Waits for the reader; opened again when a signal interrupts the wait.
            var descriptor: Int32
            repeat { descriptor = open(url.path, O_WRONLY | O_CLOEXEC) } while descriptor < 0 && errno == EINTR
            guard descriptor >= 0 else { return }
            let writer = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            writer.write(bytes)
            try? writer.close()
        }
        return url
    }

    private static let payload = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    @Test("--body @FIFO and @/proc/self/status are streamed whole, never sent as Content-Length: 0")
    func commandLineBodies() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            try await withTemporaryFolder("cli-fifo") { folder in
                let fifo = try Self.fifo(in: folder, feeding: Self.payload)
                let sent = try await CLIRunner.run(["post", server.url("/anything/fifo").absoluteString, "--body", "@\(fifo.path)"])
                #expect(sent.status == 0, "\(sent.standardError)")
                let seen = try #require(server.requests.last)
                #expect(seen.body == Self.payload)
                #expect(seen.header("Content-Length") == nil || seen.header("Content-Length") == "\(Self.payload.count)")

                let form = try Self.fifo(in: folder.appendingPathComponent("f", isDirectory: true).creatingFolder(), feeding: Data("from a pipe".utf8))
                let posted = try await CLIRunner.run(["post", server.url("/anything/form").absoluteString, "-F", "log=@\(form.path)"])
                #expect(posted.status == 0, "\(posted.standardError)")
                let text = String(decoding: server.requests.last?.body ?? Data(), as: UTF8.self)
                #expect(text.contains("from a pipe"))
            }
            // Standard input goes through the same door: a pipe, streamed whole.
            let piped = try await CLIRunner.run(["post", server.url("/anything/stdin").absoluteString, "--body", "@-"], input: Self.payload)
            #expect(piped.status == 0, "\(piped.standardError)")
            #expect(server.requests.last?.body == Self.payload)
            #if os(Linux)
            let proc = try await CLIRunner.run(["post", server.url("/anything/proc").absoluteString, "--body", "@/proc/self/status"])
            #expect(proc.status == 0, "\(proc.standardError)")
            let body = String(decoding: server.requests.last?.body ?? Data(), as: UTF8.self)
            #expect(body.hasPrefix("Name:"), "\(body.prefix(80))")
            #endif
        }
    }

    @Test("a FIFO body arrives whole, and /dev/zero stops at the request-body limit with a clear error", arguments: TransportKind.allCases)
    func unknownLengthBodies(_ kind: TransportKind) async throws {
        try await withServer(transport: kind, configure: { $0.limits.maximumRequestBodySize = 1 << 20 }) { server, client in
            try await withTemporaryFolder("fifo-\(kind)") { folder in
                let fifo = try Self.fifo(in: folder, feeding: Self.payload)
                let response = try await client.send(Request(method: .put, path: "/anything/fifo", body: .file(fifo)))
                #expect(response.status.code == 200)
                #expect(server.requests.last?.body == Self.payload)
            }
            #if os(Linux) || os(macOS)
            do {
                _ = try await client.send(Request(method: .put, path: "/upload/zero", body: .file(URL(fileURLWithPath: "/dev/zero"))))
                Issue.record("an endless body was sent")
            } catch let error as APIError {
                #expect(error.description.contains("Limits.maximumRequestBodySize"), "\(error)")
                #expect(error.code == .encoding, "\(error)")
            }
            #endif
        }
    }

    /// A resumable body of `count` bytes that drips without a range and answers a range at once.
    private static func slowResumable(_ server: TestServer, count: Int, arrived: AsyncStream<Void>.Continuation) {
        server.route("/slow-resumable") { request in
            let etag = "\"slow-\(count)\""
            var headers: [(name: String, value: String)] = [("Content-Type", "application/octet-stream"), ("ETag", etag), ("Accept-Ranges", "bytes")]
            if let range = request.header("Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
                let start = Int(range.dropFirst(6).dropLast()), start < count, request.header("If-Range").map({ $0 == etag }) ?? true
            {
                headers.append(("Content-Range", "bytes \(start)-\(count - 1)/\(count)"))
                return ServerResponse(status: 206, headers: headers, body: .generatedRange(offset: start, count: count - start))
            }
            arrived.yield()
            return ServerResponse(headers: headers, body: .generated(count: count)).with(.drip(chunk: 8192, every: .milliseconds(100)))
        }
    }

    @Test("Ctrl-C stops a download and leaves the partial file; --continue completes it byte for byte")
    func interruptAndContinue() async throws {
        try CLIRunner.requireBuilt()
        // About 50 s at the drip's pace: a Ctrl-C that did not stop the download would let it end
        // with status 0 and the whole file, and one that stopped it shows as a partial file short
        // of `count`. No wall-clock bound on the stop: a busy machine may take long to end a process.
        let count = 4_000_000
        let arrived = AsyncStream<Void>.makeStream()
        try await TestServer.withRunning { server in
            Self.slowResumable(server, count: count, arrived: arrived.continuation)
            try await withTemporaryFolder("cli-interrupt") { folder in
                let output = folder.appendingPathComponent("big.bin")
                let partial = folder.appendingPathComponent(".big.bin.callsign-partial")
                let url = server.url("/slow-resumable").absoluteString
                let processID = Mutex<Int32?>(nil)
                async let run = CLIRunner.run(["download", url, "-o", output.path, "-q"]) { id in processID.withLock { $0 = id } }
                var iterator = arrived.stream.makeAsyncIterator()
                await iterator.next()
                // The first bytes reach the partial file (a file system event, not awaitable: polled, bounded).
                let clock = ContinuousClock()
                let started = clock.now
                while (try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int ?? 0) ?? 0 == 0,
                    clock.now - started < .seconds(60)
                {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let id = try #require(processID.withLock { $0 })
                kill(id, SIGINT)
                let result = try await run
                #expect(result.status == 130, "\(result.standardError)")
                #expect(!FileManager.default.fileExists(atPath: output.path))
                let kept = try #require(
                    FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int, "the partial file stays for --continue")
                #expect(kept > 0 && kept < count, "the download stopped part way: \(kept) of \(count) bytes")

                let resumed = try await CLIRunner.run(["download", url, "-o", output.path, "--continue", "-q"])
                #expect(resumed.status == 0, "\(resumed.standardError)")
                #expect(server.requests.last?.header("Range") == "bytes=\(kept)-", "--continue asks for what the partial file lacks")
                #expect(try Data(contentsOf: output) == TestServer.expectedBytes(count: count))
            }
        }
    }

    @Test("download --timeout and --deadline end a dripping transfer with exit 28, as get's do")
    func downloadTimeLimits() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            try await withTemporaryFolder("cli-download-time") { folder in
                // A body that takes fifteen minutes; a limit of one second ends it with exit 28
                // (a body that ran to its end would exit 0). The wall-clock bound is only a hang
                // guard, far from both: a loaded 2-core machine has taken 49 s, and 103 s while
                // three builds ran, to start the process, run it and see it stop.
                let url = server.url("/misbehave/slow-body?bytes=900&interval_ms=1000").absoluteString
                // One declaration (ClientOptions) for both commands: the same limits, the same end.
                let commands = [["download", url, "-o", folder.appendingPathComponent("t.bin").path], ["get", url]]
                for option in ["--timeout", "--deadline"] {
                    for command in commands {
                        let clock = ContinuousClock()
                        let started = clock.now
                        let result = try await CLIRunner.run(command + [option, "1", "-q"])
                        #expect(result.status == 28, "\(command[0]) \(option): \(result.standardError)")
                        #expect(clock.now - started < .seconds(450), "\(command[0]) \(option): the 900-second body was not cut short")
                    }
                }
                let bad = try await CLIRunner.run(["download", url, "-o", folder.appendingPathComponent("u.bin").path, "--timeout", "0"])
                #expect(bad.status == 64)
            }
        }
    }
}

extension URL {
    /// Creates this folder (and its parents) and returns it.
    fileprivate func creatingFolder() throws -> URL {
        try FileManager.default.createDirectory(at: self, withIntermediateDirectories: true)
        return self
    }
}
