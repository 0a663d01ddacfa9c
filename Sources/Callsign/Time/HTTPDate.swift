public import Foundation

/// HTTP dates (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`, and the two obsolete forms
/// recipients must still accept (`Sunday, 06-Nov-94 08:49:37 GMT` and `Sun Nov  6 08:49:37 1994`).
///
/// Parsing is strict and bounded: years 1 to 9999 only, every number checked before any
/// arithmetic, no formatter. Anything else is not a date (`nil`), which HTTP's rules then read
/// as "absent" or "already expired".
///
/// ```swift
/// HTTPDate.format(Date(timeIntervalSince1970: 0))        // "Thu, 01 Jan 1970 00:00:00 GMT"
/// HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")        // 1994-11-06 08:49:37 +0000
/// HTTPDate.parse("Mon, 01 Jan 999999999999 00:00:00 GMT")  // nil
/// ```
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let shortWeekdays = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
    private static let longWeekdays = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
    private static let formattedMonths = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let formattedWeekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    /// Longer text is not a date; checked first, so a hostile megabyte costs nothing.
    private static let maximumLength = 64

    /// The earliest and latest instants an HTTP date can name: 0001-01-01 and 9999-12-31 23:59:59.
    static let earliest: TimeInterval = -62_135_596_800
    static let latest: TimeInterval = 253_402_300_799

    /// Parses an HTTP date in any of its three forms; `nil` when the text is not one.
    ///
    /// - Parameters:
    ///   - text: the field value.
    ///   - now: the moment a two-digit RFC 850 year is read against (RFC 9110 §5.6.7: a year
    ///     more than 50 years in the future means the most recent past year with those digits).
    ///     Default: the current time.
    public static func parse(_ text: String, now: Date = Date()) -> Date? {
        guard text.utf8.count <= maximumLength else { return nil }
        var scanner = ByteScanner(Array(text.utf8))
        scanner.skipSpaces()
        guard let weekday = scanner.letters(), !weekday.isEmpty else { return nil }
        let fields: (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int)?
        if scanner.take(UInt8(ascii: ",")) {
            if shortWeekdays.contains(weekday) {
                fields = imfFixdate(&scanner)
            } else if longWeekdays.contains(weekday) {
                fields = rfc850(&scanner, now: now)
            } else {
                return nil
            }
        } else if shortWeekdays.contains(weekday) {
            fields = asctime(&scanner)
        } else {
            return nil
        }
        scanner.skipSpaces()
        guard let fields, scanner.isAtEnd else { return nil }
        guard (1...9999).contains(fields.year), (1...12).contains(fields.month),
            (1...daysIn(month: fields.month, year: fields.year)).contains(fields.day),
            (0...23).contains(fields.hour), (0...59).contains(fields.minute), (0...60).contains(fields.second)
        else { return nil }
        let days = daysFromCivil(year: fields.year, month: fields.month, day: fields.day)
        let seconds = days * 86_400 + fields.hour * 3600 + fields.minute * 60 + fields.second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// `, 06 Nov 1994 08:49:37 GMT` (after the weekday).
    private static func imfFixdate(_ scanner: inout ByteScanner) -> (Int, Int, Int, Int, Int, Int)? {
        guard scanner.take(UInt8(ascii: " ")), let day = scanner.number(digits: 1...2), scanner.take(UInt8(ascii: " ")),
            let month = month(scanner.letters()), scanner.take(UInt8(ascii: " ")), let year = scanner.number(digits: 4...4),
            scanner.take(UInt8(ascii: " ")), let time = time(&scanner), scanner.take(UInt8(ascii: " ")),
            scanner.letters() == "gmt"
        else { return nil }
        return (year, month, day, time.0, time.1, time.2)
    }

    /// `, 06-Nov-94 08:49:37 GMT` (after the weekday).
    private static func rfc850(_ scanner: inout ByteScanner, now: Date) -> (Int, Int, Int, Int, Int, Int)? {
        guard scanner.take(UInt8(ascii: " ")), let day = scanner.number(digits: 1...2), scanner.take(UInt8(ascii: "-")),
            let month = month(scanner.letters()), scanner.take(UInt8(ascii: "-")), let shortYear = scanner.number(digits: 2...2),
            scanner.take(UInt8(ascii: " ")), let time = time(&scanner), scanner.take(UInt8(ascii: " ")),
            scanner.letters() == "gmt"
        else { return nil }
        let currentYear = civilFromDays(Int(clampedSeconds(now.timeIntervalSince1970) / 86_400)).year
        var year = currentYear - currentYear % 100 + shortYear
        if year > currentYear + 50 { year -= 100 }
        return (year, month, day, time.0, time.1, time.2)
    }

    /// ` Nov  6 08:49:37 1994` (after the weekday).
    private static func asctime(_ scanner: inout ByteScanner) -> (Int, Int, Int, Int, Int, Int)? {
        guard scanner.take(UInt8(ascii: " ")), let month = month(scanner.letters()), scanner.take(UInt8(ascii: " ")) else {
            return nil
        }
        _ = scanner.take(UInt8(ascii: " "))  // a one-digit day is padded with a space
        guard let day = scanner.number(digits: 1...2), scanner.take(UInt8(ascii: " ")), let time = time(&scanner),
            scanner.take(UInt8(ascii: " ")), let year = scanner.number(digits: 4...4)
        else { return nil }
        return (year, month, day, time.0, time.1, time.2)
    }

    private static func time(_ scanner: inout ByteScanner) -> (Int, Int, Int)? {
        guard let hour = scanner.number(digits: 2...2), scanner.take(UInt8(ascii: ":")),
            let minute = scanner.number(digits: 2...2), scanner.take(UInt8(ascii: ":")),
            let second = scanner.number(digits: 2...2)
        else { return nil }
        return (hour, minute, second)
    }

    private static func month(_ name: String?) -> Int? {
        name.flatMap { months.firstIndex(of: $0) }.map { $0 + 1 }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Formats a date as an IMF-fixdate. Dates outside years 1 to 9999 are written as the
    /// nearest of those bounds, since HTTP cannot name them.
    public static func format(_ date: Date) -> String {
        let seconds = Int(clampedSeconds(date.timeIntervalSince1970).rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civilFromDays(days)
        let weekday = formattedWeekdays[((days % 7) + 11) % 7]  // 1970-01-01 was a Thursday
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let paddedYear = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(weekday), \(two(day)) \(formattedMonths[month - 1]) \(paddedYear) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// Seconds since 1970 limited to what an HTTP date can name (NaN counts as 1970).
    private static func clampedSeconds(_ value: TimeInterval) -> TimeInterval {
        value.isNaN ? 0 : min(max(value, earliest), latest)
    }

    // Howard Hinnant's days-from-civil algorithms (proleptic Gregorian calendar). Inputs are
    // bounded to years 1...9999 by the callers, so no step can overflow.
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPart = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPart + 2) / 5 + 1
        let month = monthPart < 10 ? monthPart + 3 : monthPart - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// Reads ASCII text byte by byte, for the field parsers: every read is bounds-checked and
/// numbers have a fixed number of digits, so nothing can overflow.
struct ByteScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index >= bytes.count }

    mutating func skipSpaces() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
    }

    /// Consumes `byte` if it comes next.
    mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// The ASCII letters that come next, lower-cased (at most 16; more is not a name we know).
    mutating func letters() -> String? {
        var result: [UInt8] = []
        while index < bytes.count, result.count <= 16 {
            let lower = bytes[index] | 0x20
            guard lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else { break }
            result.append(lower)
            index += 1
        }
        return result.count > 16 ? nil : String(decoding: result, as: UTF8.self)
    }

    /// A decimal number of exactly as many digits as `digits` allows (at most 9).
    mutating func number(digits: ClosedRange<Int>) -> Int? {
        var value = 0
        var count = 0
        while index < bytes.count, count < digits.upperBound, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            value = value * 10 + Int(bytes[index] - 0x30)
            count += 1
            index += 1
        }
        guard digits.contains(count) else { return nil }
        // More digits than allowed: not this field.
        if index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { return nil }
        return value
    }
}
