import Foundation

/// The HTTP Archive 1.2 format as Callsign writes it: every member the specification requires,
/// so browsers' developer tools, Charles and Proxyman open the file.
///
/// Reading goes the other way and is more forgiving (``HARFile/ReadArchive``): an archive from
/// another tool leaves out what the specification makes optional, or adds its own `_` members,
/// and replay reads only the members it serves from.
struct HARFile: Encodable, Sendable {
    struct Log: Encodable, Sendable {
        var version = "1.2"
        var creator: Creator
        var entries: [Entry]
    }

    struct Creator: Encodable, Sendable {
        var name: String
        var version: String
    }

    struct Entry: Encodable, Sendable {
        var startedDateTime: String
        var time: Double
        var request: HARRequest
        var response: HARResponse
        var cache: Cache = Cache()
        var timings: Timings
        var serverIPAddress: String?
        var comment: String?
    }

    struct Cache: Encodable, Sendable {}

    struct NameValue: Codable, Sendable, Hashable {
        var name: String
        var value: String
    }

    struct HARRequest: Encodable, Sendable {
        var method: String
        var url: String
        var httpVersion = "HTTP/1.1"
        var cookies: [NameValue] = []
        var headers: [NameValue]
        var queryString: [NameValue]
        var postData: PostData?
        var headersSize = -1
        var bodySize: Int
    }

    struct PostData: Encodable, Sendable {
        var mimeType: String
        var text: String
        var comment: String?
    }

    struct HARResponse: Encodable, Sendable {
        var status: Int
        var statusText: String
        var httpVersion = "HTTP/1.1"
        var cookies: [NameValue] = []
        var headers: [NameValue]
        var content: Content
        var redirectURL: String
        var headersSize = -1
        var bodySize: Int
        var _error: String?
    }

    /// A response body: `size` is the length of the content `text` holds (after masking, before
    /// a cut), so that it always tells the truth about what a replay serves.
    struct Content: Encodable, Sendable {
        var size: Int
        var mimeType: String
        var text: String?
        var encoding: String?
        var comment: String?
    }

    struct Timings: Encodable, Sendable {
        var blocked = -1.0
        var dns = -1.0
        var connect = -1.0
        var send = 0.0
        var wait: Double
        var receive = 0.0
        var ssl = -1.0

        /// The entry's `time`: the sum of the phases that happened (`ssl` is inside `connect`).
        var total: Double { [blocked, dns, connect, send, wait, receive].filter { $0 >= 0 }.reduce(0, +) }
    }

    var log: Log
}

extension HARFile {
    /// What replay reads of an archive: `log.entries`, and of each entry only the members a
    /// replay is served from. Everything else — `creator`, `timings` (Playwright leaves out
    /// `blocked`), `cache`, `cookies`, `redirectURL` (`null` in some exports), `httpVersion`
    /// (`h2`), sizes of `-1`, `comment`, `_`-prefixed members — is not read, so it cannot make
    /// an entry unreadable. An entry that cannot be read is kept as the reason why, and the
    /// others still load.
    struct ReadArchive: Decodable {
        var log: ReadLog
    }

    struct ReadLog: Decodable {
        /// The entries that could be read, with their number (counted from 1), in the file's order.
        var entries: [(number: Int, entry: ReplayEntry)] = []
        /// Why entries could not be read, with their number: the first `listed` of them only, so
        /// that a file of a million broken entries costs a count, not a million sentences.
        var unreadable: [(number: Int, reason: String)] = []
        /// How many entries could not be read, listed or not.
        var unreadableCount = 0
        /// How many reasons ``unreadable`` keeps.
        static let listed = HARReplay.maximumSkippedEntriesListed

        private enum CodingKeys: String, CodingKey { case entries }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            var list = try container.nestedUnkeyedContainer(forKey: .entries)
            while !list.isAtEnd {
                let number = list.currentIndex + 1
                switch try list.decode(ReadEntry.self) {
                case .entry(let entry):
                    entries.append((number, entry))
                case .unreadable(let reason):
                    unreadableCount += 1
                    if unreadable.count < Self.listed { unreadable.append((number, reason)) }
                }
            }
        }
    }

    /// One entry, or why it cannot be read.
    enum ReadEntry: Decodable {
        case entry(ReplayEntry)
        case unreadable(String)

        init(from decoder: any Decoder) throws {
            do {
                self = .entry(try ReplayEntry(from: decoder))
            } catch let error as DecodingError {
                self = .unreadable(Self.describe(error, below: decoder.codingPath.count))
            }
        }

        /// What is wrong, with the path inside the entry (`.response.status`) rather than from the
        /// top of the file, whose array index counts from 0 where people count entries from 1.
        static func describe(_ error: DecodingError, below depth: Int) -> String {
            func inside(_ context: DecodingError.Context) -> DecodingError.Context {
                DecodingError.Context(
                    codingPath: Array(context.codingPath.dropFirst(depth)), debugDescription: context.debugDescription,
                    underlyingError: context.underlyingError)
            }
            let trimmed: DecodingError =
                switch error {
                case .keyNotFound(let key, let context): .keyNotFound(key, inside(context))
                case .typeMismatch(let type, let context): .typeMismatch(type, inside(context))
                case .valueNotFound(let type, let context): .valueNotFound(type, inside(context))
                case .dataCorrupted(let context): .dataCorrupted(inside(context))
                @unknown default: error
                }
            return Callsign.Response.describe(trimmed)
        }
    }

    /// The members of an entry replay uses; those HAR 1.2 makes optional (`postData`,
    /// `content.text`, `content.encoding`), or whose `params` may stand in for `text`, are optional.
    struct ReplayEntry: Decodable {
        struct Request: Decodable {
            var method: String
            var url: String
            var postData: PostData?
        }

        struct PostData: Decodable {
            /// Absent when the tool wrote `params` instead (a form): the text is then not matched.
            var text: String?
        }

        struct Response: Decodable {
            var status: Int
            var headers: [NameValue]?
            var content: Content?
        }

        struct Content: Decodable {
            /// A number; a tool that writes a fraction or `-1` only means "unknown" by it.
            var size: Double?
            var text: String?
            var encoding: String?
        }

        var request: Request
        var response: Response
    }
}
