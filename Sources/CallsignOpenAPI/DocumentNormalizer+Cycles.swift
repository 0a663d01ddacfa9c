import Callsign
import Foundation

/// Recursive `$ref`s: cut where the cycle closes, before anything measures or expands the document.
extension DocumentNormalizer {
    /// Cuts every `$ref` cycle the operations reach: the `$ref` that closes a cycle (found by a
    /// depth-first walk from `paths`, on an explicit stack) becomes `{}`, a schema that accepts
    /// any value, so the rest of the schema still expands and checks. OpenAPIKit expands each
    /// `$ref` by copying its target and cannot expand a recursive one at all: a recursive error
    /// type (Discord's, Stripe's expandable objects) would otherwise make every operation that
    /// reaches it unusable.
    mutating func cutCycles(_ root: inout [String: JSONValue]) {
        guard root["paths"] != nil else { return }
        var references: [String: Set<String>] = [:]
        func targets(of pointer: String) -> Set<String> {
            if let known = references[pointer] { return known }
            var found: Set<String> = []
            var stack: [JSONValue] = DocumentStructure.resolve(pointer, in: root).map { [$0] } ?? []
            while let value = stack.popLast() {
                switch value {
                case .object(let members):
                    if case .string(let target)? = members["$ref"], target.hasPrefix("#/") { found.insert(target) }
                    stack.append(contentsOf: members.values)
                case .array(let items):
                    stack.append(contentsOf: items)
                default:
                    break
                }
            }
            references[pointer] = found
            return found
        }
        var open: Set<String> = []
        var done: Set<String> = []
        var backEdges: [(from: String, to: String)] = []
        var path: [(pointer: String, next: [String])] = [("#/paths", targets(of: "#/paths").sorted())]
        open.insert("#/paths")
        while !path.isEmpty {
            guard let target = path[path.count - 1].next.popLast() else {
                let finished = path.removeLast().pointer
                open.remove(finished)
                done.insert(finished)
                continue
            }
            if open.contains(target) {
                backEdges.append((path[path.count - 1].pointer, target))
            } else if !done.contains(target), DocumentStructure.resolve(target, in: root) != nil {
                open.insert(target)
                path.append((target, targets(of: target).sorted()))
            }
        }
        for (from, to) in backEdges {
            guard var value = DocumentStructure.resolve(from, in: root) else { continue }
            Self.replaceReferences(to: to, in: &value)
            Self.set(value, at: from, in: &root)
            found("recursive", "\(from): the $ref to \(to) is recursive; below it any value is accepted" as LocalizedMessage)
        }
    }

    /// `value` with every `{"$ref": target}` replaced by `{}`, not following other `$ref`s.
    private static func replaceReferences(to target: String, in value: inout JSONValue) {
        switch value {
        case .object(var members):
            if members["$ref"] == .string(target) {
                value = .object([:])
                return
            }
            for key in Array(members.keys) {
                guard var member = members[key] else { continue }
                replaceReferences(to: target, in: &member)
                members[key] = member
            }
            value = .object(members)
        case .array(var items):
            for index in items.indices { replaceReferences(to: target, in: &items[index]) }
            value = .array(items)
        default:
            break
        }
    }

    /// Sets the value a local JSON pointer names (RFC 6901); nothing when it names nothing.
    static func set(_ newValue: JSONValue, at pointer: String, in root: inout [String: JSONValue]) {
        let tokens = pointer.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false).map { raw in
            (String(raw).removingPercentEncoding ?? String(raw)).replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        }
        guard let first = tokens.first, var value = root[first] else { return }
        if tokens.count == 1 {
            root[first] = newValue
            return
        }
        guard set(newValue, tokens: tokens.dropFirst(), in: &value) else { return }
        root[first] = value
    }

    private static func set(_ newValue: JSONValue, tokens: ArraySlice<String>, in value: inout JSONValue) -> Bool {
        guard let token = tokens.first else {
            value = newValue
            return true
        }
        switch value {
        case .object(var members):
            guard var member = members[token], set(newValue, tokens: tokens.dropFirst(), in: &member) else { return false }
            members[token] = member
            value = .object(members)
            return true
        case .array(var items):
            guard let index = Int(token), items.indices.contains(index), set(newValue, tokens: tokens.dropFirst(), in: &items[index]) else {
                return false
            }
            value = .array(items)
            return true
        default:
            return false
        }
    }
}
