/// Whether a request is kept for later when the server cannot be reached (Malibu's store policy).
///
/// ```swift
/// var request = Request.post("boards", parameters: ["title": "Balsa Fish"])
/// request.storePolicy = .offline
/// do {
///     try await client.send(request)
/// } catch {
///     guard error.code == .queuedOffline else { throw error }   // not `catch where`: it crashes Swift 6.3 in async code
///     print("queued as #\(error.queuedRequestID ?? 0); sent by client.replay()")
/// }
/// ```
///
/// In a definitions file: `storePolicy: offline`.
public struct StorePolicy: Hashable, Sendable, CustomStringConvertible {
    private enum Base: String, Sendable, CaseIterable {
        case none, offline
    }

    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// Never queued: a failure is a failure. The default.
    public static let none = StorePolicy(.none)
    /// Queued in the client's ``APIClient/Configuration/Offline/queue`` when the server cannot be
    /// reached (connect failure, no route, DNS failure, timeout before any response byte); the
    /// caller gets ``APIError/Code/queuedOffline`` with the queue id.
    public static let offline = StorePolicy(.offline)

    /// Reads a policy's name as written in a definitions file.
    init?(name: String) {
        guard let base = Base(rawValue: name) else { return nil }
        self.init(base)
    }

    /// The names a definitions file accepts.
    static let names = Base.allCases.map(\.rawValue)

    public var description: String { base.rawValue }
}
