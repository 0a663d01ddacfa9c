public import Foundation

/// The bytes of a request body, as a transport sends them.
///
/// Today a body is in-memory data; the type is a struct around a private storage so that
/// file-backed and streamed bodies can be added without changing its users.
///
/// ```swift
/// let body = HTTPBody.data(Data("hello".utf8))
/// ```
public struct HTTPBody: Sendable, Hashable {
    private enum Storage: Sendable, Hashable {
        case data(Data)
    }

    private let storage: Storage

    /// A body from bytes in memory.
    public static func data(_ data: Data) -> HTTPBody { HTTPBody(storage: .data(data)) }

    /// The length in bytes, when known in advance.
    public var count: Int? {
        switch storage {
        case .data(let data): data.count
        }
    }

    /// Whether the body can be sent more than once (for a retry or a redirect).
    public var isReplayable: Bool { true }

    /// The whole body in memory.
    public func collect() -> Data {
        switch storage {
        case .data(let data): data
        }
    }
}
