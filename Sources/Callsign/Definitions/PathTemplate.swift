import Foundation

/// A path with `{name}` placeholders, such as `user/{user_id}/profile`.
///
/// Each value fills exactly one path segment: only RFC 3986 unreserved characters pass
/// unencoded, so `/`, `?`, `#`, `%`, spaces, CR and LF are percent-encoded and can never add a
/// segment, a query or a fragment. A value that is `.` or `..` (also after percent-decoding)
/// is refused, so a value can never climb out of the base path.
struct PathTemplate: Sendable {
    enum Piece: Sendable, Equatable {
        case literal(String)
        case placeholder(String)
    }

    let pieces: [Piece]

    var placeholders: [String] {
        pieces.compactMap { if case .placeholder(let name) = $0 { name } else { nil } }
    }

    /// Parses a template; an unbalanced or empty brace is an error message.
    init(parsing text: String) throws(TemplateError) {
        var pieces: [Piece] = []
        var literal = ""
        var name: String?
        for character in text {
            if var current = name {
                if character == "}" {
                    let trimmed = current.trimmingCharacters(in: .whitespaces)
                    guard !trimmed.isEmpty else { throw TemplateError(localized: "an empty placeholder \"{}\"") }
                    pieces.append(.placeholder(trimmed))
                    name = nil
                } else if character == "{" {
                    throw TemplateError(localized: "a \"{\" inside the placeholder \"{\(current)\"")
                } else {
                    current.append(character)
                    name = current
                }
            } else if character == "{" {
                if !literal.isEmpty { pieces.append(.literal(literal)) }
                literal = ""
                name = ""
            } else if character == "}" {
                throw TemplateError(localized: "a \"}\" with no matching \"{\"")
            } else {
                literal.append(character)
            }
        }
        if let name { throw TemplateError(localized: "the placeholder \"{\(name)\" is never closed") }
        if !literal.isEmpty { pieces.append(.literal(literal)) }
        self.pieces = pieces
    }

    struct TemplateError: Error {
        let reason: LocalizedMessage
        init(localized reason: LocalizedMessage) { self.reason = reason }
    }

    /// Fills the placeholders, removing each used value from `parameters` (then `query`).
    func expand(consuming parameters: inout Parameters, query: inout Parameters) throws(APIError) -> String {
        var result = ""
        for (index, piece) in pieces.enumerated() {
            switch piece {
            case .literal(let text):
                result += Self.encodeLiteral(text, atStart: index == 0)
            case .placeholder(let name):
                let value: JSONValue
                if let found = parameters.removeValue(forKey: name) {
                    value = found
                } else if let found = query.removeValue(forKey: name) {
                    value = found
                } else {
                    throw APIError(
                        .invalidRequest, localized: "the path parameter \"\(name)\" is missing: pass it in the call's parameters")
                }
                result += try Self.encodeSegment(value, name: name)
            }
        }
        return result
    }

    static func encodeSegment(_ value: JSONValue, name: String) throws(APIError) -> String {
        guard let text = value.scalarText, !value.isNull else {
            throw APIError(
                .invalidRequest, localized: "the path parameter \"\(name)\" is \(value.kindName); it must be a string or a number")
        }
        guard !text.isEmpty else {
            throw APIError(.invalidRequest, localized: "the path parameter \"\(name)\" is empty")
        }
        let decoded = text.removingPercentEncoding ?? text
        if text == "." || text == ".." || decoded == "." || decoded == ".." {
            throw APIError(
                .invalidRequest, localized: "the path parameter \"\(name)\" is \"\(text)\", which would climb out of the path")
        }
        return QueryEncoder.percentEncode(text)
    }

    /// Encodes the literal parts of a path written by the developer: characters allowed in a
    /// path (RFC 3986 `pchar`, `/` and `?`) and valid `%XX` escapes pass, anything else is
    /// percent-encoded.
    ///
    /// When `atStart` and the text is an absolute URL, its scheme and authority are left as they
    /// are: a host is not a path, and the host door (``HostName``) makes it ASCII (IDNA for a
    /// name, brackets kept for an IPv6 literal) when the URL is resolved.
    static func encodeLiteral(_ text: String, atStart: Bool = false) -> String {
        let encode = { (part: Substring) in
            PercentEncoding.encode(String(part), keepsEscapes: true) { QueryEncoder.isUnreserved($0) || isLiteralAllowed($0) }
        }
        guard atStart, APIDefinition.hasScheme(text), let separator = text.range(of: "://") else { return encode(text[...]) }
        let authorityEnd = text[separator.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? text.endIndex
        return String(text[..<authorityEnd]) + encode(text[authorityEnd...])
    }

    /// The sub-delimiters and `:@/?`, which a path may hold as they are.
    private static func isLiteralAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="), UInt8(ascii: ":"),
            UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: "?"):
            true
        default:
            false
        }
    }
}

extension UInt8 {
    var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}

