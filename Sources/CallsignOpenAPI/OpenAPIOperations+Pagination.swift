import Callsign
import Foundation
import OpenAPIKit

/// How an operation's pages are walked, as its document says: Speakeasy's
/// `x-speakeasy-pagination` extension when it has one, else — for a GET, and only when it reads
/// one way — its parameters and answers (a `cursor`, `page_token` or `pageToken` query parameter
/// with the answer's field of the same role, a `page` or an `offset` and `limit` with the one list
/// the answer holds, a documented `Link` header). Never a guess: a declaration Callsign cannot
/// follow, or a document that reads two ways, gets no pagination and a warning.
extension OpenAPIOperations {
    /// What the document says of an operation's pages.
    struct PaginationReading {
        var pagination: Pagination?
        var warning: LocalizedMessage?
    }

    static func pagination(of operation: Operation, written: [String: JSONValue]?, endpoint: OpenAPIKit.ResolvedEndpoint) -> PaginationReading {
        let place = "\(operation.method) \(operation.path)"
        if let declared = written?["x-speakeasy-pagination"] {
            do throws(PaginationRefusal) {
                return PaginationReading(pagination: try speakeasy(declared, operation: operation))
            } catch {
                return PaginationReading(
                    warning: "\(place): its x-speakeasy-pagination is not followed (\(error.reason)); pass a Pagination to pages(…) yourself" as LocalizedMessage)
            }
        }
        guard operation.method == "GET", operation.eventStream == nil else { return PaginationReading() }
        return heuristic(operation, endpoint: endpoint, place: place)
    }

    /// Why a declaration is not followed, for the warning.
    struct PaginationRefusal: Error {
        let reason: LocalizedMessage

        init(localized reason: LocalizedMessage) {
            self.reason = reason
        }
    }

    // MARK: - x-speakeasy-pagination

    /// Speakeasy's declaration: `type` `offsetLimit` (a `page` or `offset` input, an optional
    /// `limit`, `outputs.results`), `cursor` (a `cursor` input, `outputs.nextCursor`) or `url`
    /// (`outputs.nextUrl`); inputs `in` the operation's query `parameters` or its `requestBody`.
    static func speakeasy(_ declared: JSONValue, operation: Operation) throws(PaginationRefusal) -> Pagination {
        guard case .object(let members) = declared else { throw PaginationRefusal(localized: "it is not a map") }
        guard case .string(let type)? = members["type"] else { throw PaginationRefusal(localized: "it has no type") }
        let outputs = members["outputs"]?.objectValue ?? [:]
        var inputs: [String: (name: String, inQuery: Bool)] = [:]
        guard members["inputs"] == nil || members["inputs"]?.arrayValue != nil else { throw PaginationRefusal(localized: "its inputs are not a list") }
        for input in (members["inputs"]?.arrayValue ?? []).prefix(16) {
            guard case .string(let name)? = input["name"], !name.isEmpty, name.utf8.count <= 128, case .string(let role)? = input["type"],
                ["page", "offset", "limit", "cursor"].contains(role)
            else {
                throw PaginationRefusal(localized: "an input is not a name with a type page, offset, limit or cursor")
            }
            guard inputs[role] == nil else { throw PaginationRefusal(localized: "it has two \(role) inputs") }
            switch input["in"]?.stringValue {
            case "requestBody"?:
                inputs[role] = (name, false)
            case "parameters"?:
                guard let parameter = operation.parameters.first(where: { $0.name == name }) else {
                    throw PaginationRefusal(localized: "the operation has no parameter \"\(name)\"")
                }
                guard parameter.location == .query else {
                    throw PaginationRefusal(localized: "the parameter \"\(name)\" is not in the query")
                }
                inputs[role] = (name, true)
            default:
                throw PaginationRefusal(localized: "the input \"\(name)\" is in neither parameters nor requestBody")
            }
        }
        let results = try outputs["results"].map { value throws(PaginationRefusal) in try fieldPath(value, output: "results") }
        var pagination: Pagination
        switch type {
        case "offsetLimit":
            guard let results else { throw PaginationRefusal(localized: "offsetLimit without outputs.results (Callsign counts a page's items)") }
            switch (inputs["page"], inputs["offset"]) {
            case (let page?, nil): pagination = .page(parameter: page.name)
            case (nil, let offset?): pagination = .offset(parameter: offset.name, limitParameter: nil)
            case (nil, nil): throw PaginationRefusal(localized: "offsetLimit needs a page or an offset input")
            case (_?, _?): throw PaginationRefusal(localized: "it has both a page and an offset input")
            }
            pagination.itemsField = results
            pagination.limitParameter = inputs["limit"]?.name
            pagination.parametersInQuery = (inputs["page"] ?? inputs["offset"])?.inQuery ?? false
        case "cursor":
            guard let cursor = inputs["cursor"] else { throw PaginationRefusal(localized: "cursor needs a cursor input") }
            guard let next = outputs["nextCursor"] else { throw PaginationRefusal(localized: "cursor needs outputs.nextCursor") }
            pagination = .cursor(at: try fieldPath(next, output: "nextCursor"), parameter: cursor.name)
            pagination.itemsField = results
            pagination.parametersInQuery = cursor.inQuery
        case "url":
            guard let next = outputs["nextUrl"] else { throw PaginationRefusal(localized: "url needs outputs.nextUrl") }
            pagination = .nextURL(at: try fieldPath(next, output: "nextUrl"))
            pagination.itemsField = results
        default:
            throw PaginationRefusal(localized: "the type is not offsetLimit, cursor or url")
        }
        return pagination
    }

    /// A JSONPath Callsign follows: `$` then names (`$.data.next_cursor`), as a dotted path;
    /// `$` alone is the body itself (`nil`).
    static func fieldPath(_ value: JSONValue, output: String) throws(PaginationRefusal) -> String {
        guard case .string(let text) = value, text.hasPrefix("$"), text.utf8.count <= 256 else {
            throw PaginationRefusal(localized: "outputs.\(output) is not a JSONPath")
        }
        let keys = text.dropFirst().split(separator: ".", omittingEmptySubsequences: false).dropFirst()
        guard text == "$" || (text.dropFirst().hasPrefix(".") && keys.count <= 16 && keys.allSatisfy { key in
            !key.isEmpty && !key.contains { "[]*'\"()?@$ ".contains($0) }
        }) else {
            throw PaginationRefusal(localized: "outputs.\(output) \(text) is a JSONPath Callsign does not follow (names only, such as $.data.next)")
        }
        return keys.joined(separator: ".")
    }

    // MARK: - Reading parameters and answers

    /// Cursor parameters and the answer fields that carry the next one.
    static let cursorRoles: [String: Set<String>] = [
        "cursor": ["next_cursor", "nextCursor"],
        "page_token": ["next_page_token"],
        "pageToken": ["nextPageToken"],
    ]
    /// Parameters that say how many items a page holds, beside `page`.
    static let pageSizeNames: Set<String> = ["per_page", "page_size", "pageSize", "limit"]

    static func heuristic(_ operation: Operation, endpoint: OpenAPIKit.ResolvedEndpoint, place: String) -> PaginationReading {
        let query = operation.parameters.filter { $0.location == .query }
        func integer(_ name: String) -> Bool { query.contains { $0.name == name && $0.type == "integer" } }
        // Parsed only when a parameter could page: most operations have none.
        lazy var schema = successSchema(of: operation)
        var readings: [(name: LocalizedMessage, pagination: Pagination)] = []
        var unclear: [LocalizedMessage] = []
        for (parameter, roles) in cursorRoles.sorted(by: { $0.key < $1.key }) where query.contains(where: { $0.name == parameter }) {
            let paths = schema.map { fields(named: roles, in: $0) } ?? []
            switch paths.count {
            case 0: continue
            case 1:
                var pagination = Pagination.cursor(at: paths[0], parameter: parameter)
                pagination.parametersInQuery = true
                readings.append(("the cursor \(parameter) from \(paths[0])" as LocalizedMessage, pagination))
            default: unclear.append("the cursor \(parameter) could come from \(paths.joined(separator: " or "))" as LocalizedMessage)
            }
        }
        let counted: [(parameter: String, kind: String)] = (integer("page") ? [("page", "page")] : []) + (integer("offset") && integer("limit") ? [("offset", "offset")] : [])
        for (parameter, kind) in counted {
            let lists = schema.map(lists(in:)) ?? []
            guard lists.count == 1, let items = lists.first else {
                unclear.append(
                    lists.isEmpty
                        ? "the \(parameter) parameter has no list in the answer to count" as LocalizedMessage
                        : "the \(parameter) parameter could count \(lists.compactMap { $0 }.joined(separator: " or "))" as LocalizedMessage)
                continue
            }
            if kind == "page" {
                let sizes = pageSizeNames.filter(integer)
                var pagination = Pagination.page(items: items, limitParameter: sizes.count == 1 ? sizes.first : nil)
                pagination.parametersInQuery = true
                readings.append(("the page parameter" as LocalizedMessage, pagination))
            } else {
                var pagination = Pagination.offset(items: items, limitParameter: "limit")
                pagination.parametersInQuery = true
                readings.append(("the offset and limit parameters" as LocalizedMessage, pagination))
            }
        }
        let documentsLink = endpoint.responses.contains { status, response in
            let code = status.rawValue.uppercased()
            guard code == "2XX" || Int(code).map({ (200..<300).contains($0) }) == true else { return false }
            return response.headers?.keys.contains { $0.lowercased() == "link" } ?? false
        }
        if documentsLink { readings.append(("the Link header" as LocalizedMessage, .link)) }
        if readings.count == 1, unclear.isEmpty, let only = readings.first { return PaginationReading(pagination: only.pagination) }
        guard !readings.isEmpty || !unclear.isEmpty else { return PaginationReading() }
        let ways = (readings.map(\.name) + unclear).map(\.description).joined(separator: "; ")
        return PaginationReading(
            warning: "\(place) reads as paged in more than one way (\(ways)); none is followed: declare x-speakeasy-pagination, or pass a Pagination to pages(…)" as LocalizedMessage)
    }

    /// The schema of the lowest documented 2xx answer, as JSON.
    static func successSchema(of operation: Operation) -> JSONValue? {
        let success = operation.responses.filter { Int($0.status).map { (200..<300).contains($0) } ?? false }.min { $0.status < $1.status }
        guard let text = success?.schema else { return nil }
        return try? JSONValue(parsing: Data(text.utf8))
    }

    /// The dotted paths, at most two names deep, of the properties named one of `names`.
    static func fields(named names: Set<String>, in schema: JSONValue) -> [String] {
        var found: [String] = []
        let top = properties(of: schema)
        for key in top.keys.sorted() {
            if names.contains(key) { found.append(key) }
            guard let inner = top[key] else { continue }
            for nested in properties(of: inner).keys.sorted() where names.contains(nested) { found.append(key + "." + nested) }
        }
        return found
    }

    /// The lists an answer holds: the body itself (`nil`) when it is one, else its top-level
    /// array properties.
    static func lists(in schema: JSONValue) -> [String?] {
        if schema["type"]?.stringValue == "array" { return [nil] }
        let top = properties(of: schema)
        return top.keys.sorted().filter { top[$0]?["type"]?.stringValue == "array" }
    }

    /// An object schema's properties, its `allOf` parts' merged in.
    static func properties(of schema: JSONValue) -> [String: JSONValue] {
        var result = schema["properties"]?.objectValue ?? [:]
        for part in (schema["allOf"]?.arrayValue ?? []).prefix(16) {
            result.merge(part["properties"]?.objectValue ?? [:]) { first, _ in first }
        }
        return result
    }
}
