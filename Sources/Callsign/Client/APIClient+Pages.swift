import Foundation
import HTTPTypes

extension APIClient {
    /// The pages of a paged answer, each a whole call through the pipeline, fetched as you
    /// iterate: the next one only when you ask for it, none after you stop or cancel.
    ///
    /// `pagination` wins; without it, the walk follows the request's own (its definition's
    /// ``CallOptions/pagination``), else ``Pagination/link``. The request's `deadline` (or the
    /// client's) covers the whole walk; every page must have a status the request accepts and,
    /// when the request reads envelopes, an envelope code that means success.
    ///
    /// ```swift
    /// for try await page in client.pages(.get("users"), pagination: Pagination.link.limited(to: 5)) {
    ///     let users = try page.decode([User].self)
    /// }
    /// ```
    public func pages(_ request: Request, pagination: Pagination? = nil) -> Pages {
        Pages(client: self, request: request, pagination: pagination ?? request.pagination ?? .link)
    }

    /// The pages of the API with this name (see ``pages(_:pagination:)``); without a
    /// `pagination`, the definition's, else ``Pagination/link``.
    ///
    /// ```swift
    /// for try await page in try client.pages("ListUsers", parameters: ["per_page": 50]) { … }
    /// ```
    /// - Throws: ``APIError`` (``APIError/Code/unknownAPI``) when the request cannot be built.
    public func pages(_ name: String, parameters: Parameters = [:], pagination: Pagination? = nil) throws(APIError) -> Pages {
        pages(try definitions.definition(named: name).request(parameters: parameters), pagination: pagination)
    }

    /// Every item of every page of the API with this name, decoded as `T`: the array at `field`
    /// (a dotted path in the body, or the envelope's payload), else at the pagination's
    /// ``Pagination/itemsField``, or the body itself when neither names one.
    ///
    /// ```swift
    /// for try await user in try client.items("ListUsers", as: User.self, at: "data") {
    ///     print(user.name)
    /// }
    /// ```
    public func items<T: Decodable & Sendable>(
        _ name: String, parameters: Parameters = [:], as type: T.Type, at field: String? = nil, pagination: Pagination? = nil
    ) throws(APIError) -> PageItems<T> {
        let pages = try pages(name, parameters: parameters, pagination: pagination)
        return PageItems(pages: pages, field: (field ?? pages.pagination.itemsField).map(Pagination.path))
    }
}

/// The pages of a paged answer (``APIClient/pages(_:pagination:)``). Iterate it once.
public struct Pages: AsyncSequence, Sendable {
    public typealias Element = Response
    public typealias Failure = APIError

    let client: APIClient
    let request: Request
    let pagination: Pagination

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(client: client, next: request, pagination: pagination)
    }

    /// Fetches one page per call to ``next()``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private let client: APIClient
        private let pagination: Pagination
        private var next: Request?
        private var fetched = 0
        /// The request's deadline (or the client's), spent over every page.
        private var deadline: WalkDeadline
        private var refusal: APIError?

        init(client: APIClient, next: Request, pagination: Pagination) {
            self.client = client
            self.deadline = WalkDeadline(client.configuration)
            self.next = next
            self.pagination = pagination
        }

        public mutating func next() async throws(APIError) -> Response? {
            if let refusal {
                self.refusal = nil
                throw refusal
            }
            guard var request = next, fetched < pagination.maximumPages else { return nil }
            next = nil
            if Task.isCancelled { throw APIError(.cancelled, localized: "the call was cancelled", request: request) }
            if fetched == 0 { request = try Pages.first(request, pagination: pagination) }
            if let left = deadline.left(for: request) {
                guard left > .zero else {
                    throw APIError(.timedOut, localized: "the deadline passed before page \(fetched + 1) could be fetched", request: request)
                }
                request.deadline = left
            }
            let response = try await client.send(request)
            try response.validateStatus()
            // An envelope that reports a failure is a failed page, not the end of the list.
            _ = try response.envelopePayload()
            fetched += 1
            // A next page that cannot be followed fails the walk after this page is handed out.
            do throws(APIError) {
                next = try following(request, after: response)
            } catch {
                refusal = error
            }
            return response
        }

        /// The request for the page after `response`, or `nil` at the end.
        private func following(_ request: Request, after response: Response) throws(APIError) -> Request? {
            switch pagination.kind {
            case .link:
                let text = (HTTPField.Name("Link").map { response.headers[values: $0] } ?? []).joined(separator: ", ")
                guard !text.isEmpty, let url = LinkField.target("next", in: text, relativeTo: URL(string: response.request.path)) else { return nil }
                return try following(request, to: url, after: response)
            case .nextURL(let field):
                guard case .string(let text)? = Pages.value(at: field, in: response), !text.isEmpty else { return nil }
                // At most a URL's worth, resolved as a Link target is.
                guard text.utf8.count <= LinkField.maximumLength, let url = URL(string: text, relativeTo: URL(string: response.request.path))
                else {
                    throw APIError(
                        .invalidResponse, localized: "the next page's URL at \(field.joined(separator: ".")) is not a URL",
                        request: request, response: response)
                }
                return try following(request, to: url.absoluteURL, after: response)
            case .cursor(let field, let parameter):
                guard let cursor = Pages.value(at: field, in: response), !Pages.isEmpty(cursor) else { return nil }
                return Pages.setting(parameter, to: cursor, in: request, pagination: pagination)
            case .page(let parameter, _):
                guard try Pages.itemCount(of: response, request: request, pagination: pagination) != nil,
                    let page = Pages.number(parameter, in: request), case (let after, false) = page.addingReportingOverflow(1)
                else { return nil }
                return Pages.setting(parameter, to: .int(after), in: request, pagination: pagination)
            case .offset(let parameter):
                guard let count = try Pages.itemCount(of: response, request: request, pagination: pagination),
                    let offset = Pages.number(parameter, in: request), case (let after, false) = offset.addingReportingOverflow(count)
                else { return nil }
                return Pages.setting(parameter, to: .int(after), in: request, pagination: pagination)
            }
        }

        /// The request for a next page at `url`: same origin, or another when allowed and then
        /// without the caller's headers and credentials.
        private func following(_ request: Request, to url: URL, after response: Response) throws(APIError) -> Request? {
            guard let origin = Origin(url), url.scheme == "https" || url.scheme == "http" else { return nil }
            var next = request
            next.path = url.absoluteString
            next.baseURL = nil
            next.parameters = [:]
            next.query = [:]
            guard let from = URL(string: response.request.path).flatMap(Origin.init), from != origin else { return next }
            guard pagination.followsOtherOrigins else {
                throw APIError(
                    .invalidResponse,
                    localized: "the next page is at another origin (\(origin.description)); it is not followed unless Pagination.followsOtherOrigins is set",
                    request: request, response: response)
            }
            // Nothing of this caller's goes to another origin: no headers, no credentials.
            next.headers = [:]
            next.needsAuthorization = false
            return next
        }
    }

    /// The first request of a page or offset walk: the counted parameter and the page size set
    /// when the call gave none, and a value it gave checked.
    static func first(_ request: Request, pagination: Pagination) throws(APIError) -> Request {
        let counted: (name: String, start: Int)
        switch pagination.kind {
        case .page(let parameter, let first): counted = (parameter, first)
        case .offset(let parameter): counted = (parameter, 0)
        default: return request
        }
        var request = request
        for (name, start) in [(counted.name, Optional(counted.start)), (pagination.limitParameter, pagination.pageSize)] {
            guard let name else { continue }
            if let given = request.query[name] ?? request.parameters[name] {
                guard number(name, in: request) != nil else {
                    throw APIError(
                        .invalidRequest, localized: "the parameter \"\(name)\" must be a whole number for the pages to be counted, not \(given.kindName)",
                        request: request)
                }
            } else if let start {
                request = setting(name, to: .int(start), in: request, pagination: pagination)
            }
        }
        return request
    }

    /// The request with parameter `name` set to `value`: where the request holds it (its query,
    /// else its parameters), else where the pagination says.
    static func setting(_ name: String, to value: JSONValue, in request: Request, pagination: Pagination) -> Request {
        var next = request
        if next.query[name] != nil || (pagination.parametersInQuery && next.parameters[name] == nil) {
            next.query[name] = value
        } else {
            next.parameters[name] = value
        }
        return next
    }

    /// The whole number the request sends in parameter `name` (a number, or digits as text).
    static func number(_ name: String, in request: Request) -> Int? {
        switch request.query[name] ?? request.parameters[name] {
        case .string(let text)?: text.utf8.count <= 19 ? Int(text) : nil
        case let value?: value.intValue
        case nil: nil
        }
    }

    /// How many items `response` holds, for a counting walk; `nil` when the list has ended: no
    /// items, or fewer than the limit the request sent.
    static func itemCount(of response: Response, request: Request, pagination: Pagination) throws(APIError) -> Int? {
        let field = pagination.itemsField.map(Pagination.path) ?? []
        let value: JSONValue?
        if field.isEmpty {
            let body = (try? response.envelopePayload()) ?? (try? response.jsonBody())
            value = body.flatMap { try? JSONValue(parsingText: $0, maximumDepth: response.settings.maximumJSONDepth) }
        } else {
            value = Pages.value(at: field, in: response)
        }
        let count: Int
        switch value {
        case .array(let items)?: count = items.count
        case .null?, nil: return nil
        case let other?:
            let problem: LocalizedMessage =
                field.isEmpty
                ? "the page is \(other.kindName), not a list of items: the end of the pages cannot be told" as LocalizedMessage
                : "the page's items at \(field.joined(separator: ".")) are \(other.kindName), not a list: the end of the pages cannot be told" as LocalizedMessage
            throw APIError(.invalidResponse, localized: problem, request: request, response: response)
        }
        guard count > 0 else { return nil }
        if let limit = pagination.limitParameter.flatMap({ number($0, in: request) }), count < limit { return nil }
        return count
    }

    /// The value at `path` in the envelope's payload, else in the whole body.
    static func value(at path: [String], in response: Response) -> JSONValue? {
        let depth = response.settings.maximumJSONDepth
        var bodies: [Data] = []
        if let payload = try? response.envelopePayload() { bodies.append(payload) }
        if let body = try? response.jsonBody() { bodies.append(body) }
        for body in bodies {
            guard let root = try? JSONValue(parsingText: body, maximumDepth: depth) else { continue }
            var value: JSONValue? = root
            for key in path {
                guard case .object(let members)? = value else {
                    value = nil
                    break
                }
                value = members[key]
            }
            if let value { return value }
        }
        return nil
    }

    private static func isEmpty(_ value: JSONValue) -> Bool {
        switch value {
        case .null: true
        case .string(let text): text.isEmpty
        default: false
        }
    }
}

/// Every item of every page (``APIClient/items(_:parameters:as:at:pagination:)``). Iterate it once.
public struct PageItems<T: Decodable & Sendable>: AsyncSequence, Sendable {
    public typealias Element = T
    public typealias Failure = APIError

    let pages: Pages
    let field: [String]?

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(pages: pages.makeAsyncIterator(), field: field)
    }

    /// Hands out the items of one page, then fetches the next.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private var pages: Pages.AsyncIterator
        private let field: [String]?
        private var ready: [T] = []
        private var index = 0

        init(pages: Pages.AsyncIterator, field: [String]?) {
            self.pages = pages
            self.field = field
        }

        public mutating func next() async throws(APIError) -> T? {
            while index >= ready.count {
                guard let page = try await pages.next() else { return nil }
                ready = try Self.items(of: page, at: field)
                index = 0
            }
            defer { index += 1 }
            return ready[index]
        }

        private static func items(of page: Response, at field: [String]?) throws(APIError) -> [T] {
            guard let field else { return try page.decode([T].self) }
            guard let value = Pages.value(at: field, in: page) else {
                throw APIError(.decoding, localized: "the page has no \(field.joined(separator: ".")) to read items from", request: page.request, response: page)
            }
            do {
                return try page.settings.decoder.decode([T].self, from: value.jsonData())
            } catch {
                throw APIError(
                    .decoding, localized: "the items at \(field.joined(separator: ".")) could not be decoded as \(Response.typeName(T.self)): \(Response.describe(error))",
                    request: page.request, response: page, underlyingError: error)
            }
        }
    }
}
