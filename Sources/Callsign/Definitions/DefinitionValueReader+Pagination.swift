import Foundation

extension ValueReader {
    /// The keys a `pagination` dictionary may hold, and the styles each applies to.
    private static let paginationKeys: [(key: String, styles: Set<String>)] = [
        ("style", ["link", "nextURL", "cursor", "page", "offset"]),
        ("field", ["nextURL", "cursor"]),
        ("parameter", ["cursor", "page", "offset"]),
        ("start", ["page"]),
        ("items", ["link", "nextURL", "cursor", "page", "offset"]),
        ("limitParameter", ["page", "offset"]),
        ("limit", ["page", "offset"]),
        ("maximumPages", ["link", "nextURL", "cursor", "page", "offset"]),
        ("followsOtherOrigins", ["link", "nextURL"]),
        ("inQuery", ["cursor", "page", "offset"]),
    ]

    /// `pagination: link` (or `page`, `offset` with their defaults), or a dictionary:
    ///
    /// ```yaml
    /// pagination:
    ///   style: cursor            # link, nextURL, cursor, page or offset
    ///   field: meta.next_cursor  # nextURL and cursor: where the body holds it
    ///   parameter: cursor        # cursor (required), page (default page), offset (default offset)
    ///   start: 1                 # page: the first page's number
    ///   items: data              # where a page's items are
    ///   limitParameter: limit    # page and offset: fewer items than this is the last page
    ///   limit: 50                # page and offset: the page size sent when the call sets none
    ///   maximumPages: 20         # 1-10000 (default 100)
    ///   followsOtherOrigins: false
    ///   inQuery: false           # the walk's parameters go into the query whatever the method
    /// ```
    func pagination() throws(APIError) -> Pagination {
        let members: [String: JSONValue]
        switch value {
        case .string(let style): members = ["style": .string(style)]
        case .object(let object): members = object
        default: throw error("must be a style (link, page, offset) or a dictionary, not \(value.kindName)")
        }
        let known = Self.paginationKeys.map(\.key)
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
            let near = NearMatch.suggestions(for: unknown, among: known, limit: 1).first
            throw error(
                near.map { "has the unknown key \"\(unknown.escapedForMessage)\"; did you mean \"\($0)\"?" as LocalizedMessage }
                    ?? "has the unknown key \"\(unknown.escapedForMessage)\"; use \(known.joined(separator: ", "))" as LocalizedMessage)
        }
        let styles = ["link", "nextURL", "cursor", "page", "offset"]
        guard let style = members["style"]?.stringValue, styles.contains(style) else {
            throw error("needs a style: link, nextURL, cursor, page or offset")
        }
        for (key, applies) in Self.paginationKeys where members[key] != nil && !applies.contains(style) {
            throw error("\(key) has no meaning for the style \(style)")
        }
        func nested(_ key: String) -> ValueReader? {
            members[key].map { ValueReader(api: api, key: "\(self.key).\(key)", line: line, value: $0) }
        }
        var pagination: Pagination
        switch style {
        case "link":
            pagination = .link
        case "nextURL":
            guard let field = try nested("field")?.fieldPath() else { throw error("the nextURL style needs a field: where the body holds the next page's URL") }
            pagination = .nextURL(at: field)
        case "cursor":
            guard let field = try nested("field")?.fieldPath() else { throw error("the cursor style needs a field: where the body holds the next cursor") }
            guard let parameter = try nested("parameter")?.parameterName() else { throw error("the cursor style needs a parameter: the name the cursor is sent as") }
            pagination = .cursor(at: field, parameter: parameter)
        case "page":
            let start = try nested("start")?.wholeNumber(in: 0...1_000_000) ?? 1
            pagination = .page(parameter: try nested("parameter")?.parameterName() ?? "page", startingAt: start, limitParameter: nil)
        default:
            pagination = .offset(parameter: try nested("parameter")?.parameterName() ?? "offset", limitParameter: nil)
        }
        pagination.itemsField = try nested("items")?.fieldPath()
        pagination.limitParameter = try nested("limitParameter")?.parameterName()
        pagination.pageSize = try nested("limit")?.wholeNumber(in: 1...1_000_000)
        if pagination.pageSize != nil, pagination.limitParameter == nil {
            throw error("limit needs a limitParameter: the name the page size is sent as")
        }
        if let pages = try nested("maximumPages")?.wholeNumber(in: 1...10_000) { pagination.maximumPages = pages }
        if let follows = try nested("followsOtherOrigins")?.bool() { pagination.followsOtherOrigins = follows }
        if let inQuery = try nested("inQuery")?.bool() { pagination.parametersInQuery = inQuery }
        return pagination
    }

    /// A dotted path into a body (`meta.next_cursor`; a JSONPath's `$.` is allowed): at most
    /// 16 keys of plain text.
    private func fieldPath() throws(APIError) -> String {
        var text = try string()
        if text.hasPrefix("$.") { text.removeFirst(2) }
        let keys = text.split(separator: ".", omittingEmptySubsequences: false)
        guard !text.isEmpty, text.utf8.count <= 256, keys.count <= 16, keys.allSatisfy({ !$0.isEmpty }),
            !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || "[]*".unicodeScalars.contains($0) })
        else {
            throw error("must be a dotted path of names such as meta.next_cursor (at most 16 names, 256 bytes)")
        }
        return text
    }

    /// A parameter's name: 1-128 bytes without control characters.
    private func parameterName() throws(APIError) -> String {
        let text = try string()
        guard !text.isEmpty, text.utf8.count <= 128, !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw error("must be a parameter name (1-128 bytes, no control characters)")
        }
        return text
    }

    private func wholeNumber(in range: ClosedRange<Int>) throws(APIError) -> Int {
        guard let number = value.intValue, range.contains(number) else {
            throw error("must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}
