package import Foundation

/// The Public Suffix List (publicsuffix.org): the names under which unrelated parties register
/// their own (`com`, `co.uk`, `github.io`), which a cookie's `Domain` attribute must never name.
///
/// RFC 6265bis §5.7 (the storage model, "reject public suffixes"): a cookie whose `Domain` is a
/// public suffix is kept only for the host that is that suffix itself, as a host-only cookie;
/// from any other host it is ignored. Without the list, `a.co.uk` could set a cookie that the
/// jar sends to every site under `co.uk`.
///
/// The list ships in the `Callsign` target as the resource `public_suffix_list.dat`, copied
/// verbatim (its MPL-2.0 header kept) from Debian's `publicsuffix` package by
/// `scripts/update-public-suffix-list`. It is read once per process, on the first cookie that
/// names a `Domain`, through ``FileReader`` with ``maximumFileSize``, into one dictionary from a
/// rule's name to its kind, so a lookup costs one dictionary probe per label of the name.
///
/// Both sections of the list apply, the ICANN one and the private one, as in every browser and
/// in curl's libpsl: the private section names hosting services (`github.io`, `blogspot.com`,
/// `herokuapp.com`) whose customers trust each other no more than two `.com` sites do.
///
/// Rules written in Unicode (`公司.cn`) are also kept in IDNA A-labels (`xn--55qx5d.cn`,
/// RFC 5891), the form a URL's host takes, converted by Foundation's own IDNA.
///
/// ```swift
/// PublicSuffixList.shared.isPublicSuffix("co.uk")          // true
/// PublicSuffixList.shared.isPublicSuffix("example.co.uk")  // false
/// PublicSuffixList.shared.publicSuffix(of: "a.b.kawasaki.jp") // "b.kawasaki.jp" (a `*` rule)
/// ```
package struct PublicSuffixList: Sendable {
    /// The largest list file read: 4 MiB. The list is about 250 KB and grows slowly.
    package static let maximumFileSize = 4 << 20
    /// The most rules kept; a list with more is treated as damaged.
    package static let maximumRules = 100_000

    /// The list shipped with Callsign, read on first use. When the resource is missing or
    /// damaged, the list fails closed: every name counts as a public suffix, so a `Domain`
    /// attribute is honoured only when it names the answering host itself.
    package static let shared: PublicSuffixList = bundled() ?? unavailable

    /// The list when none could be read: every name is a public suffix.
    package static let unavailable = PublicSuffixList(rules: [:], failsClosed: true)

    /// What a name in the list stands for; one name can be several (`ck` has no rule, `*.ck` and
    /// `!www.ck` give it `wildcard`, and `www.ck` its `exception`).
    private struct Kind: OptionSet, Sendable {
        let rawValue: UInt8
        /// The name itself is a rule.
        static let rule = Kind(rawValue: 1)
        /// `*.name` is a rule: every label under the name is a public suffix.
        static let wildcard = Kind(rawValue: 2)
        /// `!name` is a rule: the name is not a public suffix, though a `*` rule covers it.
        static let exception = Kind(rawValue: 4)
    }

    private let rules: [String: Kind]
    /// Whether the list could not be read and every name counts as a public suffix.
    package let failsClosed: Bool

    private init(rules: [String: Kind], failsClosed: Bool) {
        self.rules = rules
        self.failsClosed = failsClosed
    }

    /// The number of names the list holds (Unicode rules count twice: as written and in A-labels).
    package var count: Int { rules.count }

    /// A list read from the text of a `public_suffix_list.dat`, or `nil` when it holds no rule or
    /// more than ``maximumRules``.
    ///
    /// The file format of publicsuffix.org: one rule a line, read up to its first white space;
    /// `//` starts a comment line; `*.` makes a wildcard rule and `!` an exception. Lines that
    /// are no valid rule (an empty label, a `*` elsewhere, a name past 253 bytes) are skipped.
    package init?(parsing data: Data) {
        var rules: [String: Kind] = [:]
        var count = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            let rule = line.prefix { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") && $0 != UInt8(ascii: "\r") }
            guard !rule.isEmpty, !rule.starts(with: "//".utf8) else { continue }
            count += 1
            guard count <= Self.maximumRules else { return nil }
            var text = String(decoding: rule, as: UTF8.self).lowercased()
            var kind = Kind.rule
            if text.hasPrefix("!") {
                text.removeFirst()
                kind = .exception
            } else if text.hasPrefix("*.") {
                text.removeFirst(2)
                kind = .wildcard
            }
            guard text.utf8.count <= 253, !text.contains("*"), !text.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty)
            else { continue }
            rules[text, default: []].insert(kind)
            if let ascii = Self.asciiName(text), ascii != text {
                rules[ascii, default: []].insert(kind)
            }
        }
        guard !rules.isEmpty else { return nil }
        self.init(rules: rules, failsClosed: false)
    }

    /// The list in Callsign's resource bundle, found as the translations are (never through
    /// `Bundle.module`, which stops the process when the bundle is missing).
    private static func bundled() -> PublicSuffixList? {
        guard let url = MessageCatalog.callsign.bundle?.url(forResource: "public_suffix_list", withExtension: "dat"),
            let data = try? FileReader.read(
                url, limit: maximumFileSize,
                unreadable: { APIError(.storage, "the public suffix list cannot be read", underlyingError: $0) },
                tooLarge: { APIError(.storage, "the public suffix list is larger than \($0) bytes") })
        else { return nil }
        return PublicSuffixList(parsing: data)
    }

    /// Whether `domain` (lower-cased, without a trailing dot) is a public suffix: a name under
    /// which others register names, such as `com`, `co.uk` or `github.io`. A name of one label is
    /// always one (the list's implicit `*` rule); a name with an empty label is treated as one.
    package func isPublicSuffix(_ domain: String) -> Bool {
        guard !failsClosed, let labels = Self.labels(of: domain) else { return true }
        return suffixLabelCount(labels) == labels.count
    }

    /// The public suffix `domain` is registered under (`co.uk` for `www.example.co.uk`), in
    /// A-labels; `nil` for a name with an empty label or one that has no A-label form.
    package func publicSuffix(of domain: String) -> String? {
        guard let labels = Self.labels(of: domain) else { return nil }
        let count = failsClosed ? labels.count : suffixLabelCount(labels)
        return labels.suffix(count).joined(separator: ".")
    }

    /// How many labels, from the right, the prevailing rule covers (the algorithm of
    /// publicsuffix.org/list: an exception wins and covers one label less than it has, else
    /// the rule with the most labels, else the implicit `*`). One dictionary probe per label.
    private func suffixLabelCount(_ labels: [Substring]) -> Int {
        var longest = 1
        var suffix = ""
        for covered in 1...labels.count {
            let label = labels[labels.count - covered]
            suffix = covered == 1 ? String(label) : String(label) + "." + suffix
            guard let kind = rules[suffix] else { continue }
            if kind.contains(.exception) { return covered - 1 }
            if kind.contains(.rule) { longest = max(longest, covered) }
            if kind.contains(.wildcard), covered < labels.count { longest = max(longest, covered + 1) }
        }
        return longest
    }

    /// The labels of `domain` in A-labels, or `nil` when one is empty or it has no A-label form.
    private static func labels(of domain: String) -> [Substring]? {
        guard !domain.isEmpty, domain.utf8.count <= 253, let ascii = asciiName(domain.lowercased()) else { return nil }
        let labels = ascii.split(separator: ".", omittingEmptySubsequences: false)
        return labels.contains(where: \.isEmpty) ? nil : labels
    }

    /// `name` in IDNA A-labels (RFC 5891 §4), as a URL's host carries it: ASCII names as they
    /// are, others through Foundation's IDNA; `nil` when the result is not a plain host name.
    private static func asciiName(_ name: String) -> String? {
        if name.utf8.allSatisfy({ $0 < 0x80 }) { return name }
        var components = URLComponents()
        components.host = name
        guard let encoded = components.encodedHost?.lowercased(),
            encoded.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2E })
        else { return nil }
        return encoded
    }
}
