import Callsign
import CallsignTesting
import Foundation
import Synchronization
import Testing

@testable import Callsign

/// A file route whose first answer is cut halfway; later answers follow `mode`.
private func installResumableFile(on server: TestServer, count: Int) {
    let hits = Mutex<[String: Int]>([:])
    server.route("/file/") { request in
        let mode = request.pathSegments.last ?? "honest"
        let hit = hits.withLock { seen -> Int in
            seen[mode, default: 0] += 1
            return seen[mode] ?? 0
        }
        let v1: [(name: String, value: String)] = [("ETag", "\"v1\""), ("Content-Type", "application/octet-stream")]
        let v2: [(name: String, value: String)] = [("ETag", "\"v2\""), ("Content-Type", "application/octet-stream")]
        if hit == 1 {
            return ServerResponse(status: 200, headers: v1, body: .generated(count: count)).with(.truncate(afterBodyBytes: count / 2))
        }
        let start = request.header("Range").flatMap { Int($0.dropFirst(6).dropLast()) }
        switch (mode, start) {
        case ("honest", let start?) where request.header("If-Range") == "\"v1\"":
            return ServerResponse(
                status: 206, headers: v1 + [("Content-Range", "bytes \(start)-\(count - 1)/\(count)")],
                body: .generatedRange(offset: start, count: count - start))
        case ("changed", _):
            // A new version: If-Range "v1" does not match, so the whole new file.
            return ServerResponse(status: 200, headers: v2, body: .generatedRange(offset: 7, count: count))
        case ("lying", let start?):
            // Ignores If-Range and sends a range of the new version.
            return ServerResponse(
                status: 206, headers: v2 + [("Content-Range", "bytes \(start)-\(count - 1)/\(count)")],
                body: .generatedRange(offset: 7 + start, count: count - start))
        case ("lying", nil):
            return ServerResponse(status: 200, headers: v2, body: .generatedRange(offset: 7, count: count))
        case ("misaligned", _?):
            return ServerResponse(
                status: 206, headers: v1 + [("Content-Range", "bytes 0-\(count - 1)/\(count)")], body: .generated(count: count))
        default:
            return ServerResponse(status: 200, headers: v1, body: .generated(count: count))
        }
    }
}

/// Every progress report with the id of the call that made it.
private final class CallProgressRecorder: CallObserver {
    let updates = Mutex<[(call: UInt64, progress: TransferProgress)]>([])
    func callDidProgress(_ call: ObservedCall, progress: TransferProgress) { updates.withLock { $0.append((call.id, progress)) } }
}

@Suite("Large transfers", .hangGuard)
struct TransferTests {
    @Test("A download is byte-exact, 0600 until renamed, with monotonic progress ending at 1.0", arguments: TransportKind.allCases)
    func download(kind: TransportKind) async throws {
        try await withServer(transport: kind) { _, client in
            let destination = Scratch.folder().appendingPathComponent("bytes.bin")
            let task = client.startDownload(.get("/bytes/3000000"), to: destination)
            var reports: [TransferProgress] = []
            for await progress in task.progress where progress.direction == .download { reports.append(progress) }
            let response = try await task.response
            #expect(response.status.code == 200)
            #expect(response.fileURL == destination)
            #expect(try Data(contentsOf: destination) == TestServer.expectedBytes(count: 3_000_000))
            #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes })
            #expect(reports.last?.fraction == 1.0)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: destination.deletingLastPathComponent().path)
            #expect(leftovers == ["bytes.bin"])
        }
    }

    @Test("An interrupted download resumes from where the file stops (Range + If-Range)", arguments: TransportKind.allCases)
    func resume(kind: TransportKind) async throws {
        // Every report, as a CallObserver hears it: a task's stream keeps only the newest one for a
        // slow reader, so on a busy machine its first item may be a later report.
        let recorder = CallProgressRecorder()
        try await withServer(transport: kind, configure: { $0.observability.observers = [recorder] }) { server, client in
            let count = 2_000_000
            installResumableFile(on: server, count: count)
            let destination = Scratch.folder().appendingPathComponent("file.bin")
            let failure = await apiError { _ = try await client.download(.get("/file/honest"), to: destination) }
            #expect(failure?.code == .transport)
            #expect(!FileManager.default.fileExists(atPath: destination.path))
            let partial = destination.deletingLastPathComponent().appendingPathComponent(".file.bin.callsign-partial")
            let kept = try #require(try FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int)
            #expect(kept > 0 && kept <= count / 2)

            let response = try await client.startDownload(.get("/file/honest"), to: destination).response
            #expect(response.status.code == 206)
            let updates = recorder.updates.withLock { $0 }
            let resumedCall = try #require(updates.map(\.call).max(), "the resumed download reported progress")
            let first = updates.first { $0.call == resumedCall && $0.progress.direction == .download }
            #expect(first?.progress.completedBytes == Int64(kept), "progress starts where the file stops")
            let resumed = try #require(server.requests.last)
            #expect(resumed.header("Range") == "bytes=\(kept)-")
            #expect(resumed.header("If-Range") == "\"v1\"")
            #expect(try Data(contentsOf: destination) == TestServer.expectedBytes(count: count))
            #expect(!FileManager.default.fileExists(atPath: partial.path))
        }
    }

    @Test("A 200 instead of 206, a changed validator or a misaligned range start again from zero", arguments: ["ignore", "changed", "lying", "misaligned"])
    func restart(mode: String) async throws {
        try await withServer { server, client in
            let count = 1_000_000
            installResumableFile(on: server, count: count)
            let destination = Scratch.folder().appendingPathComponent("file.bin")
            _ = await apiError { _ = try await client.download(.get("/file/\(mode)"), to: destination) }
            let response = try await client.download(.get("/file/\(mode)"), to: destination)
            #expect(response.status.code == 200)
            let expected = ["changed", "lying"].contains(mode)
                ? TestServer.expectedBytes(count: count, offset: 7) : TestServer.expectedBytes(count: count)
            #expect(try Data(contentsOf: destination) == expected)
            let ranged = server.requests.filter { $0.header("Range") != nil }.count
            #expect(ranged == 1)
            #expect(server.requests.count == (["lying", "misaligned"].contains(mode) ? 3 : 2))
        }
    }

    @Test("resuming: false starts again; by name and by endpoint value")
    func downloadVariants() async throws {
        try await withServer(definitions: yamlDefinitions("Blob:\n  path: bytes/{n}\n")) { server, client in
            let destination = Scratch.folder().appendingPathComponent("blob.bin")
            let byName = try await client.download("Blob", parameters: ["n": 4096], to: destination)
            #expect(byName.status.code == 200)
            #expect(try Data(contentsOf: destination) == TestServer.expectedBytes(count: 4096))
            installResumableFile(on: server, count: 100_000)
            let other = Scratch.folder().appendingPathComponent("again.bin")
            _ = await apiError { _ = try await client.download(.get("/file/honest"), to: other) }
            let fresh = try await client.download(.get("/file/honest"), to: other, resuming: false)
            #expect(server.requests.last?.header("Range") == nil)
            #expect(fresh.status.code == 200)
        }
    }

    @Test("Uploads report progress by bytes on both transports — in memory, file, multipart form and stream — rising to the total", arguments: TransportKind.allCases)
    func uploadProgressByBytes(kind: TransportKind) async throws {
        // Every report, as an observer hears it (a task's progress stream keeps only the newest).
        let recorder = CallProgressRecorder()
        try await withServer(transport: kind, configure: { $0.observability.observers = [recorder] }) { server, client in
            let content = TestServer.expectedBytes(count: 4 << 20, offset: 3)
            let file = Scratch.folder().appendingPathComponent("upload.bin")
            try content.write(to: file)
            var form = MultipartFormData()
            form.append(fileAt: file, name: "video", mimeType: "video/mp4")
            let slices = stride(from: 0, to: content.count, by: 100_000).map { Data(content[$0..<min(content.count, $0 + 100_000)]) }
            let bodies: [(String, RequestBody)] = [
                ("memory", .data(content)), ("file", .file(file)), ("form", .multipart(form)),
                ("stream", .stream(slices.asyncChunks, length: content.count)),
            ]
            for (name, body) in bodies {
                recorder.updates.withLock { $0 = [] }
                let answer = try await client.send(Request(method: .put, path: "/upload/file", body: body)).json()
                let sent = recorder.updates.withLock { $0 }.filter { $0.progress.direction == .upload }.map(\.progress)
                let bytes = sent.map(\.completedBytes)
                let total = try #require(sent.last?.totalBytes, "\(name): no upload report")
                #expect(answer["bytes"] == .int(Int(total)), "\(name): the server got every byte")
                #expect(bytes.first == 0, "\(name) starts at 0")
                #expect(bytes.last == total, "\(name) ends at the total")
                #expect(Set(bytes).count >= 10, "\(name) reported \(bytes)")
                #expect(zip(bytes, bytes.dropFirst()).allSatisfy { $0 <= $1 }, "\(name) never goes back: \(bytes)")
                #expect(bytes.allSatisfy { $0 <= total })
            }
        }
    }

    @Test("File bodies and multipart forms with files are streamed with a known length (on URLSession, a form through a private temporary file); progress reaches 1.0", arguments: TransportKind.allCases)
    func uploads(kind: TransportKind) async throws {
        try await withServer(transport: kind) { server, client in
            let folder = Scratch.folder()
            let file = folder.appendingPathComponent("upload.bin")
            let content = TestServer.expectedBytes(count: 6_000_000, offset: 3)
            try content.write(to: file)

            var request = Request(method: .put, path: "/upload/file", body: .file(file))
            request.headers["X-Test"] = "file"
            let task = client.start(request)
            var reports: [TransferProgress] = []
            for await progress in task.progress where progress.direction == .upload { reports.append(progress) }
            let answer = try await task.response.json()
            #expect(answer["bytes"] == .int(content.count))
            #expect(answer["crc32"] == .int(Int(TestServer.crc32(content))))
            if kind == .asyncHTTPClient {
                #expect(server.requests.last?.header("Content-Length") == String(content.count))
            } else {
                #expect(server.requests.last?.header("Transfer-Encoding") == "chunked")
            }
            #expect(reports.last?.fraction == 1.0)
            #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes })

            var form = MultipartFormData()
            form.append(field: "title", value: "Balsa Fish")
            form.append(fileAt: file, name: "photo", mimeType: "image/png")
            // On URLSession the form goes through a private file in a folder of this test's own
            // (other tests spool into the temporary folder at the same time), removed once sent.
            let spoolFolder = Scratch.folder()
            // What the spool folder holds while the server reads the form (the client is still
            // waiting for the answer then).
            let spooledWhileSending = Mutex<[String]>([])
            server.route("/upload/form") { request in
                spooledWhileSending.withLock { $0 = (try? FileManager.default.contentsOfDirectory(atPath: spoolFolder.path)) ?? [] }
                let received = request.streamedBody ?? (0, 0)
                return .json([
                    "bytes": .int(received.bytes), "crc32": .int(Int(received.crc32)), "contentType": .string(request.header("Content-Type") ?? ""),
                ])
            }
            let spooling = kind == .urlSession
                ? APIClient(configuration: client.configuration, transport: URLSessionTransport(configuration: .ephemeral, spoolDirectory: spoolFolder))
                : client
            let multipart = try await spooling.post("/upload/form").body(.multipart(form)).send().json()
            let encoded = try form.encoded()
            #expect(multipart["bytes"] == .int(encoded.count))
            #expect(multipart["crc32"] == .int(Int(TestServer.crc32(encoded))))
            #expect(multipart["contentType"]?.stringValue == form.contentType)
            if kind == .urlSession {
                let seen = spooledWhileSending.withLock { $0 }
                #expect(seen.count == 1 && seen.allSatisfy { $0.hasPrefix(".callsign-upload-") }, "\(seen)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: spoolFolder.path).isEmpty, "removed once sent")
                try await spooling.transport.shutdown()
            }

            var missing = MultipartFormData()
            missing.append(fileAt: folder.appendingPathComponent("nope.bin"), name: "x")
            let error = await apiError { _ = try await client.post("/upload/x").body(.multipart(missing)).send() }
            #expect(error?.code == .encoding)
        }
    }

    @Test("A per-call timeout of centuries is accepted, not an overflow", arguments: TransportKind.allCases)
    func hugeTimeout(kind: TransportKind) async throws {
        try await withServer(transport: kind) { _, client in
            let response = try await client.get("/get").timeout(.seconds(Int64.max / 4)).send()
            #expect(response.status.code == 200)
        }
    }

    @Test("stream(_:) hands the body over chunk by chunk, decoded")
    func streaming() async throws {
        try await withServer { _, client in
            let streamed = try await client.stream(.get("/bytes/2500000"))
            #expect(streamed.response.status.code == 200)
            var received = Data()
            var chunks = 0
            for try await chunk in streamed.chunks {
                received.append(chunk)
                chunks += 1
            }
            #expect(chunks > 1)
            #expect(received == TestServer.expectedBytes(count: 2_500_000))
            let gzip = try await client.stream(.get("/gzip"))
            var text = Data()
            for try await chunk in gzip.chunks { text.append(chunk) }
            #expect(try JSONValue(parsing: text)["path"] == "/gzip")
        }
    }
}

@Suite("A file body's progress reporters")
struct FileBodyProgressTests {
    @Test("a file body told to two reporters tells both, each up to the whole size (the idle watch and the transport's progress)")
    func reportersChain() async throws {
        let file = Scratch.folder().appendingPathComponent("body.bin")
        let content = Data((0..<700_000).map { UInt8(truncatingIfNeeded: $0) })
        try content.write(to: file)
        let first = Mutex<[Int64]>([])
        let second = Mutex<[Int64]>([])
        let body = TransportBody.file(file)
            .reportingProgress { sent in first.withLock { $0.append(sent) } }
            .reportingProgress { sent in second.withLock { $0.append(sent) } }
        var read = Data()
        for try await chunk in try body.chunks() { read.append(chunk) }
        #expect(read == content)
        for (name, reports) in [("first", first.withLock { $0 }), ("second", second.withLock { $0 })] {
            #expect(reports.last == Int64(content.count), "\(name): \(reports)")
            #expect(reports == reports.sorted(), "\(name) never goes back")
        }
    }
}
