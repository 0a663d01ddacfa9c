package import HTTPTypes

/// The one door through which header fields from outside Callsign's own code become
/// `HTTPFields`: request headers (definitions files, OpenAPI parameters, the command line, code),
/// responses replayed from a HAR file or a mock, and header lists read back from a stored queue
/// or cache row.
///
/// `HTTPFields` traps at 65,535 fields, and building one field at a time from a list that
/// grows with the input is how a small file used to crash a replay. Every source counts and
/// measures here first, against ``Limits/maximumHeaderFieldCount`` and the head-size limit of its
/// direction, and gets an ``APIError`` past either.
package struct FieldReader: Sendable {
    /// What a name that is not an RFC 9110 token, or a value with a control character, does.
    package enum InvalidField: Sendable {
        /// Fails the whole list: a request never sends what its author did not write.
        case refuse
        /// Leaves the field out: a replayed or stored response keeps what is usable.
        case drop
    }

    /// Which limit on head size applies.
    package enum Direction: Sendable {
        case request, response
    }

    let maximumCount: Int
    let maximumBytes: Int
    let direction: Direction
    let code: APIError.Code

    /// - Parameters:
    ///   - limits: the bounds: ``Limits/maximumHeaderFieldCount`` and
    ///     ``Limits/maximumRequestHeadSize`` or ``Limits/maximumResponseHeadSize``.
    ///   - direction: whether the fields head a request or a response.
    ///   - code: the error code past a bound (the caller's kind of input: `invalidRequest` for a
    ///     request, `invalidDefinition` for a file, `storage` for a stored row…).
    package init(limits: Limits = .default, direction: Direction, code: APIError.Code) {
        maximumCount = max(0, min(limits.maximumHeaderFieldCount, Self.ceiling))
        maximumBytes = max(0, direction == .request ? limits.maximumRequestHeadSize : limits.maximumResponseHeadSize)
        self.direction = direction
        self.code = code
    }

    /// The most fields any list may hold whatever the limits say: `HTTPFields` keeps its
    /// indices in 16 bits and traps when a list reaches 65,535.
    package static let ceiling = 65_534

    /// Builds fields from name and value pairs in order, checking the count and size limits
    /// before each field is added.
    ///
    /// - Parameter source: what the fields come from, for the message ("the HAR file").
    package func fields(
        _ pairs: some Sequence<(name: String, value: String)>, source: LocalizedMessage, invalid: InvalidField
    ) throws(APIError) -> HTTPFields {
        var result = HTTPFields()
        var count = 0
        var bytes = 0
        for (name, value) in pairs {
            count += 1
            guard count <= maximumCount else {
                throw APIError(
                    code,
                    localized: "\(source) has more than \(maximumCount) header fields (Limits.maximumHeaderFieldCount)")
            }
            // Sizes of two strings in memory cannot overflow an Int; the sum stops at the bound.
            bytes += name.utf8.count + value.utf8.count
            guard bytes <= maximumBytes else {
                let limit = direction == .request ? "Limits.maximumRequestHeadSize" : "Limits.maximumResponseHeadSize"
                throw APIError(code, localized: "\(source) has more than \(maximumBytes) bytes of header fields (\(limit))")
            }
            guard let fieldName = HTTPField.Name(name) else {
                if invalid == .drop { continue }
                throw APIError(code, localized: "the header name \"\(name.escapedForMessage)\" is not a valid HTTP token")
            }
            guard HTTPField.isValidValue(value) else {
                if invalid == .drop { continue }
                throw APIError(
                    code,
                    localized: "the value of header \"\(name)\" contains CR, LF, NUL or another control character")
            }
            if result.isEmpty { result.reserveCapacity(Swift.min(maximumCount, pairs.underestimatedCount)) }
            result.append(HTTPField(name: fieldName, value: value))
        }
        return result
    }
}
