import Callsign
import Foundation
import Testing

@Suite("JSONText: pretty-printing that changes nothing but whitespace", .hangGuard)
struct JSONTextTests {
    private func pretty(_ text: String, colors: JSONText.Colors? = nil) -> String? {
        JSONText.prettyPrinted(Data(text.utf8), colors: colors).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("key order, number text and string escapes stay exactly as the server sent them")
    func faithful() {
        let body = #"{"n":12345678901234567890,"x":1.10,"b":2,"a":1,"s":"caf\u00e9 \"q\" \/","e":1E+2}"#
        #expect(
            pretty(body) == """
                {
                  "n": 12345678901234567890,
                  "x": 1.10,
                  "b": 2,
                  "a": 1,
                  "s": "caf\\u00e9 \\"q\\" \\/",
                  "e": 1E+2
                }

                """)
    }

    @Test("nesting, empty containers and top-level scalars")
    func shapes() {
        #expect(pretty(#"[1,{"a":[]},{},[ ],"x"]"#) == "[\n  1,\n  {\n    \"a\": []\n  },\n  {},\n  [],\n  \"x\"\n]\n")
        #expect(pretty("  42 ") == "42\n")
        #expect(pretty("null") == "null\n")
        #expect(pretty(#""only a string""#) == "\"only a string\"\n")
    }

    @Test("anything that is not exactly one JSON value is refused, so it is shown as it is")
    func refusals() {
        for bad in [
            "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{1:2}", "01", "1.", "-", "+1", ".5", "1e", "tru", "nul",
            "\"unterminated", "\"bad \\x escape\"", "\"\\u12\"", "\"tab\there\"", "[1] [2]", "1 2", "<html>", "{\"a\":1}}",
        ] {
            #expect(pretty(bad) == nil, "\(bad.debugDescription) should be refused")
            #expect(!JSONText.isValid(Data(bad.utf8)))
        }
        // Surrogates come in pairs.
        #expect(pretty(#""\ud800""#) == nil)
        #expect(pretty(#""\udc00""#) == nil)
        #expect(pretty(#""\ud83d\ude00""#) != nil)
        // Not UTF-8 inside a string.
        #expect(JSONText.prettyPrinted(Data([0x22, 0xFF, 0xFE, 0x22])) == nil)
    }

    @Test("a string's bytes are checked wherever they fall: a quote, backslash, control byte or bad UTF-8 at every offset of the eight-byte scan")
    func stringBytesAtEveryOffset() {
        // Each kind of byte, placed at every position of strings up to 24 bytes long, starting at
        // every alignment: the eight-at-a-time scan must judge it exactly as the byte-wise one.
        let kinds: [(bytes: [UInt8], valid: Bool)] = [
            ([0x00], false), ([0x1F], false), ([0x20], true), ([0x21], true), ([0x7F], true), ([0x22], false),
            ([0x5C], false), ([0x5C, 0x6E], true), ([0x80], false), ([0xFF], false), ([0xC3, 0xA9], true),
            ([0xE2, 0x82, 0xAC], true), ([0xED, 0xA0, 0x80], false),
        ]
        for shift in 0..<8 {
            for length in 0..<24 {
                for position in 0...length {
                    for kind in kinds {
                        var text = [UInt8](repeating: 0x20, count: shift) + [0x22]
                        text += [UInt8](repeating: UInt8(ascii: "a"), count: position) + kind.bytes
                        text += [UInt8](repeating: UInt8(ascii: "c"), count: length - position) + [0x22]
                        #expect(JSONText.isValid(Data(text)) == kind.valid, "\(kind.bytes) at \(position) of \(length), shift \(shift)")
                    }
                }
            }
        }
        #expect(JSONText.isValid(Data(#"{"summary":"A classic single-fin longboard for small, clean waves. "}"#.utf8)))
    }

    @Test("nesting deeper than the limit is refused without recursion")
    func depth() {
        let deep = String(repeating: "[", count: JSONText.maximumDepth + 1) + String(repeating: "]", count: JSONText.maximumDepth + 1)
        #expect(pretty(deep) == nil)
        let fine = String(repeating: "[", count: JSONText.maximumDepth) + String(repeating: "]", count: JSONText.maximumDepth)
        #expect(pretty(fine) != nil)
    }

    @Test("objects and arrays nested across the stack's 64-level words close in the right order, and a wrong closer is refused at any level")
    func mixedNesting() {
        // Level i is an object when i % 3 == 0, else an array: the pattern crosses words at 64, 128 and 192.
        for depth in [1, 63, 64, 65, 127, 128, 129, 200, JSONText.maximumDepth] {
            var opening = ""
            var closing: [String] = []
            for level in 0..<depth {
                if level % 3 == 0 {
                    opening += #"{"k":"#
                    closing.append("}")
                } else {
                    opening += "["
                    closing.append("]")
                }
            }
            let text = opening + "1" + closing.reversed().joined()
            #expect(JSONText.isValid(Data(text.utf8)), "depth \(depth)")
            #expect(pretty(text) != nil, "depth \(depth)")
            // The same with the closer of one level swapped for the other kind.
            for wrong in Set([0, depth / 2, depth - 1]) {
                var closers = Array(closing.reversed())
                let index = depth - 1 - wrong
                closers[index] = closers[index] == "}" ? "]" : "}"
                #expect(!JSONText.isValid(Data((opening + "1" + closers.joined()).utf8)), "depth \(depth), level \(wrong)")
            }
        }
    }

    @Test("colours wrap each token kind and nothing else")
    func colors() {
        let palette = JSONText.Colors(key: "<k>", string: "<s>", number: "<n>", literal: "<l>", punctuation: "", reset: "</>")
        #expect(pretty(#"{"a":"b","c":[1,true]}"#, colors: palette) == "{\n  <k>\"a\"</>: <s>\"b\"</>,\n  <k>\"c\"</>: [\n    <n>1</>,\n    <l>true</>\n  ]\n}\n")
    }
}
