import Foundation
import Testing

@testable import Callsign

@Suite("JSON numbers as written, and JSON text read and written without Foundation's coders", .hangGuard)
struct JSONNumberTests {
    @Test("numbers Int and Double would rewrite keep their text; the others stay Int and Double")
    func numbersKeepTheirText() throws {
        let value = try JSONValue(parsing: Data(#"{"big":12345678901234567890,"pad":1.50,"exp":1e3,"i":7,"d":0.5,"neg":-0}"#.utf8))
        #expect(value["big"] == .number(try #require(JSONNumber("12345678901234567890"))))
        #expect(value["pad"] == .number(try #require(JSONNumber("1.50"))))
        #expect(value["exp"] == .number(try #require(JSONNumber("1e3"))))
        #expect(value["i"] == .int(7))
        #expect(value["d"] == .double(0.5))
        #expect(value["neg"] == .double(-0.0))
        #expect(String(decoding: value.jsonData(), as: UTF8.self) == #"{"big":12345678901234567890,"d":0.5,"exp":1e3,"i":7,"neg":-0,"pad":1.50}"#)
        #expect(value["exp"]?.intValue == 1000)
        #expect(value["big"]?.intValue == nil)
    }

    @Test("a JSONNumber is only ever JSON number text", arguments: ["", "+1", "01", "1.", ".5", "1e", "NaN", "Infinity", "1 ", "0x10", "1,2", "\"1\""])
    func invalidNumberText(_ text: String) {
        #expect(JSONNumber(text) == nil)
    }

    @Test("the text reaches the query, the path and the JSON body unchanged")
    func numbersOnTheWire() throws {
        let big = JSONValue.number(try #require(JSONNumber("12345678901234567890")))
        #expect(big.scalarText == "12345678901234567890")
        let factory = RequestFactory(configuration: .init { $0.baseURL = URL(string: "http://127.0.0.1:1/") })
        var request = Request.get("items/{id}", parameters: ["id": big, "at": .number(try #require(JSONNumber("1.50")))])
        #expect(try factory.prepare(&request).head.path == "/items/12345678901234567890?at=1.50")
        var post = Request.post("items", parameters: ["id": big, "ratio": .number(try #require(JSONNumber("2.50e-3")))])
        let body = try #require(try factory.prepare(&post).body?.inMemoryData)
        #expect(String(decoding: body, as: UTF8.self) == #"{"id":12345678901234567890,"ratio":2.50e-3}"#)
        var form = Request.post("items", contentType: .formURLEncoded, parameters: ["id": big])
        let formBody = try #require(try factory.prepare(&form).body?.inMemoryData)
        #expect(String(decoding: formBody, as: UTF8.self) == "id=12345678901234567890")
    }

    @Test("compact and pretty output are byte for byte what JSONEncoder writes")
    func writerMatchesJSONEncoder() throws {
        let values: [JSONValue] = [
            .null, true, 0, -42, .int(Int.max), .int(Int.min), 0.1, 1.0, -0.0, 1e20, 1e-7, 1.2345678901234568e+20, .double(.leastNonzeroMagnitude), 12345678.9,
            "", "plain", "quote \" backslash \\ slash / é 😀", "\u{0}\u{1}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1B}\u{1F}\u{7F}\u{2028}",
            [], [:], [1, "a", nil, [[]], [:]], ["b": 1, "B": 2, "a": ["x": [], "y": [:]], "10": 4, "9": 5, "é": 6, "_": [1, 2]],
        ]
        for pretty in [false, true] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
            for value in values {
                let expected = String(decoding: try encoder.encode(value), as: UTF8.self)
                #expect(String(decoding: value.jsonData(prettyPrinted: pretty), as: UTF8.self) == expected)
            }
        }
        #expect(String(decoding: JSONValue.double(.infinity).jsonData(), as: UTF8.self) == "null")
    }

    @Test("the reader accepts what JSONDecoder accepts and reads the same value")
    func readerMatchesJSONDecoder() throws {
        let texts = [
            "null", " true ", "[1, 2.5, -3e2, \"x\"]", "\u{FEFF}{\"a\": {\"b\": [null, false]}}", #""\u00e9\ud83d\ude00\/\b\f\n\r\t""#,
            #"{"a": 1, "a": 2}"#, "0", "-0.0", "1E+2", "[]", "{}", " \n\t\r[ ] ",
        ]
        for text in texts {
            let ours = try JSONValue(parsing: Data(text.utf8))
            let foundation = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
            // Numbers compare by value: ours keeps 1E+2's text where Foundation gives 100.0.
            #expect(ours.jsonData() == foundation.jsonData() || ours.normalized == foundation.normalized, "\(text)")
        }
    }

    @Test("malformed JSON is refused with the place it stops", arguments: [
        "", "[", "{\"a\" 1}", "[1,]", "{\"a\":1,}", "tru", "\"unterminated", "\"tab\tinside\"", "[01]", "1 2", #""\ud800""#,
        #""\udc00""#, #""\x""#, #""\u12"#, "\u{FEFF}", "nul", "[1 2]", "{1:2}", "-", "1.e3",
    ])
    func malformed(_ text: String) {
        let error = #expect(throws: APIError.self) { try JSONValue(parsing: Data(text.utf8)) }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("at byte") == true)
    }

    @Test("invalid UTF-8 in a string and nesting past the limit are refused, not trapped")
    func bytesAndDepth() {
        #expect(throws: APIError.self) { try JSONValue(parsing: Data([0x22, 0xFF, 0xFE, 0x22])) }
        let deep = Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
        let error = #expect(throws: APIError.self) { try JSONValue(parsing: deep) }
        #expect(error?.message.contains("deeper than 512") == true)
        let ok = Data((String(repeating: "[", count: 512) + String(repeating: "]", count: 512)).utf8)
        #expect(throws: Never.self) { try JSONValue(parsing: ok) }
    }

    @Test("a JSON definitions file keeps its numbers, and its syntax errors name line and column")
    func definitionsFile() throws {
        let text = #"{"A": {"path": "a", "parameters": {"id": 12345678901234567890}}}"#
        let definitions = try APIDefinitions(data: Data(text.utf8), format: .json)
        #expect(definitions["A"]?.parameters?["id"] == .number(try #require(JSONNumber("12345678901234567890"))))
        let broken = "{\n  \"A\": {\n    \"path\": \"a\",\n    oops\n  }\n}"
        let error = #expect(throws: APIError.self) { try APIDefinitions(data: Data(broken.utf8), format: .json) }
        #expect(error?.message.contains("line 4, column 5") == true)
    }
}

extension JSONValue {
    /// Numbers as doubles, for comparing values read by two readers.
    fileprivate var normalized: JSONValue {
        switch self {
        case .int(let value): .double(Double(value))
        case .number(let value): .double(value.doubleValue ?? .nan)
        case .array(let elements): .array(elements.map(\.normalized))
        case .object(let members): .object(members.mapValues(\.normalized))
        default: self
        }
    }
}
