public import Foundation
import CCallsignZlib
import NIOCore

/// Deterministic bytes for `/bytes/{n}`: byte `i` depends only on `i`, so any chunking of
/// the same count gives the same content.
struct BodyGenerator {
    private var offset: Int

    init(offset: UInt64 = 0) { self.offset = Int(offset % UInt64(Self.period)) }

    /// The pattern repeats every `period` bytes, a prime just under 1 MiB, so that any shift
    /// smaller than that — a resume at the wrong offset — changes the bytes.
    static let period = 1_048_573
    /// One period of the pattern, computed once: generating is then copying.
    private static let pattern: [UInt8] = (0..<period).map { position in
        var mixed = UInt64(position) &* 0x9E37_79B9_7F4A_7C15
        mixed ^= mixed >> 29
        return UInt8(truncatingIfNeeded: mixed >> 24)
    }

    mutating func next(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        var remaining = count
        while remaining > 0 {
            let run = min(remaining, Self.period - offset)
            bytes += Self.pattern[offset..<offset + run]
            offset = (offset + run) % Self.period
            remaining -= run
        }
        return bytes
    }
}

/// A running count and CRC-32 of an upload's bytes.
struct UploadDigest {
    var count = 0
    var crc: UInt32 = 0

    mutating func add(_ bytes: ByteBufferView) {
        count += bytes.count
        crc = TestServer.crc32(bytes, continuing: crc)
    }
}

extension TestServer {
    /// The CRC-32 (as zlib and gzip compute it) of `bytes`, continuing from an earlier value.
    public static func crc32(_ bytes: some Collection<UInt8>, continuing previous: UInt32 = 0) -> UInt32 {
        // Contiguous bytes (Data, arrays, NIO buffers) are read in place; anything else is copied once.
        if let crc = bytes.withContiguousStorageIfAvailable({ crc32($0, continuing: previous) }) { return crc }
        return Array(bytes).withUnsafeBufferPointer { crc32($0, continuing: previous) }
    }

    private static func crc32(_ buffer: UnsafeBufferPointer<UInt8>, continuing previous: UInt32) -> UInt32 {
        UInt32(CCallsignZlib.crc32(uLong(previous), buffer.baseAddress, uInt(buffer.count)))
    }

    /// The bytes `/bytes/{count}` serves, for comparing in tests.
    public static func expectedBytes(count: Int, offset: Int = 0) -> Data {
        var generator = BodyGenerator(offset: UInt64(offset))
        return Data(generator.next(count))
    }
}

/// An error starting the test server.
public struct TestServerError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A server the testing helpers can stop.
protocol StoppableServer: Sendable {
    func stop() async
}

extension TestServer: StoppableServer {}
extension PostgresTestServer: StoppableServer {}

/// Runs `body` with a started server and stops the server whether `body` returns or throws.
func runThenStop<Server: StoppableServer, T>(_ server: Server, _ body: (Server) async throws -> T) async throws -> T {
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

extension TestServer {
    /// Returns once `count` body bytes in all have arrived on `/upload/…` routes (or the server
    /// stops): a test's body producer can wait for the server to have read the start of a body
    /// before producing the rest, which proves the client sends it as it is produced.
    ///
    /// ```swift
    /// continuation.yield(firstMegabyte)
    /// await server.waitForUploadedBytes(atLeast: firstMegabyte.count)
    /// continuation.yield(rest)
    /// ```
    public func waitForUploadedBytes(atLeast count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                guard state.uploaded < count, !state.stopped else { return true }
                state.uploadWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Bytes received so far on `/upload/…` routes.
    public var uploadedBytes: Int { state.withLock { $0.uploaded } }

    func noteUploaded(_ count: Int) {
        let ready = state.withLock { state in
            state.uploaded += count
            let total = state.uploaded
            let ready = state.uploadWaiters.filter { $0.count <= total }.map(\.continuation)
            state.uploadWaiters.removeAll { $0.count <= total }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    func releaseUploadWaiters() {
        let waiting = state.withLock { state in
            defer { state.uploadWaiters = [] }
            return state.uploadWaiters.map(\.continuation)
        }
        for continuation in waiting { continuation.resume() }
    }
}
