import Foundation

/// Which type a failed call's body decodes into, by status: a definition's `errorClass`, the
/// error-side twin of its `Response Class`.
///
/// The names are looked up in the same registry as response classes
/// (``APIClient/Configuration/Responses/classes``), so `catch` receives the server's
/// error as a decoded value through ``APIError/serverError``. Where several entries hold a
/// status, the narrowest wins (`422` before `4xx` before every status). The name
/// `ProblemDetails` needs no registration: it is ``ProblemDetails``.
///
/// ```swift
/// configuration.responses.classes.register(ValidationFailure.self)
/// configuration.responses.classes.register(ServerFault.self)
/// let definition = APIDefinition(path: "users", method: .post, errorClasses: ErrorClasses([
///     .init(statuses: [422], className: "ValidationFailure"),
///     .init(statuses: StatusCodes(ranges: [500...599]), className: "ServerFault"),
/// ]))
/// ```
///
/// In a definitions file, one name for every failing status or one per status or range:
///
/// ```yaml
/// CreateUser:
///   path: users
///   errorClass: {"422": ValidationFailure, "5xx": ServerFault, "default": ProblemDetails}
/// ```
public struct ErrorClasses: Sendable, Hashable {
    /// One type name for a set of statuses.
    public struct Entry: Sendable, Hashable {
        /// The statuses this entry holds.
        public var statuses: StatusCodes
        /// The registered name of the type (``ResponseClasses``).
        public var className: String

        /// Creates an entry.
        public init(statuses: StatusCodes, className: String) {
            self.statuses = statuses
            self.className = className
        }
    }

    /// The entries, in the order given.
    public var entries: [Entry]

    /// Creates a table from entries.
    public init(_ entries: [Entry]) { self.entries = entries }

    /// One type for every status: `ErrorClasses.all("ProblemDetails")`.
    public static func all(_ className: String) -> ErrorClasses {
        ErrorClasses([Entry(statuses: StatusCodes(ranges: [100...599]), className: className)])
    }

    /// The name for `status`: of the narrowest entry that holds it, the first given on a tie.
    public func className(for status: Int) -> String? {
        var best: (width: Int, name: String)?
        for entry in entries {
            for range in entry.statuses.ranges where range.contains(status) {
                let width = range.upperBound - range.lowerBound
                if best.map({ width < $0.width }) ?? true { best = (width, entry.className) }
            }
        }
        return best?.name
    }

    /// Every name, sorted, without repeats.
    var names: [String] { Set(entries.map(\.className)).sorted() }
}

extension Response {
    /// Decodes the body as `T` whatever the status — an error body — through the same bounds as
    /// ``decode(_:decoder:)`` (the JSON depth limit, the property-list door), without its status
    /// check or envelope.
    func decodeErrorBody<T: Decodable>(_ type: T.Type) throws(APIError) -> T {
        try decodeJSON(T.self, from: jsonBody(), decoder: self.settings.decoder)
    }
}

extension APIError {
    /// The server's error body decoded into the type the request's ``ErrorClasses`` names for the
    /// status (registered in ``APIClient/Configuration/Responses/classes``; the name
    /// `ProblemDetails` is ``problem``). `nil` when no response failed the call, its status is a
    /// success, no type is named for it, or the body does not decode as that type.
    ///
    /// ```swift
    /// catch let error as APIError {
    ///     if let failure = error.serverError as? ValidationFailure { show(failure.fields) }
    /// }
    /// ```
    public var serverError: (any Sendable)? {
        guard let response = self.response, !(200...299).contains(response.status.code),
            let className = response.request.errorClasses?.className(for: response.status.code)
        else { return nil }
        if let decode = response.settings.classes.errorDecoder(for: className) { return try? decode(response) }
        return className == "ProblemDetails" ? response.problem : nil
    }

    /// The server's error body decoded as `T`, named where you catch: `nil` when no response with
    /// an error status failed the call or its body does not decode as `T`. Bounded like
    /// ``Response/decode(_:decoder:)``.
    ///
    /// ```swift
    /// catch let error as APIError {
    ///     if let failure = error.serverError(as: ValidationFailure.self) { show(failure.fields) }
    /// }
    /// ```
    public func serverError<T: Decodable>(as type: T.Type) -> T? {
        guard let response = self.response, !(200...299).contains(response.status.code) else { return nil }
        return try? response.decodeErrorBody(T.self)
    }
}
