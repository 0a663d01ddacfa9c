import Foundation

/// How the next page of a paged answer is found (``APIClient/pages(_:pagination:)``).
///
/// Give it per call, or declare it once in the API's definition (``CallOptions/pagination``, the
/// `pagination` key of a definitions file, an OpenAPI operation's `x-speakeasy-pagination`): a
/// walk without an explicit pagination uses the request's, else ``link``.
///
/// ```swift
/// client.pages(.get("users"))                                                        // Link: <…>; rel="next"
/// client.pages(.get("users"), pagination: .cursor(at: "meta.next_cursor", parameter: "cursor"))
/// client.pages(.get("users"), pagination: .page(items: "data"))                      // page=1, 2, … until an empty page
/// client.pages(.get("users"), pagination: .offset(items: "data", limitParameter: "limit"))
/// client.pages(.get("users"), pagination: Pagination.link.limited(to: 10))
/// ```
public struct Pagination: Sendable, Hashable, Codable {
    enum Kind: Sendable, Hashable, Codable {
        case link
        case nextURL(field: [String])
        case cursor(field: [String], parameter: String)
        case page(parameter: String, first: Int)
        case offset(parameter: String)
    }

    let kind: Kind
    /// The most pages read; the sequence ends after the last. Default 100.
    public var maximumPages: Int = 100
    /// Whether a next link to another origin (scheme, host and port) is followed. Default `false`:
    /// such a link ends the walk with ``APIError/Code/invalidResponse``. When `true`, the request to
    /// the other origin keeps none of your headers and never carries credentials there.
    public var followsOtherOrigins: Bool = false
    /// Where a page's items are: a dotted path (`data`, `result.items`) looked up in the envelope's
    /// payload first, then in the whole body; `nil` (the default) means the payload or the body
    /// itself. The ``page(parameter:startingAt:items:limitParameter:pageSize:)`` and
    /// ``offset(parameter:items:limitParameter:pageSize:)`` walks count these items to know where
    /// the list ends, and ``APIClient/items(_:parameters:as:at:pagination:)`` reads them when it
    /// is given no field of its own.
    public var itemsField: String?
    /// The parameter that says how many items a page holds (`limit`, `per_page`), for the page
    /// and offset walks: when the request sends a whole number in it, a page with fewer items is
    /// the last (as Speakeasy's `offsetLimit` reads `limit`). Default `nil`: only an empty page ends
    /// the walk.
    public var limitParameter: String?
    /// The number sent in ``limitParameter`` when the call sets none. Default `nil` (the server's
    /// page size).
    public var pageSize: Int?
    /// Whether the parameters the walk sets (the cursor, the page, the offset, the limit) go into
    /// the query string whatever the method (``Request/Fields/query``). Default `false`: they are
    /// parameters, which go into the query for GET, HEAD and DELETE and into the body otherwise;
    /// one the request already holds in its query stays there.
    public var parametersInQuery: Bool = false

    /// Follows the response's `Link` header field to the target whose `rel` is `next` (RFC 8288),
    /// relative references resolved against the page's URL; no such link ends the walk.
    public static let link = Pagination(kind: .link)

    /// Follows the URL in a field of the body (`links.next`, `paging.next`) — looked up in the
    /// envelope's payload first, then in the whole body — as ``link`` follows a `Link` field: a
    /// relative URL is resolved against the page's URL, another origin needs
    /// ``followsOtherOrigins``, and a missing, `null` or empty field ends the walk.
    ///
    /// ```swift
    /// client.pages(.get("events"), pagination: .nextURL(at: "links.next"))
    /// ```
    public static func nextURL(at field: String) -> Pagination {
        Pagination(kind: .nextURL(field: path(field)))
    }

    /// Reads the next page's cursor from a field of the body — a dotted path such as
    /// `meta.next_cursor`, looked up in the envelope's payload first, then in the whole body — and
    /// sends it as the parameter `parameter` of the same request. A missing, `null` or empty
    /// cursor ends the walk.
    public static func cursor(at field: String, parameter: String) -> Pagination {
        Pagination(kind: .cursor(field: path(field), parameter: parameter))
    }

    /// Counts pages: the request is sent with `parameter` = `first` (or the number the call gives
    /// it), then `first + 1`, and so on, until a page has no items (see ``itemsField``), or fewer
    /// than the ``limitParameter`` the request sends.
    ///
    /// ```swift
    /// for try await page in client.pages(.get("repos"), pagination: .page(limitParameter: "per_page", pageSize: 50)) { … }
    /// ```
    public static func page(
        parameter: String = "page", startingAt first: Int = 1, items: String? = nil, limitParameter: String? = nil, pageSize: Int? = nil
    ) -> Pagination {
        var pagination = Pagination(kind: .page(parameter: parameter, first: first))
        pagination.itemsField = items
        pagination.limitParameter = limitParameter
        pagination.pageSize = pageSize
        return pagination
    }

    /// Counts items: the request is sent with `parameter` = 0 (or the number the call gives it),
    /// then with the offset moved on by the number of items each page held, until a page has no
    /// items (see ``itemsField``), or fewer than the ``limitParameter`` the request sends.
    ///
    /// ```swift
    /// for try await page in client.pages(.get("notes"), pagination: .offset(items: "data", limitParameter: "limit", pageSize: 50)) { … }
    /// ```
    public static func offset(
        parameter: String = "offset", items: String? = nil, limitParameter: String? = "limit", pageSize: Int? = nil
    ) -> Pagination {
        var pagination = Pagination(kind: .offset(parameter: parameter))
        pagination.itemsField = items
        pagination.limitParameter = limitParameter
        pagination.pageSize = pageSize
        return pagination
    }

    /// A copy that reads at most `pages` pages (at least one).
    public func limited(to pages: Int) -> Pagination {
        var copy = self
        copy.maximumPages = Swift.max(1, pages)
        return copy
    }

    /// A dotted path as its keys.
    static func path(_ field: String) -> [String] {
        field.split(separator: ".").map(String.init)
    }
}
