public import Foundation

/// A server's account of a failure in the RFC 9457 format (`application/problem+json`).
///
/// An answer with that media type, a status outside the accepted set and a JSON object as its
/// body is read into this value, and every ``APIError`` that carries such a response offers it as
/// ``APIError/problem``:
///
/// ```swift
/// do {
///     try await client.call("CreateUser", parameters: ["name": "ada"])
/// } catch let error as APIError {
///     if let problem = error.problem {
///         show(problem.title ?? "Failed", problem.detail ?? "")
///         let fields = problem.extensions["errors"]   // members of the API's own, as JSONValue
///     }
/// }
/// ```
///
/// The body is read through Callsign's bounded JSON reader (``Limits/maximumJSONDepth``) and only
/// up to ``maximumSize`` bytes. As RFC 9457 §3.1 asks, a member whose value has the wrong type is
/// ignored (a `title` that is a number reads as `nil`); members the RFC does not define are kept in
/// ``extensions``.
public struct ProblemDetails: Sendable, Hashable {
    /// The media type of a problem in JSON: `application/problem+json`.
    public static let mediaType = "application/problem+json"

    /// The largest body read as a problem: 1 MiB. A larger one is left alone (``APIError/problem``
    /// is `nil`); the error still has its status and response.
    public static let maximumSize = 1 << 20

    /// A URI reference naming the kind of problem. Default `"about:blank"`: nothing more than
    /// the status says.
    public var type: String
    /// A short summary of the kind of problem, the same for every occurrence of it.
    public var title: String?
    /// The HTTP status the server gave for this occurrence (100–599).
    public var status: Int?
    /// An explanation of this occurrence, for a person.
    public var detail: String?
    /// A URI reference naming this occurrence.
    public var instance: String?
    /// Every other member of the object, by name (an API's `errors`, `balance`, `traceId`, …).
    public var extensions: [String: JSONValue]

    /// Creates a problem; every member is optional.
    public init(
        type: String = "about:blank", title: String? = nil, status: Int? = nil, detail: String? = nil, instance: String? = nil,
        extensions: [String: JSONValue] = [:]
    ) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.instance = instance
        self.extensions = extensions
    }

    /// Reads a problem from a JSON text: `nil` unless it is a JSON object within `maximumDepth`
    /// levels and ``maximumSize`` bytes.
    ///
    /// ```swift
    /// let problem = ProblemDetails(parsing: Data(#"{"title": "Out of credit", "status": 403}"#.utf8))
    /// ```
    public init?(parsing data: Data, maximumDepth: Int = Limits.default.maximumJSONDepth) {
        guard data.count <= Self.maximumSize,
            let value = try? JSONValue(parsingText: data, maximumDepth: max(1, maximumDepth)),
            case .object(var members) = value
        else { return nil }
        // RFC 9457 §3.1: a member of the wrong type is ignored, as if it were absent.
        type = members.removeValue(forKey: "type")?.stringValue ?? "about:blank"
        title = members.removeValue(forKey: "title")?.stringValue
        detail = members.removeValue(forKey: "detail")?.stringValue
        instance = members.removeValue(forKey: "instance")?.stringValue
        if case .int(let code)? = members.removeValue(forKey: "status"), (100...599).contains(code) {
            status = code
        } else {
            status = nil
        }
        extensions = members
    }

    /// The title and detail in one line, each at most 300 characters: what an error message quotes.
    var summary: String? {
        let parts = [title, detail].compactMap { $0 }.map { text in
            text.count > 300 ? String(text.prefix(300)) + "…" : text
        }.filter { !$0.isEmpty }
        return parts.isEmpty ? nil : parts.joined(separator: ": ")
    }
}

extension Response {
    /// The body as RFC 9457 problem details, when the response says `application/problem+json`,
    /// its status is not a success (not 2xx) and its body is a JSON object (see ``ProblemDetails``).
    ///
    /// ```swift
    /// let response = try await client.post("users").body(["name": "ada"]).send()
    /// if let problem = response.problem { print(problem.title ?? "") }
    /// ```
    public var problem: ProblemDetails? {
        guard !(200...299).contains(self.status.code), self.mediaType == ProblemDetails.mediaType else { return nil }
        return ProblemDetails(parsing: self.body, maximumDepth: self.settings.maximumJSONDepth)
    }
}

extension APIError {
    /// The server's problem details (RFC 9457), when the response that failed the call is an
    /// `application/problem+json` answer with an error status — usually with
    /// ``Code/unacceptableStatus``. `nil` otherwise, and for a body that is not a JSON object,
    /// nests deeper than ``Limits/maximumJSONDepth`` or is larger than ``ProblemDetails/maximumSize``.
    ///
    /// ```swift
    /// catch let error as APIError where error.problem?.status == 422 {
    ///     show(error.problem?.detail ?? error.message)
    /// }
    /// ```
    public var problem: ProblemDetails? { self.response?.problem }
}
