import Foundation
import HTTPTypes

/// Reads one value of a definitions file, producing errors that name the API, key and line.
struct ValueReader {
    let api: String
    let key: String
    let line: Int?
    let value: JSONValue

    func error(_ problem: LocalizedMessage) -> APIError {
        DefinitionParser.error(api, key: key, line: line, localized: problem)
    }

    /// A word from a fixed set, read by `parse`; `what` names the set for the error.
    func word<Word>(_ parse: (String) -> Word?, what: LocalizedMessage) throws(APIError) -> Word {
        let text = try string()
        guard let word = parse(text) else { throw error("\"\(text)\" is not \(what)") }
        return word
    }

    func string() throws(APIError) -> String {
        guard case .string(let text) = value else { throw error("must be a string, not \(value.kindName)") }
        return text
    }

    func dictionary() throws(APIError) -> [String: JSONValue] {
        guard case .object(let members) = value else { throw error("must be a dictionary, not \(value.kindName)") }
        return members
    }

    func bool() throws(APIError) -> Bool {
        switch value {
        case .bool(let flag): return flag
        // Property lists written by hand sometimes hold 0/1 for Booleans.
        case .int(let number) where number == 0 || number == 1: return number == 1
        default: throw error("must be true or false, not \(value.kindName)")
        }
    }

    func seconds() throws(APIError) -> Duration {
        let seconds: Double
        switch value {
        case .int(let number): seconds = Double(number)
        case .double(let number): seconds = number
        default: throw error("must be a number of seconds, not \(value.kindName)")
        }
        guard seconds > 0, seconds.isFinite, seconds <= 86_400 else {
            throw error("must be more than 0 and at most 86400 seconds")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    static let knownMethods: [String] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "QUERY"]

    func method() throws(APIError) -> HTTPRequest.Method {
        let text = try string()
        let upper = text.uppercased()
        guard Self.knownMethods.contains(upper), let method = HTTPRequest.Method(upper) else {
            guard let near = NearMatch.suggestions(for: upper, among: Self.knownMethods, limit: 1).first else {
                throw error("\"\(text)\" is not an HTTP method")
            }
            throw error("\"\(text)\" is not an HTTP method; did you mean \"\(near)\"?")
        }
        return method
    }

    func headers() throws(APIError) -> Headers {
        let members = try dictionary()
        var pairs: [(name: String, value: String)] = []
        pairs.reserveCapacity(min(members.count, Limits.default.maximumHeaderFieldCount + 1))
        for name in members.keys.sorted() {
            guard let member = members[name] else { continue }
            guard let text = member.scalarText, !member.isNull else {
                throw error("the value of header \"\(name.escapedForMessage)\" must be a string, not \(member.kindName)")
            }
            pairs.append((name, text))
        }
        // Names, values, count and size are checked by the one field door; its message gains the
        // API, key and line here.
        do {
            let fields = try FieldReader(direction: .request, code: .invalidDefinition)
                .fields(pairs, source: "the definition" as LocalizedMessage, invalid: .refuse)
            return Headers(fields)
        } catch {
            throw self.error("\(error.message)")
        }
    }

    /// `retry: 3` (attempts), `retry: false` (none), or a dictionary with `attempts`, `baseDelay`,
    /// `maxDelay`, `statusCodes`, `idempotencyKey`, `transportErrors`, `jitter`.
    func retryPolicy() throws(APIError) -> RetryPolicy {
        switch value {
        case .int(let attempts) where attempts >= 1 && attempts <= 100:
            return RetryPolicy(maximumAttempts: attempts)
        case .bool(let enabled):
            return enabled ? .default : .none
        case .object(let members):
            var policy = RetryPolicy.default
            for key in members.keys.sorted() {
                guard let member = members[key] else { continue }
                let nested = ValueReader(api: api, key: "\(self.key).\(key)", line: line, value: member)
                switch key {
                case "attempts":
                    guard let attempts = member.intValue, (1...100).contains(attempts) else {
                        throw nested.error("must be a whole number from 1 to 100")
                    }
                    policy.maximumAttempts = attempts
                case "baseDelay": policy.baseDelay = try nested.seconds()
                case "maxDelay": policy.maximumDelay = try nested.seconds()
                case "maxRetryAfter": policy.maximumRetryAfter = try nested.seconds()
                case "statusCodes":
                    policy.retryableStatusCodes = Set(try nested.statusCodes().ranges.flatMap { Array($0) })
                case "idempotencyKey": policy.addsIdempotencyKey = try nested.bool()
                case "transportErrors": policy.retriesTransportErrors = try nested.bool()
                case "jitter":
                    guard let text = member.stringValue, text == "full" || text == "none" else {
                        throw nested.error("must be full or none")
                    }
                    policy.jitter = text == "full" ? .full : .none
                default:
                    throw nested.error(
                        "unknown; use attempts, baseDelay, maxDelay, maxRetryAfter, statusCodes, idempotencyKey, transportErrors, jitter")
                }
            }
            return policy
        default:
            throw error("must be a number of attempts (1-100), true/false, or a dictionary")
        }
    }

    /// The `authentication` dictionary: a scheme (built in or registered with
    /// ``AuthenticationSource/register(scheme:_:)``) and the environment variables that hold its
    /// secrets, never the secrets themselves.
    func authenticationSource() throws(APIError) -> AuthenticationSource {
        let members = try dictionary()
        for secret in ["token", "password", "value", "user", "username", "secret", "key"] where members[secret] != nil {
            throw error(
                "must not hold the secret itself (\"\(secret)\"); name an environment variable with tokenEnvironment, userEnvironment or passwordEnvironment")
        }
        let known = ["scheme", "tokenEnvironment", "userEnvironment", "passwordEnvironment", "in", "name"]
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
            if let near = NearMatch.suggestions(for: unknown, among: known, limit: 1).first {
                throw error("has the unknown key \"\(unknown)\"; did you mean \"\(near)\"?")
            }
            throw error("has the unknown key \"\(unknown)\"; use \(known.joined(separator: ", "))")
        }
        let schemes = AuthenticationSource.knownSchemeNames
        guard let schemeText = members["scheme"]?.stringValue, !schemeText.isEmpty else {
            throw error("needs a scheme: \(schemes.joined(separator: ", "))")
        }
        let scheme = AuthenticationSource.Scheme(rawValue: schemeText)
        guard AuthenticationSource.Scheme.builtIn.contains(scheme) || AuthenticationSource.factory(for: scheme) != nil else {
            if let near = NearMatch.suggestions(for: schemeText, among: schemes, limit: 1).first {
                throw error("the scheme \"\(schemeText)\" is unknown; did you mean \"\(near)\"? Known: \(schemes.joined(separator: ", "))")
            }
            throw error("the scheme \"\(schemeText)\" is unknown; known: \(schemes.joined(separator: ", "))")
        }
        var source = AuthenticationSource(scheme: scheme)
        for (key, path) in [("tokenEnvironment", \AuthenticationSource.tokenEnvironment), ("userEnvironment", \.userEnvironment), ("passwordEnvironment", \.passwordEnvironment), ("name", \.name)] {
            guard let member = members[key] else { continue }
            guard let name = member.stringValue, !name.isEmpty, name.count <= 256 else { throw error("\(key) must be a non-empty name") }
            source[keyPath: path] = name
        }
        if let member = members["in"] {
            let places: [String: APIKeyAuthentication.Location] = ["header": .header, "query": .query, "cookie": .cookie]
            let nested = ValueReader(api: api, key: key, line: line, value: member)
            source.location = try nested.word({ places[$0.lowercased()] }, what: "a place for a key; use header, query or cookie")
        }
        switch scheme {
        case .bearer, .authorization:
            guard source.tokenEnvironment != nil else { throw error("\(scheme.rawValue) needs tokenEnvironment") }
        case .basic:
            guard source.userEnvironment != nil, source.passwordEnvironment != nil else {
                throw error("basic needs userEnvironment and passwordEnvironment")
            }
        case .apiKey:
            guard source.tokenEnvironment != nil, let location = source.location, let name = source.name else {
                throw error("apiKey needs in (header, query or cookie), name and tokenEnvironment")
            }
            // The name becomes a header field or a cookie name: it must be a token (RFC 9110
            // section 5.1, RFC 6265 section 4.1.1), or the key could split into another field.
            if location != .query, HTTPField.Name(name) == nil {
                throw error(location == .header ? "the apiKey name \"\(name)\" is not a valid header name" : "the apiKey name \"\(name)\" is not a valid cookie name")
            }
        default:
            break  // a registered scheme checks what it needs when it makes its credentials
        }
        return source
    }

    /// One type name for every failing status, or a dictionary of statuses (`"422"`, `"4xx"`,
    /// `"500-599"`, `"default"`) to names.
    func errorClasses() throws(APIError) -> ErrorClasses {
        switch value {
        case .string(let name) where !name.isEmpty:
            return .all(name)
        case .object(let table) where !table.isEmpty:
            var entries: [ErrorClasses.Entry] = []
            for key in table.keys.sorted() {
                guard case .string(let name)? = table[key], !name.isEmpty else {
                    throw error("the type for \"\(key)\" must be a name (a string)")
                }
                let statuses = key == "default" ? StatusCodes(ranges: [100...599]) : StatusCodes(text: key)
                guard let statuses else { throw error("\"\(key)\" is not a status, a range (\"500-599\", \"4xx\") or \"default\"") }
                entries.append(ErrorClasses.Entry(statuses: statuses, className: name))
            }
            return ErrorClasses(entries)
        default:
            throw error("must be a type name or a dictionary of statuses to type names, not \(value.kindName)")
        }
    }

    func statusCodes() throws(APIError) -> StatusCodes {
        let elements: [JSONValue]
        switch value {
        case .array(let array): elements = array
        default: elements = [value]
        }
        var ranges: [ClosedRange<Int>] = []
        for element in elements {
            switch element {
            case .int(let code) where (100...599).contains(code):
                ranges.append(code...code)
            case .string(let text):
                guard let codes = StatusCodes(text: text) else {
                    throw error("\"\(text)\" is not a status code or range such as 200-299")
                }
                ranges.append(contentsOf: codes.ranges)
            default:
                throw error("must hold status codes (100-599) or ranges such as \"200-299\", not \(element.kindName)")
            }
        }
        guard !ranges.isEmpty else { throw error("must not be empty") }
        return StatusCodes(ranges: ranges)
    }
}

extension ValueReader {
    /// A number as RFAPI's files wrote its policies: an integer, or (in a property list written
    /// by hand) a string of digits. `nil` for anything else, which is read as a word.
    func rfapiNumber() -> Int? {
        if let number = value.intValue { return number }
        guard key.first?.isUppercase == true, let text = value.stringValue, (1...3).contains(text.count),
            text.allSatisfy({ $0.isASCII && $0.isNumber })
        else { return nil }
        return Int(text)
    }

    /// RFAPI's `RFAPIDefineOfflinePolicy`: 0 does nothing special, 1 serves the stored response
    /// when the server cannot be reached.
    func rfapiOfflinePolicy(_ number: Int) throws(APIError) -> Bool {
        switch number {
        case 0: return false
        case 1: return true
        default:
            throw error(
                "\(number) is not one of RFAPI's offline policies: 0 (default), 1 (load the stored response); or use a word: \(StorePolicy.names.joined(separator: ", "))"
            )
        }
    }

    /// RFAPI's `Expire`: seconds a stored response stays fresh, at most a year; 0 (RFAPI's "no
    /// expiry") is `nil`.
    func expire() throws(APIError) -> Duration? {
        let seconds: Double
        switch value {
        case .int(let number): seconds = Double(number)
        case .double(let number): seconds = number
        case .string(let text) where Double(text) != nil: seconds = Double(text) ?? 0
        default: throw error("must be a number of seconds, not \(value.kindName)")
        }
        guard seconds.isFinite, seconds >= 0, seconds <= 31_536_000 else {
            throw error("must be from 0 to 31536000 seconds (a year)")
        }
        return seconds == 0 ? nil : .milliseconds(Int64((seconds * 1000).rounded()))
    }
}
