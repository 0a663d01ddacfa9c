import CCallsignZlib
import Callsign
import Foundation

/// gzip and deflate for the test server's compressed routes.
enum Compression {
    enum Format {
        case gzip, zlib, raw
        var windowBits: Int32 {
            switch self {
            case .gzip: 15 + 16
            case .zlib: 15
            case .raw: -15
            }
        }
    }

    /// `data` compressed in one go; `nil` only if zlib itself fails.
    static func compress(_ data: Data, format: Format) -> Data? {
        var stream = z_stream()
        guard deflateInit2_(&stream, 9, Z_DEFLATED, format.windowBits, 9, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else { return nil }
        defer { deflateEnd(&stream) }
        var output = Data()
        var input = data
        var status: Int32 = Z_OK
        input.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
            stream.next_in = raw.bindMemory(to: Bytef.self).baseAddress
            stream.avail_in = uInt(raw.count)
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            repeat {
                let written = buffer.withUnsafeMutableBufferPointer { out -> Int in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    status = deflate(&stream, Z_FINISH)
                    return out.count - Int(stream.avail_out)
                }
                output.append(contentsOf: buffer[0..<written])
            } while status == Z_OK
        }
        return status == Z_STREAM_END ? output : nil
    }

    /// 64 MiB of zeros, gzipped (about 64 KiB): a decompression bomb, built once.
    static let bomb: Data = compress(Data(count: 64 << 20), format: .gzip) ?? Data()

    /// A JSON document that compresses well, for the normal routes.
    static func sample(_ request: ServerRequest) -> Data {
        let items = (1...200).map { ["id": JSONValue.int($0), "title": .string("Item \($0) of the compressed sample")] }
        return JSONValue.object(["path": .string(request.rawPath), "items": .array(items.map(JSONValue.object))]).jsonData()
    }

    /// `/gzip`, `/deflate` and `/compressed/{raw-deflate|stacked|bomb|truncated|corrupt|too-many}`.
    static func respond(to request: ServerRequest, segments: [String]) -> ServerResponse {
        let json = sample(request)
        func encoded(_ body: Data?, _ encoding: String) -> ServerResponse {
            ServerResponse(
                status: 200, headers: [("Content-Type", "application/json"), ("Content-Encoding", encoding)], body: .data(body ?? Data()))
        }
        switch segments.first {
        case "gzip": return encoded(compress(json, format: .gzip), "gzip")
        case "deflate": return encoded(compress(json, format: .zlib), "deflate")
        default: break
        }
        switch segments.count > 1 ? segments[1] : "" {
        case "raw-deflate":
            return encoded(compress(json, format: .raw), "deflate")
        case "stacked":
            return encoded(compress(json, format: .gzip).flatMap { compress($0, format: .gzip) }, "gzip, gzip")
        case "too-many":
            let thrice = compress(json, format: .gzip).flatMap { compress($0, format: .gzip) }.flatMap { compress($0, format: .gzip) }
            return encoded(thrice, "gzip, gzip, gzip")
        case "bomb":
            return encoded(bomb, "gzip")
        case "truncated":
            let whole = compress(json, format: .gzip) ?? Data()
            return encoded(whole.prefix(whole.count / 2), "gzip")
        case "corrupt":
            var whole = compress(json, format: .gzip) ?? Data()
            if whole.count > 40 { for index in 20..<40 { whole[index] ^= 0x5A } }
            return encoded(whole, "gzip")
        default:
            return .json(["error": "name a /compressed route: raw-deflate, stacked, too-many, bomb, truncated, corrupt"], status: 404)
        }
    }
}
