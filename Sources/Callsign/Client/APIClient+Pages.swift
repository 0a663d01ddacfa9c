import Foundation
import HTTPTypes

/// How the next page of a paged answer is found (``APIClient/pages(_:pagination:)``).
///
/// ```swift
/// client.pages(.get("users"))                                                        // Link: <…>; rel="next"
/// client.pages(.get("users"), pagination: .cursor(at: "meta.next_cursor", parameter: "cursor"))
/// client.pages(.get("users"), pagination: Pagination.link.limited(to: 10))
/// ```
public struct Pagination: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case link
        case cursor(field: [String], parameter: String)
    }

    let kind: Kind
    /// The most pages read; the sequence ends after the last. Default 100.
    public var maximumPages: Int = 100
    /// Whether a next link to another origin (scheme, host and port) is followed. Default `false`:
    /// such a link ends the walk with ``APIError/Code/invalidResponse``. When `true`, the request to
    /// the other origin keeps none of your headers and never carries credentials there.
    public var followsOtherOrigins: Bool = false

    /// Follows the response's `Link` header field to the target whose `rel` is `next` (RFC 8288),
    /// relative references resolved against the page's URL; no such link ends the walk.
    public static let link = Pagination(kind: .link)

    /// Reads the next page's cursor from a field of the body — a dotted path such as
    /// `meta.next_cursor`, looked up in the envelope's payload first, then in the whole body — and
    /// sends it as the parameter `parameter` of the same request. A missing, `null` or empty
    /// cursor ends the walk.
    public static func cursor(at field: String, parameter: String) -> Pagination {
        Pagination(kind: .cursor(field: field.split(separator: ".").map(String.init), parameter: parameter))
    }

    /// A copy that reads at most `pages` pages (at least one).
    public func limited(to pages: Int) -> Pagination {
        var copy = self
        copy.maximumPages = Swift.max(1, pages)
        return copy
    }
}

extension APIClient {
    /// The pages of a paged answer, each a whole call through the pipeline, fetched as you
    /// iterate: the next one only when you ask for it, none after you stop or cancel.
    ///
    /// The request's `deadline` (or the client's) covers the whole walk; every page must have a
    /// status the request accepts.
    ///
    /// ```swift
    /// for try await page in client.pages(.get("users"), pagination: Pagination.link.limited(to: 5)) {
    ///     let users = try page.decode([User].self)
    /// }
    /// ```
    public func pages(_ request: Request, pagination: Pagination = .link) -> Pages {
        Pages(client: self, request: request, pagination: pagination)
    }

    /// The pages of the API with this name (see ``pages(_:pagination:)``).
    ///
    /// ```swift
    /// for try await page in try client.pages("ListUsers", parameters: ["per_page": 50]) { … }
    /// ```
    /// - Throws: ``APIError`` (``APIError/Code/unknownAPI``) when the request cannot be built.
    public func pages(_ name: String, parameters: Parameters = [:], pagination: Pagination = .link) throws(APIError) -> Pages {
        pages(try definitions.definition(named: name).request(parameters: parameters), pagination: pagination)
    }

    /// Every item of every page of the API with this name, decoded as `T`: the array at `field`
    /// (a dotted path in the body, or the envelope's payload), or the body itself when `field` is
    /// `nil`.
    ///
    /// ```swift
    /// for try await user in try client.items("ListUsers", as: User.self, at: "data") {
    ///     print(user.name)
    /// }
    /// ```
    public func items<T: Decodable & Sendable>(
        _ name: String, parameters: Parameters = [:], as type: T.Type, at field: String? = nil, pagination: Pagination = .link
    ) throws(APIError) -> PageItems<T> {
        PageItems(pages: try pages(name, parameters: parameters, pagination: pagination), field: field.map { $0.split(separator: ".").map(String.init) })
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
        private var end: ContinuousClock.Instant?

        init(client: APIClient, next: Request, pagination: Pagination) {
            self.client = client
            self.next = next
            self.pagination = pagination
        }

        public mutating func next() async throws(APIError) -> Response? {
            guard var request = next, fetched < pagination.maximumPages else { return nil }
            next = nil
            if Task.isCancelled { throw APIError(.cancelled, localized: "the call was cancelled", request: request) }
            let clock = client.configuration.clock
            if end == nil, let deadline = request.deadline ?? client.configuration.timeouts.deadline { end = clock.now + deadline }
            if let end {
                guard clock.now < end else {
                    throw APIError(.timedOut, localized: "the deadline passed before page \(fetched + 1) could be fetched", request: request)
                }
                request.deadline = end - clock.now
            }
            let response = try await client.send(request)
            try response.validateStatus()
            fetched += 1
            next = try following(request, after: response)
            return response
        }

        /// The request for the page after `response`, or `nil` at the end.
        private func following(_ request: Request, after response: Response) throws(APIError) -> Request? {
            switch pagination.kind {
            case .link:
                let text = (HTTPField.Name("Link").map { response.headers[values: $0] } ?? []).joined(separator: ", ")
                let here = URL(string: response.request.path)
                guard !text.isEmpty, let url = LinkField.target("next", in: text, relativeTo: here),
                    let origin = Origin(url), url.scheme == "https" || url.scheme == "http"
                else { return nil }
                var next = request
                next.path = url.absoluteString
                next.baseURL = nil
                next.parameters = [:]
                next.query = [:]
                guard let from = here.flatMap(Origin.init), from != origin else { return next }
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
            case .cursor(let field, let parameter):
                guard let cursor = Pages.value(at: field, in: response), !Pages.isEmpty(cursor) else { return nil }
                var next = request
                next.parameters[parameter] = cursor
                return next
            }
        }
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
