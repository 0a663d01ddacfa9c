import Callsign
import CallsignTesting
import Foundation
import Testing

/// A definitions file with one API on the test server.
private func definitionsFile(in folder: URL, server: TestServer, api: String, method: String, path: String) throws -> URL {
    let file = folder.appendingPathComponent("api.yaml")
    try Data("DEFAULT:\n  baseURL: \(server.baseURL.absoluteString)\n\(api):\n  method: \(method)\n  path: \(path)\n".utf8).write(to: file)
    return file
}

@Suite("callsign download and uploads", .hangGuard)
struct TransferCommandTests {
    @Test("A 256 MiB download to a file grows peak memory by less than 32 MiB, byte-exact")
    func bigDownload() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let folder = Scratch.folder()
            let small = try await peakMemory([CLIRunner.executable.path, "download", server.url("/bytes/1024").absoluteString, "-o", folder.appendingPathComponent("small.bin").path, "-q"])
            let big = try await peakMemory([CLIRunner.executable.path, "download", server.url("/bytes/268435456").absoluteString, "-o", folder.appendingPathComponent("big.bin").path, "-q"])
            #expect(small.result.status == 0)
            #expect(big.result.status == 0, "\(big.result.standardError)")
            #expect(small.peak > 0)
            #expect(big.peak - small.peak < 32 << 20, "peak grew by \((big.peak - small.peak) >> 20) MiB")
            let file = folder.appendingPathComponent("big.bin")
            #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) == 268_435_456)
            // Byte-exact: compare in 16 MiB slices against the server's generator.
            let handle = try FileHandle(forReadingFrom: file)
            defer { try? handle.close() }
            var offset = 0
            var identical = true
            while let slice = try handle.read(upToCount: 16 << 20), !slice.isEmpty {
                identical = identical && slice == TestServer.expectedBytes(count: slice.count, offset: offset)
                offset += slice.count
            }
            #expect(identical)
            #expect(big.result.standardOutput.contains("Saved"))
        }
    }

    @Test("A 128 MiB --body @file upload is streamed: bounded memory, correct bytes on the server")
    func bigUpload() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let folder = Scratch.folder()
            let definitions = try definitionsFile(in: folder, server: server, api: "Upload", method: "PUT", path: "upload/big")
            let bigFile = folder.appendingPathComponent("big.bin")
            let smallFile = folder.appendingPathComponent("small.bin")
            #expect(FileManager.default.createFile(atPath: bigFile.path, contents: nil))
            // 128 MiB made and checksummed: seconds of CPU, on a thread of its own.
            let crc = try await onOwnThread {
                let handle = try FileHandle(forWritingTo: bigFile)
                var crc: UInt32 = 0
                for slice in 0..<8 {
                    let chunk = TestServer.expectedBytes(count: 16 << 20, offset: slice << 24)
                    crc = TestServer.crc32(chunk, continuing: crc)
                    try handle.write(contentsOf: chunk)
                }
                try handle.close()
                return crc
            }
            try Data("tiny".utf8).write(to: smallFile)

            let small = try await peakMemory([CLIRunner.executable.path, "call", "Upload", "-D", definitions.path, "--body", "@\(smallFile.path)"])
            let big = try await peakMemory([CLIRunner.executable.path, "call", "Upload", "-D", definitions.path, "--body", "@\(bigFile.path)"])
            #expect(small.result.status == 0)
            #expect(big.result.status == 0, "\(big.result.standardError)")
            #expect(big.result.standardOutput.contains("\"bytes\":134217728"))
            #expect(big.result.standardOutput.contains("\"crc32\":\(crc)"))
            #expect(big.peak - small.peak < 32 << 20, "peak grew by \((big.peak - small.peak) >> 20) MiB")
        }
    }

    @Test("-F sends a multipart form with a file; --body text; --continue resumes")
    func formsAndContinue() async throws {
        try CLIRunner.requireBuilt()
        try await TestServer.withRunning { server in
            let folder = Scratch.folder()
            let definitions = try definitionsFile(in: folder, server: server, api: "Echo", method: "POST", path: "anything/echo")
            let photo = folder.appendingPathComponent("photo.png")
            try Data("not really a png".utf8).write(to: photo)
            let form = try await CLIRunner.run(["call", "Echo", "-D", definitions.path, "-F", "title=Balsa Fish", "-F", "photo=@\(photo.path)"])
            #expect(form.status == 0, "\(form.standardError)")
            let received = try #require(server.requests.last)
            #expect(received.header("Content-Type")?.hasPrefix("multipart/form-data; boundary=") == true)
            let text = String(decoding: received.body, as: UTF8.self)
            #expect(text.contains("name=\"title\"\r\n\r\nBalsa Fish"))
            #expect(text.contains("name=\"photo\"; filename=\"photo.png\""))
            #expect(text.contains("not really a png"))

            let plain = try await CLIRunner.run(["call", "Echo", "-D", definitions.path, "--body", "hello there"])
            #expect(plain.status == 0)
            #expect(String(decoding: server.requests.last?.body ?? Data(), as: UTF8.self) == "hello there")
            let missing = try await CLIRunner.run(["call", "Echo", "-D", definitions.path, "--body", "@/no/such/file"])
            #expect(missing.status == 65)
            #expect(missing.standardError.contains("is not a readable file"))

            let url = server.url("/bytes/3000000?truncate=1000000").absoluteString
            let output = folder.appendingPathComponent("part.bin").path
            let cut = try await CLIRunner.run(["download", url, "-o", output])
            #expect(cut.status == 56)
            #expect(cut.standardError.contains("downloaded"))
            let resumed = try await CLIRunner.run(["download", url, "-o", output, "--continue"])
            #expect(resumed.status == 0, "\(resumed.standardError)")
            #expect(resumed.standardOutput.contains("(resumed)"))
            #expect(server.requests.last?.header("Range")?.hasPrefix("bytes=") == true)
            #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == TestServer.expectedBytes(count: 3_000_000))
        }
    }
}
