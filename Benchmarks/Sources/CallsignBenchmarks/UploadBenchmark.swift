import Callsign
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Peak memory while a multipart form with one large file part is uploaded, on both transports.
///
/// The form streams on AsyncHTTPClient; on URLSession it is spooled to a private temporary file as
/// it is made and streamed from there. Either way the client's peak RSS must stay a small constant,
/// not the file's size. Raw URLSession uploading the same file (`uploadTask(fromFile:)`) is the
/// reference. The server (a child process) counts and checksums what arrives, so each row also
/// checks that every byte went out.
enum UploadBenchmark {
    static func run(server: ServerProcess, clients: [(name: String, client: APIClient)], session: URLSession, scale: Double) async throws {
        let size = Int(256 * 1024 * 1024 * min(scale, 1))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("callsign-bench-upload-\(getpid()).bin")
        try writeFile(file, size: size)
        defer { try? FileManager.default.removeItem(at: file) }
        print("")
        print("\(size / 1_048_576) MiB file part in a multipart form, uploaded (peak RSS over the start, MiB/s):")

        let before = Measure.currentRSS()
        Measure.resetPeak()
        var clock = ContinuousClock.now
        var request = URLRequest(url: server.url("/upload/raw"))
        request.httpMethod = "PUT"
        let (rawBody, _) = try await session.upload(for: request, fromFile: file)
        let rawSeconds = (ContinuousClock.now - clock).secondsValue
        let rawPeak = Measure.peakRSS() - before
        let rawBytes = (try? JSONDecoder().decode(Received.self, from: rawBody).bytes) ?? -1
        print("  raw URLSession, the bare file    +\(pad(format(rawPeak, 1), 6, right: true)) MiB  \(pad(format(Double(size) / 1_048_576 / rawSeconds), 5, right: true)) MiB/s  \(rawBytes == size ? "all bytes arrived" : "SHORT: \(rawBytes) of \(size) bytes")")

        for (name, client) in clients {
            var form = MultipartFormData()
            form.append(field: "title", value: "Balsa Fish")
            form.append(fileAt: file, name: "photo", filename: "photo.bin", mimeType: "application/octet-stream")
            let start = Measure.currentRSS()
            Measure.resetPeak()
            clock = ContinuousClock.now
            let answer = try await client.post(server.url("/upload/form").absoluteString).body(.multipart(form)).timeout(.seconds(600)).send()
            let seconds = (ContinuousClock.now - clock).secondsValue
            let peak = Measure.peakRSS() - start
            let bytes = (try? answer.decode(Received.self).bytes) ?? -1
            let complete = bytes > size ? "all bytes arrived (\(bytes) with the form's framing)" : "SHORT: \(bytes) bytes"
            print("  \(pad(name, 32)) +\(pad(format(peak, 1), 6, right: true)) MiB  \(pad(format(Double(size) / 1_048_576 / seconds), 5, right: true)) MiB/s  \(complete)")
        }
    }

    private struct Received: Decodable { let bytes: Int }

    /// Writes `size` bytes of a repeating pattern in 1 MiB pieces (never the whole file in memory).
    private static func writeFile(_ file: URL, size: Int) throws {
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        let piece = Data((0..<1_048_576).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        var written = 0
        while written < size {
            let count = min(piece.count, size - written)
            try handle.write(contentsOf: piece.prefix(count))
            written += count
        }
    }
}
