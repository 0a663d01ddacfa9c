import Foundation

/// A set of HTTP status codes, written as codes and ranges.
///
/// ```swift
/// let accepted: StatusCodes = [200, 201, 204]
/// let successful = StatusCodes.successful          // 200...299
/// let custom = StatusCodes(ranges: [200...299, 304...304])
/// ```
///
/// In a definitions file: `acceptedStatusCodes: [200, 204]` or `["200-299", 304]`.
public struct StatusCodes: Sendable, Hashable, CustomStringConvertible {
    /// The ranges, in the order given.
    public var ranges: [ClosedRange<Int>]

    /// Creates a set from ranges.
    public init(ranges: [ClosedRange<Int>]) { self.ranges = ranges }

    /// Creates a set from single codes.
    public init(_ codes: [Int]) { self.ranges = codes.map { $0...$0 } }

    /// 200 through 299: the default accepted set.
    public static let successful = StatusCodes(ranges: [200...299])

    /// Whether `code` is in the set.
    public func contains(_ code: Int) -> Bool { ranges.contains { $0.contains(code) } }

    public var description: String {
        ranges.map { $0.lowerBound == $0.upperBound ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }
            .joined(separator: ", ")
    }

    /// Reads `"200"`, `"200-299"` or `"2xx"`.
    init?(text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.count == 3, trimmed.lowercased().hasSuffix("xx"), let hundreds = Int(trimmed.prefix(1)) {
            self.init(ranges: [(hundreds * 100)...(hundreds * 100 + 99)])
            return
        }
        let bounds = trimmed.split(separator: "-", omittingEmptySubsequences: false)
            .map { Int($0.trimmingCharacters(in: .whitespaces)) }
        switch bounds.count {
        case 1:
            guard let code = bounds[0], (100...599).contains(code) else { return nil }
            self.init([code])
        case 2:
            guard let low = bounds[0], let high = bounds[1], low <= high, (100...599).contains(low),
                (100...599).contains(high)
            else { return nil }
            self.init(ranges: [low...high])
        default:
            return nil
        }
    }
}

extension StatusCodes: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: Int...) { self.init(elements) }
}

