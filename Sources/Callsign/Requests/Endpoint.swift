public import Foundation

/// A type whose values describe requests — usually an enum with a case per call (Malibu's
/// `RequestConvertible`, APE's `Endpoint`).
///
/// ```swift
/// enum Boards: Endpoint {
///     case list
///     case show(id: Int)
///     case create(title: String)
///
///     static let baseURL = URL(string: "https://sharkywaters.com/api/")
///     static let headers: Headers = ["Accept": "application/json"]
///
///     var request: Request {
///         switch self {
///         case .list: .get("boards")
///         case .show(let id): .get("boards/{id}", parameters: ["id": .int(id)])
///         case .create(let title): .post("boards", parameters: ["title": .string(title)])
///         }
///     }
///
///     var acceptedStatusCodes: StatusCodes? {
///         if case .create = self { [201] } else { nil }
///     }
/// }
/// let board = try await client.send(Boards.show(id: 7)).validate().decode(Board.self)
/// ```
public protocol Endpoint: Sendable {
    /// The base URL for every case's relative path. Default `nil` (the client's).
    static var baseURL: URL? { get }
    /// Headers for every case; a case's own headers win per name. Default none.
    static var headers: Headers { get }
    /// The request for this value.
    var request: Request { get }
    /// The statuses ``Response/validate()`` accepts for this value. Default `nil` (the request's,
    /// else the client's).
    var acceptedStatusCodes: StatusCodes? { get }
}

extension Endpoint {
    public static var baseURL: URL? { nil }
    public static var headers: Headers { [:] }
    public var acceptedStatusCodes: StatusCodes? { nil }
}
