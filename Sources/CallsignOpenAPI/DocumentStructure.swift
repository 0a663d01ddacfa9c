import Callsign
import Foundation

/// The door every OpenAPI document passes before any library code reads its structure: how
/// long its `$ref` chains are, how deep it nests once they are expanded, whether they loop, and
/// how many values it stands for — measured by Callsign, without recursion, against ``Limits``.
///
/// OpenAPIKit decodes a document with one stack frame per level and dereferences it by copying
/// each schema wherever a `$ref` names it, recursing through every `$ref` it follows. A chain a
/// few hundred `$ref`s long overflowed the stack, and a schema named twice by a schema named twice
/// (and so on) doubles the work with every level. Here each `$ref` target is read once, its
/// expanded size and depth computed from those of the targets it names (a depth-first walk on
/// an explicit stack), so the measure costs what the document weighs, not what it expands to.
///
/// OpenAPIKit dereferences the operations (`paths`); the rest of the document is decoded only.
/// So `$ref`s are followed from `paths`, and every value of the document counts once besides.
/// A `$ref` inside an example is counted like any other: the measure errs on the safe side.
struct DocumentStructure {
    /// The longest `$ref` chain followed.
    private(set) var referenceDepth = 0
    /// The deepest nesting once every `$ref` is expanded.
    private(set) var expandedDepth = 0
    /// The values the document stands for once expanded (its own values included).
    private(set) var expandedNodes = 0
    /// The values each path item (by its key in `paths`) stands for once expanded: what
    /// OpenAPIKit builds, all at once, to read its operations.
    private(set) var pathItemNodes: [String: Int] = [:]

    /// One place a `$ref` names (or the document itself, unit 0), read once.
    private struct Unit {
        let pointer: String
        let value: JSONValue
        /// The units its `$ref`s name, with how deep below its top each `$ref` sits.
        var references: [(unit: Int, depth: Int)] = []
        var ownNodes = 0
        var ownDepth = 0
        /// Filled in once every unit it names is done.
        var expandedNodes = 0
        var expandedDepth = 0
        var chain = 0
    }

    private enum Mark { case new, open, done }

    /// Measures `root` and throws ``APIError/Code/invalidDefinition`` past a bound of `limits`.
    init(root: [String: JSONValue], limits: Limits) throws(APIError) {
        let maximumDepth = max(1, limits.maximumJSONDepth)
        let maximumNodes = max(1, limits.maximumExpandedNodes)
        let maximumChain = max(0, limits.maximumReferenceDepth)
        var units = [Unit(pointer: "#", value: .object(root))]
        var indexes = ["#": 0]
        var marks: [Mark] = [.new]
        // Values read, units included: a document of many `$ref`s to large parts is bounded too.
        var work = 0
        // The chain being followed: unit indexes, each naming the next; the next `$ref` to follow in each.
        var path: [(unit: Int, next: Int)] = []

        func tooMuch() -> APIError {
            APIError(
                .invalidDefinition,
                localized: "the OpenAPI document stands for more than \(maximumNodes) values once its $refs are expanded (Limits.maximumExpandedNodes)")
        }

        /// Reads a unit's own values (not following its `$ref`s), iteratively.
        // Of the document's own scan: each path item's own values and the units its `$ref`s name.
        var items: [(key: String, nodes: Int, references: [Int])] = []
        /// Where an entry of the document's scan sits: elsewhere, the `paths` map, or a path item.
        enum Place { case other, paths, item(Int) }

        func scan(_ index: Int) throws(APIError) {
            var stack: [(value: JSONValue, depth: Int, follows: Bool, place: Place)] = [(units[index].value, 1, true, .other)]
            var nodes = 0
            var deepest = 0
            var references: [(unit: Int, depth: Int)] = []
            while let entry = stack.popLast() {
                let (value, depth, follows) = (entry.value, entry.depth, entry.follows)
                nodes += 1
                if case .item(let item) = entry.place { items[item].nodes += 1 }
                work += 1
                guard work <= maximumNodes else { throw tooMuch() }
                deepest = max(deepest, depth)
                guard depth <= maximumDepth else {
                    throw APIError(
                        .invalidDefinition,
                        localized: "\(units[index].pointer) of the OpenAPI document nests deeper than \(maximumDepth) levels (Limits.maximumJSONDepth)")
                }
                switch value {
                case .object(let members):
                    if follows, case .string(let target)? = members["$ref"], target.hasPrefix("#"),
                        let unit = Self.unit(for: target, in: root, units: &units, indexes: &indexes)
                    {
                        if unit == marks.count { marks.append(.new) }
                        references.append((unit, depth))
                        if case .item(let item) = entry.place { items[item].references.append(unit) }
                    }
                    for (key, member) in members {
                        // From the document itself, only the operations are dereferenced.
                        let followsHere = follows && !(index == 0 && depth == 1 && key != "paths")
                        var place = entry.place
                        if index == 0 && depth == 1 && key == "paths" {
                            place = .paths
                        } else if case .paths = entry.place {
                            items.append((key, 0, []))
                            place = .item(items.count - 1)
                        }
                        stack.append((member, depth + 1, followsHere, place))
                    }
                case .array(let items):
                    for item in items { stack.append((item, depth + 1, follows, entry.place)) }
                default:
                    break
                }
            }
            units[index].ownNodes = nodes
            units[index].ownDepth = deepest
            units[index].references = references
        }

        try scan(0)
        marks[0] = .open
        path.append((0, 0))
        while let last = path.last {
            let (current, next) = (last.unit, last.next)
            if next < units[current].references.count {
                path[path.count - 1].next += 1
                let target = units[current].references[next].unit
                switch marks[target] {
                case .done:
                    continue
                case .open:
                    let loop = path.drop { $0.unit != target }.map { units[$0.unit].pointer } + [units[target].pointer]
                    throw APIError(
                        .invalidDefinition,
                        localized: "the $refs of the OpenAPI document form a cycle (\(Self.chain(loop))): a recursive schema in an operation cannot be expanded")
                case .new:
                    // `path` holds the document and one unit per `$ref` followed.
                    guard path.count <= maximumChain else {
                        let chain = path.dropFirst().map { units[$0.unit].pointer } + [units[target].pointer]
                        throw APIError(
                            .invalidDefinition,
                            localized: "the OpenAPI document follows more than \(maximumChain) $refs one after another (\(Self.chain(chain))) (Limits.maximumReferenceDepth)")
                    }
                    try scan(target)
                    marks[target] = .open
                    path.append((target, 0))
                }
                continue
            }
            // Every unit this one names is done: its expanded measures follow from theirs.
            var unit = units[current]
            var nodes = unit.ownNodes
            var depth = unit.ownDepth
            var chain = 0
            for reference in unit.references {
                let target = units[reference.unit]
                // The `$ref` object itself is replaced by its target.
                let (sum, overflow) = nodes.addingReportingOverflow(target.expandedNodes)
                nodes = overflow ? Int.max : sum
                depth = max(depth, reference.depth - 1 + target.expandedDepth)
                chain = max(chain, target.chain + 1)
            }
            guard nodes <= maximumNodes else { throw tooMuch() }
            guard chain <= maximumChain else {
                throw APIError(
                    .invalidDefinition,
                    localized: "the OpenAPI document follows more than \(maximumChain) $refs one after another (\(Self.chain([unit.pointer, "…"]))) (Limits.maximumReferenceDepth)")
            }
            guard depth <= maximumDepth else {
                throw APIError(
                    .invalidDefinition,
                    localized: "\(unit.pointer) of the OpenAPI document nests deeper than \(maximumDepth) levels once its $refs are expanded (Limits.maximumJSONDepth)")
            }
            unit.expandedNodes = nodes
            unit.expandedDepth = depth
            unit.chain = chain
            units[current] = unit
            marks[current] = .done
            path.removeLast()
        }
        // The document's values outside the operations were read once and count once.
        for item in items {
            var nodes = item.nodes
            for unit in item.references {
                let (sum, overflow) = nodes.addingReportingOverflow(units[unit].expandedNodes)
                nodes = overflow ? Int.max : sum
            }
            pathItemNodes[item.key] = nodes
        }
        referenceDepth = units[0].chain
        expandedDepth = units[0].expandedDepth
        expandedNodes = units[0].expandedNodes
    }

    /// The unit for a local `$ref` (`#/components/schemas/Pet`), added if new; `nil` when it names
    /// nothing (OpenAPIKit then reports the `$ref` itself, without recursing).
    private static func unit(for pointer: String, in root: [String: JSONValue], units: inout [Unit], indexes: inout [String: Int]) -> Int? {
        if let index = indexes[pointer] { return index }
        guard let value = resolve(pointer, in: root) else { return nil }
        units.append(Unit(pointer: pointer, value: value))
        indexes[pointer] = units.count - 1
        return units.count - 1
    }

    /// The value a JSON pointer fragment names (RFC 6901: `~1` is `/`, `~0` is `~`; percent-encoded
    /// as a URI fragment may be).
    static func resolve(_ pointer: String, in root: [String: JSONValue]) -> JSONValue? {
        guard pointer.hasPrefix("#") else { return nil }
        var value = JSONValue.object(root)
        let body = pointer.dropFirst()
        guard !body.isEmpty else { return value }
        guard body.hasPrefix("/") else { return nil }
        for raw in body.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let decoded = String(raw).removingPercentEncoding ?? String(raw)
            let token = decoded.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            switch value {
            case .object(let members):
                guard let member = members[token] else { return nil }
                value = member
            case .array(let items):
                guard let index = Int(token), items.indices.contains(index) else { return nil }
                value = items[index]
            default:
                return nil
            }
        }
        return value
    }

    /// A chain of pointers for a message: the first three and the last two past six.
    private static func chain(_ pointers: [String]) -> String {
        guard pointers.count > 6 else { return pointers.joined(separator: " → ") }
        return (pointers.prefix(3) + ["…"] + pointers.suffix(2)).joined(separator: " → ")
    }
}
