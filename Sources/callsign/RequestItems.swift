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
struct AdHocItems {
    var parameters: Parameters = [:]
    var query: Parameters = [:]
    var headers = Headers()
    /// `name@FILE` items: files to upload in a multipart form.
    var files: [(name: String, path: String)] = []

    init(parsing items: [String], form: Bool = false) throws(APIError) {
        for text in items {
            guard let item = RequestItem(text, separators: [":=", "==", "=", ":"] + (form ? ["@"] : [])) else {
                throw cliError(
                    .invalidRequest,
                    "\(text) is not an item: give key=value, key:=json, key==value or Name:value (and name@FILE with -f)")
            }
            switch item.separator {
            case "@": files.append((item.key, item.value))
            case "==": query[item.key] = .string(item.value)
            case ":": headers.add(item.key.trimmingCharacters(in: .whitespaces), item.value.trimmingCharacters(in: .whitespaces))
            default: parameters[item.key] = try item.parameterValue()
            }
        }
    }
}
