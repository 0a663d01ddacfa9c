import Foundation
import Testing

@testable import Callsign

@Suite("Public suffix list: the rules of publicsuffix.org, shipped with the cookie jar")
struct PublicSuffixListTests {
    private let list = PublicSuffixList.shared

    @Test("the shipped list is read from the resource once, with its ICANN and private sections")
    func shipped() throws {
        #expect(!list.failsClosed, "the resource public_suffix_list.dat was not found or not read")
        #expect(list.count > 9_000)
        // ICANN section.
        for suffix in ["com", "uk", "co.uk", "jp", "tokyo.jp"] { #expect(list.isPublicSuffix(suffix), "\(suffix)") }
        // Private section: hosting services whose customers do not trust each other.
        for suffix in ["github.io", "blogspot.com", "herokuapp.com"] { #expect(list.isPublicSuffix(suffix), "\(suffix)") }
        for name in ["example.com", "example.co.uk", "bbc.co.uk", "someone.github.io", "www.example.com"] {
            #expect(!list.isPublicSuffix(name), "\(name)")
        }
        #expect(list.publicSuffix(of: "www.example.co.uk") == "co.uk")
        #expect(list.publicSuffix(of: "octocat.github.io") == "github.io")
        // The resource is the file scripts/update-public-suffix-list copies, licence header kept.
        let url = try #require(MessageCatalog.callsign.bundle?.url(forResource: "public_suffix_list", withExtension: "dat"))
        let head = String(decoding: try Data(contentsOf: url).prefix(300), as: UTF8.self)
        #expect(head.contains("Mozilla Public") && head.contains("MPL/2.0"))
    }

    @Test("wildcard and exception rules: *.ck and !www.ck, *.kawasaki.jp and !city.kawasaki.jp; the implicit * rule")
    func wildcardsAndExceptions() {
        // `*.ck`: every name directly under ck is a suffix; `!www.ck` is the exception.
        #expect(list.isPublicSuffix("anything.ck"))
        #expect(list.publicSuffix(of: "shop.anything.ck") == "anything.ck")
        #expect(!list.isPublicSuffix("www.ck"))
        #expect(list.publicSuffix(of: "www.ck") == "ck")
        #expect(list.publicSuffix(of: "a.www.ck") == "ck")
        // The same shape two levels down.
        #expect(list.isPublicSuffix("nakahara.kawasaki.jp"))
        #expect(list.publicSuffix(of: "x.nakahara.kawasaki.jp") == "nakahara.kawasaki.jp")
        #expect(!list.isPublicSuffix("city.kawasaki.jp"))
        #expect(list.publicSuffix(of: "www.city.kawasaki.jp") == "kawasaki.jp")
        // A top-level name the list does not know is a suffix all the same (the implicit `*`).
        #expect(list.isPublicSuffix("localhost"))
        #expect(list.isPublicSuffix("notlisted"))
        #expect(list.publicSuffix(of: "a.b.notlisted") == "notlisted")
        #expect(!list.isPublicSuffix("b.notlisted"))
    }

    @Test("Unicode rules are kept in IDNA A-labels too: 公司.cn is xn--55qx5d.cn, ελ is xn--qxam")
    func internationalRules() {
        for suffix in ["xn--55qx5d.cn", "公司.cn", "xn--qxam", "ελ", "XN--55QX5D.CN"] {
            #expect(list.isPublicSuffix(suffix), "\(suffix)")
        }
        #expect(!list.isPublicSuffix("shop.xn--55qx5d.cn"))
        #expect(list.publicSuffix(of: "shop.xn--55qx5d.cn") == "xn--55qx5d.cn")
        #expect(list.publicSuffix(of: "shop.公司.cn") == "xn--55qx5d.cn")
    }

    @Test("names that are no host name count as public suffixes; a damaged or empty list fails closed")
    func hostileNames() {
        for name in ["", ".", "a..co.uk", ".example.com", "example.com.", String(repeating: "a.", count: 200) + "com", "a%41.é"] {
            #expect(list.isPublicSuffix(name), "\(name.prefix(40))")
            #expect(list.publicSuffix(of: name) == nil, "\(name.prefix(40))")
        }
        #expect(PublicSuffixList.unavailable.isPublicSuffix("example.com"))
        #expect(PublicSuffixList.unavailable.isPublicSuffix("www.example.com"))
    }

    @Test("a list read from text: comments, white space, CRLF and bad lines skipped; none or too many rules refused")
    func parsing() async throws {
        let text = "// a comment\r\n\r\nexample  trailing words\r\n*.wild.example\n!keep.wild.example\n\t\nbad..rule\n*.*.x\nco.*.y\n"
        let parsed = try #require(PublicSuffixList(parsing: Data(text.utf8)))
        #expect(parsed.count == 3)
        #expect(parsed.isPublicSuffix("example"))
        #expect(parsed.isPublicSuffix("any.wild.example"))
        #expect(!parsed.isPublicSuffix("keep.wild.example"))
        #expect(!parsed.isPublicSuffix("site.example"))
        #expect(PublicSuffixList(parsing: Data("// only a comment\n\n".utf8)) == nil)
        #expect(PublicSuffixList(parsing: Data()) == nil)
        // Past the rule count: seconds of CPU in a debug build, on a thread of its own.
        let refused = try await onOwnThread {
            PublicSuffixList(parsing: Data((0...PublicSuffixList.maximumRules).map { "r\($0)" }.joined(separator: "\n").utf8)) == nil
        }
        #expect(refused)
    }
}
