import Foundation

/// Parses and formats HTTP dates (RFC 9110 §5.6.7) without `DateFormatter`: IMF-fixdate,
/// and the obsolete RFC 850 and asctime forms, which recipients must accept.
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The date in `text`, or `nil` when it is not a valid HTTP date in any of the three forms.
    ///
    /// - `Sun, 06 Nov 1994 08:49:37 GMT` (IMF-fixdate)
    /// - `Sunday, 06-Nov-94 08:49:37 GMT` (RFC 850; two-digit years more than 50 years in the
    ///   future are taken as the past century, RFC 9110 §5.6.7)
    /// - `Sun Nov  6 08:49:37 1994` (asctime)
    public static func parse(_ text: some StringProtocol, now: Date = Date()) -> Date? {
        guard text.utf8.count <= 64 else { return nil }
        if let date = parseIMFFixdate(Array(text.utf8)) { return date }
        let tokens = String(text).split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        if tokens.count == 6, tokens[0].hasSuffix(","), tokens[5].uppercased() == "GMT" {
            // IMF-fixdate: day, DD Mon YYYY HH:MM:SS GMT
            guard tokens[1].count == 2, tokens[3].count == 4 else { return nil }
            return make(day: Int(tokens[1]), month: month(tokens[2]), year: Int(tokens[3]), time: tokens[4])
        }
        if tokens.count == 4, tokens[0].hasSuffix(","), tokens[3].uppercased() == "GMT" {
            // RFC 850: weekday, DD-Mon-YY HH:MM:SS GMT
            let parts = tokens[1].split(separator: "-").map(String.init)
            guard parts.count == 3, parts[0].count == 2, parts[2].count == 2, let yy = Int(parts[2]) else { return nil }
            let thisYear = Calendar(identifier: .gregorian).component(.year, from: now)
            var year = (thisYear / 100) * 100 + yy
            if year > thisYear + 50 { year -= 100 }
            return make(day: Int(parts[0]), month: month(parts[1]), year: year, time: tokens[2])
        }
        if tokens.count == 5, !tokens[0].hasSuffix(",") {
            // asctime: Sun Nov  6 08:49:37 1994
            guard tokens[2].count <= 2, tokens[4].count == 4 else { return nil }
            return make(day: Int(tokens[2]), month: month(tokens[1]), year: Int(tokens[4]), time: tokens[3])
        }
        return nil
    }

    /// `date` as an IMF-fixdate, such as `Sun, 06 Nov 1994 08:49:37 GMT`.
    public static func format(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        var days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let weekday = Int((days % 7 + 11) % 7) // 1970-01-01 was a Thursday
        // Civil-from-days (Howard Hinnant's algorithm).
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        // IMF-fixdate has a four-digit year: years before 1000 are zero-padded.
        let yearText = year >= 0 && year < 1000 ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
        return "\(dayNames[weekday]), \(two(day)) \(monthNames[Int(month) - 1]) \(yearText) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// The common case without allocating strings: `Www, DD Mmm YYYY HH:MM:SS GMT` at fixed offsets.
    private static func parseIMFFixdate(_ b: [UInt8]) -> Date? {
        guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
              b[19] == UInt8(ascii: ":"), b[22] == UInt8(ascii: ":"), b[25] == 0x20,
              b[26] == UInt8(ascii: "G"), b[27] == UInt8(ascii: "M"), b[28] == UInt8(ascii: "T") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                guard b[index] >= 0x30, b[index] <= 0x39 else { return nil }
                value = value * 10 + Int(b[index] - 0x30)
            }
            return value
        }
        let name = String(decoding: b[8..<11], as: UTF8.self)
        guard let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19), let minute = number(20..<22),
              let second = number(23..<25) else { return nil }
        return make(day: day, month: month(name), year: year, hour: hour, minute: minute, second: second)
    }

    private static func month(_ name: String) -> Int? {
        months.firstIndex(of: name.lowercased()).map { $0 + 1 }
    }

    private static func make(day: Int?, month: Int?, year: Int?, time: String) -> Date? {
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }),
              let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]) else { return nil }
        return make(day: day, month: month, year: year, hour: hour, minute: minute, second: second)
    }

    private static func make(day: Int?, month: Int?, year: Int?, hour: Int, minute: Int, second: Int) -> Date? {
        guard let day, let month, let year, (1...31).contains(day), (1...9999).contains(year),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second) else { return nil }
        let daysInMonth = [31, (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day <= daysInMonth[month - 1] else { return nil }
        // Days-from-civil (Howard Hinnant's algorithm).
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59))
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
