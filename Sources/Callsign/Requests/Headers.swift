public import HTTPTypes

/// An ordered list of request header fields with case-insensitive look-up.
///
/// Unlike `HTTPFields`, which quietly turns CR, LF and NUL into spaces, `Headers` keeps exactly
/// what you wrote; Callsign checks every name and value before anything is sent and refuses a
/// request with a forbidden character with an ``APIError`` (``APIError/Code/invalidRequest``)
/// instead of sending something you did not write.
///
/// ```swift
/// var headers: Headers = ["Accept": "application/json"]
/// headers["X-Trace"] = "abc"            // replaces every field of that name
/// headers.add("Cookie", "a=1")          // adds one more field
/// ```
public struct Headers: Sendable, Hashable {
    /// One header field as written.
    public struct Field: Sendable, Hashable {
        /// The field name as written; compared case-insensitively.
        public var name: String
        /// The field value as written.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields in order.
    public private(set) var fields: [Field] = []

    /// Creates an empty list.
    public init() {}

    /// Creates a list from fields in order.
    public init(_ fields: [Field]) { self.fields = fields }

    /// The value of the first field with this name, or `nil`; setting replaces every field
    /// of that name (setting `nil` removes them).
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveEquals(name) }?.value }
        set {
            if let index = fields.firstIndex(where: { $0.name.caseInsensitiveEquals(name) }), let newValue {
                fields[index].value = newValue
                var seen = false
                fields.removeAll { field in
                    guard field.name.caseInsensitiveEquals(name) else { return false }
                    defer { seen = true }
                    return seen
                }
            } else {
                fields.removeAll { $0.name.caseInsensitiveEquals(name) }
                if let newValue { fields.append(Field(name: name, value: newValue)) }
            }
        }
    }

    /// Every value of fields with this name, in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// Appends a field, keeping any earlier fields of the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Removes every field with this name.
    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    /// Whether a field with this name is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.caseInsensitiveEquals(name) }
    }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// These headers with every name of `other` replaced by `other`'s fields (per name, so
    /// `other` wins where both have a field).
    public func merging(_ other: Headers) -> Headers {
        guard !other.isEmpty else { return self }
        guard !isEmpty else { return other }
        var result = self
        for name in other.uniqueNames { result.remove(name) }
        result.fields.append(contentsOf: other.fields)
        return result
    }

    private var uniqueNames: [String] {
        var seen: Set<String> = []
        return fields.compactMap { seen.insert($0.name.lowercased()).inserted ? $0.name : nil }
    }

    /// Converts to `HTTPFields` through the one field door (``FieldReader``), refusing any name
    /// that is not an RFC 9110 token, any value with CR, LF, NUL or another control character, and
    /// more fields or bytes than `limits` allow.
    package func httpFields(limits: Limits = .default) throws(APIError) -> HTTPFields {
        try FieldReader(limits: limits, direction: .request, code: .invalidRequest)
            .fields(fields.lazy.map { (name: $0.name, value: $0.value) }, source: "the request" as LocalizedMessage, invalid: .refuse)
    }
}

extension Headers: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }
}

extension Headers: Sequence {
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
}

extension Headers {
    /// Creates headers from a `[String: String]` dictionary (order by name, for determinism).
    public init(_ dictionary: [String: String]) {
        fields = dictionary.sorted { $0.key < $1.key }.map { Field(name: $0.key, value: $0.value) }
    }

    /// Creates headers from `HTTPFields`.
    public init(_ httpFields: HTTPFields) {
        fields = httpFields.map { Field(name: $0.name.rawName, value: $0.value) }
    }
}

extension String {
    /// Whether the two are equal ignoring case. Header names are ASCII tokens: their bytes are
    /// compared with A–Z folded, allocating nothing; a pair that differs past ASCII is compared
    /// lowercased, as before.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        var mine = self
        var theirs = other
        // Native strings are contiguous UTF-8: compared in place, byte by byte.
        let verdict = mine.withUTF8 { mine in theirs.withUTF8 { theirs in Self.foldedEqual(mine, theirs) } }
        return verdict ?? (lowercased() == other.lowercased())
    }

    /// Whether two byte runs of one length are equal with A–Z folded; `nil` when a pair that
    /// differs is past ASCII, for a Unicode comparison. Header names and media types compare so.
    static func foldedEqual(_ mine: UnsafeBufferPointer<UInt8>, _ theirs: UnsafeBufferPointer<UInt8>) -> Bool? {
        for index in 0..<mine.count where mine[index] != theirs[index] {
            let (a, b) = (mine[index], theirs[index])
            if a | b >= 0x80 { return nil }
            let folded = a | 0x20
            guard folded == b | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else { return false }
        }
        return true
    }

    /// The string with control characters shown as escapes, for error messages.
    var escapedForMessage: String {
        replacingScalars { scalar in
            switch scalar {
            case "\r": "\\r"
            case "\n": "\\n"
            case "\0": "\\0"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: "\\u{\(String(scalar.value, radix: 16))}"
            default: nil
            }
        }
    }

    /// The string with each Unicode scalar for which `replacement` gives a text replaced by it,
    /// the others kept as they are.
    ///
    /// ```swift
    /// "a\"b".replacingScalars { $0 == "\"" ? "%22" : nil }   // a%22b
    /// ```
    func replacingScalars(_ replacement: (Unicode.Scalar) -> String?) -> String {
        var result = ""
        for scalar in unicodeScalars {
            if let text = replacement(scalar) {
                result += text
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
