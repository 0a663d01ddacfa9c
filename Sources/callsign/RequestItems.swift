import Callsign
import Foundation

// The command line's request items, kept free of ArgumentParser so the fuzz package can compile
// this file as it is (Fuzz/Sources/CallsignFuzz/CLI/ links to it): `-p` parameters, `-H`
// headers and HTTPie's items. JSON values after `:=` are read by `JSONValue(parsing:)`, which
// keeps number text exactly as written.

/// Reads `-p` arguments: `key=value` sends a string, `key:=json` sends a JSON value
/// (`page:=2`, `tags:=["a","b"]`, `on:=true`), as HTTPie writes them.
enum ParameterArguments {
    static func parse(_ arguments: [String]) throws(APIError) -> Parameters {
        var parameters: Parameters = [:]
        for argument in arguments {
            guard let item = RequestItem(argument, separators: [":=", "="]) else {
                throw cliError(.invalidRequest, "-p takes key=value (a string) or key:=json, not \(argument)")
            }
            parameters[item.key] = try item.parameterValue(option: "-p ")
        }
        return parameters
    }

    static func headers(_ arguments: [String]) throws(APIError) -> Headers {
        var headers = Headers()
        for argument in arguments {
            guard let colon = argument.firstIndex(of: ":") else {
                throw cliError(.invalidRequest, "-H takes 'Name: value', not \(argument)")
            }
            headers.add(
                String(argument[..<colon]).trimmingCharacters(in: .whitespaces),
                String(argument[argument.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        return headers
    }
}

/// One `key<separator>value` argument, split at the earliest separator; where two start at the
/// same place, the longer wins (`:=` over `:`, `==` over `=`). HTTPie's request items.
struct RequestItem {
    let key: String
    let separator: String
    let value: String

    /// `nil` when no separator occurs, or the key before it is empty.
    init?(_ text: String, separators: [String]) {
        var best: (separator: String, range: Range<String.Index>)?
        for separator in separators {
            guard let range = text.range(of: separator) else { continue }
            if let current = best, current.range.lowerBound < range.lowerBound
                || (current.range.lowerBound == range.lowerBound && current.separator.count >= separator.count)
            {
                continue
            }
            best = (separator, range)
        }
        guard let best, best.range.lowerBound != text.startIndex else { return nil }
        key = String(text[..<best.range.lowerBound])
        separator = best.separator
        value = String(text[best.range.upperBound...])
    }

    /// The value as a parameter: parsed JSON after `:=`, a string otherwise.
    func parameterValue(option: String = "") throws(APIError) -> JSONValue {
        guard separator == ":=" else { return .string(value) }
        do {
            return try JSONValue(parsing: Data(value.utf8))
        } catch {
            throw cliError(.invalidRequest, "the value of \(option)\(key):= is not JSON: \(value)")
        }
    }
}

/// HTTPie's request items: `key=value`, `key:=json`, `key==value`, `Name:value`, and with `-f`
/// `name@FILE` (see ``RequestItem``: the separator that comes first wins, so
/// `Authorization:Bearer a=b` is a header and `email=a@b` a parameter).
///
/// Nothing typed is lost or reordered, as in HTTPie: a repeated `key==value` is sent once per
/// item, in the order typed (`a==1 a==2` → `?a=1&a=2`, `z==1 a==2` → `?z=1&a=2`); a repeated
/// `key=value` or `key:=json` becomes a JSON array of its values in that order (`a=1 a=2` →
/// `{"a":["1","2"]}`, as HTTPie 3 builds it); a repeated `Name:value` sends the header once per item.
struct AdHocItems {
    /// `key=value` and `key:=json` items: one value per key, an array for a key typed more than once.
    var parameters: Parameters = [:]
    /// `key==value` items in the order typed; a key may repeat.
    var query: [(key: String, value: String)] = []
    var headers = Headers()
    /// `name@FILE` items: files to upload in a multipart form.
    var files: [(name: String, path: String)] = []

    init(parsing items: [String], form: Bool = false) throws(APIError) {
        var values: [String: [JSONValue]] = [:]
        for text in items {
            guard let item = RequestItem(text, separators: [":=", "==", "=", ":"] + (form ? ["@"] : [])) else {
                throw cliError(
                    .invalidRequest,
                    "\(text) is not an item: give key=value, key:=json, key==value or Name:value (and name@FILE with -f)")
            }
            switch item.separator {
            case "@": files.append((item.key, item.value))
            case "==": query.append((item.key, item.value))
            case ":": headers.add(item.key.trimmingCharacters(in: .whitespaces), item.value.trimmingCharacters(in: .whitespaces))
            default: values[item.key, default: []].append(try item.parameterValue())
            }
        }
        parameters = values.mapValues { $0.count == 1 ? $0[0] : .array($0) }
    }

    /// Adds the `key==value` items to `request` in the order typed.
    ///
    /// The library's ``QueryEncoder`` writes each pair (RFC 3986: only unreserved characters pass,
    /// so a value cannot add a pair or end the query); they are joined in the order typed after
    /// any query the URL already has, where ``Request/Fields/query``, a dictionary written in
    /// sorted order, would lose both the order and the repeats. An item named after a
    /// placeholder of the path (`{id}`) fills the placeholder instead, as the request's query
    /// parameters do.
    func addQuery(to request: inout Request) {
        var pairs: [String] = []
        for item in query {
            if request.path.contains("{\(item.key)}") {
                request.query[item.key] = .string(item.value)
            } else {
                pairs.append(QueryEncoder().encode([item.key: .string(item.value)]))
            }
        }
        guard !pairs.isEmpty else { return }
        // RFC 3986 §3.5: the fragment, if any, stays last.
        let fragment = request.path.firstIndex(of: "#") ?? request.path.endIndex
        let head = request.path[..<fragment]
        let joiner = !head.contains("?") ? "?" : head.hasSuffix("?") || head.hasSuffix("&") ? "" : "&"
        request.path = head + joiner + pairs.joined(separator: "&") + request.path[fragment...]
    }
}

extension Headers {
    /// These headers (a definition's with the header items over them) and the `-H` headers: a
    /// `-H` replaces a definition's header of its name, and is sent beside a header item of the
    /// same name — both go, the items' first, as HTTPie sends a repeated item and curl a repeated `-H`.
    func adding(commandLine given: Headers, besideItems items: Headers) -> Headers {
        let itemNames = Set(items.fields.map { $0.name.lowercased() })
        var result = merging(Headers(given.fields.filter { !itemNames.contains($0.name.lowercased()) }))
        for field in given.fields where itemNames.contains(field.name.lowercased()) { result.add(field.name, field.value) }
        return result
    }
}
