import Foundation

/// The HTTP Archive 1.2 format (the subset Callsign writes and reads), as browsers' developer
/// tools, Charles and Proxyman open it.
struct HARFile: Codable, Sendable {
    struct Log: Codable, Sendable {
        var version = "1.2"
        var creator: Creator
        var entries: [Entry]
    }

    struct Creator: Codable, Sendable {
        var name: String
        var version: String
    }

    struct Entry: Codable, Sendable {
        var startedDateTime: String
        var time: Double
        var request: HARRequest
        var response: HARResponse
        var cache: Cache = Cache()
        var timings: Timings
        var comment: String?
    }

    struct Cache: Codable, Sendable {}

    struct NameValue: Codable, Sendable, Hashable {
        var name: String
        var value: String
    }

    struct HARRequest: Codable, Sendable {
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

    struct PostData: Codable, Sendable {
        var mimeType: String
        var text: String
        var comment: String?
    }

    struct HARResponse: Codable, Sendable {
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

    struct Content: Codable, Sendable {
        var size: Int
        var mimeType: String
        var text: String?
        var encoding: String?
        var comment: String?
    }

    struct Timings: Codable, Sendable {
        var blocked = -1.0
        var dns = -1.0
        var connect = -1.0
        var send = 0.0
        var wait: Double
        var receive = 0.0
        var ssl = -1.0
    }

    var log: Log
}
