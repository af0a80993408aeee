import Foundation

/// Parses and formats HTTP dates (RFC 9110 §5.6.7) without `DateFormatter`: IMF-fixdate,
/// and the obsolete RFC 850 and asctime forms, which recipients must accept.
public enum HTTPDate {
    private static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The date in `text`, or `nil` when it is not a valid HTTP date in any of the three forms.
    ///
    /// - `Sun, 06 Nov 1994 08:49:37 GMT` (IMF-fixdate)
    /// - `Sunday, 06-Nov-94 08:49:37 GMT` (RFC 850; two-digit years more than 50 years in the
    ///   future are taken as the past century, RFC 9110 §5.6.7)
    /// - `Sun Nov  6 08:49:37 1994` (asctime)
    ///
    /// Strict, as RFC 9110 §5.6.7 writes them: exact spacing and punctuation, day and month names
    /// as written there, two-digit hours, minutes and seconds, the literal `GMT`. Anything else —
    /// extra spaces, a missing comma, dashes or periods elsewhere, a one-digit hour, a two-digit
    /// year in IMF-fixdate, another zone — is not a date (so an `Expires` in it means stale).
    /// With `namesInAnyCase`, the day and month names and `GMT` may be in any case (`mon`, `JAN`,
    /// `gmt`), as the cache reads `Expires`; everything else stays strict.
    public static func parse(_ text: some StringProtocol, now: Date = Date(), namesInAnyCase: Bool = false) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count <= 64 else { return nil }
        if bytes.count == 29 { return parseIMFFixdate(bytes, anyCase: namesInAnyCase) }
        if bytes.count == 24 { return parseAsctime(bytes, anyCase: namesInAnyCase) }
        return parseRFC850(bytes, now: now, anyCase: namesInAnyCase)
    }

    /// `date` as an IMF-fixdate, such as `Sun, 06 Nov 1994 08:49:37 GMT`.
    public static func format(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        var days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let weekday = Int((days % 7 + 11) % 7)  // 1970-01-01 was a Thursday
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

    /// `Www, DD Mmm YYYY HH:MM:SS GMT` at fixed offsets, without allocating strings.
    private static func parseIMFFixdate(_ b: [UInt8], anyCase: Bool) -> Date? {
        guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
            b[25] == 0x20, spelled("GMT", b[26..<29], anyCase),
            dayNames.contains(where: { spelled($0, b[0..<3], anyCase) }),
            let day = number(b, 5..<7), let year = number(b, 12..<16), let clock = time(b, at: 17)
        else { return nil }
        return make(day: day, month: monthNumber(b[8..<11], anyCase), year: year, hour: clock.hour, minute: clock.minute, second: clock.second)
    }

    /// `Www Mmm DD HH:MM:SS YYYY`, the day as two digits or a space and a digit.
    private static func parseAsctime(_ b: [UInt8], anyCase: Bool) -> Date? {
        guard b.count == 24, b[3] == 0x20, b[7] == 0x20, b[10] == 0x20, b[19] == 0x20,
            dayNames.contains(where: { spelled($0, b[0..<3], anyCase) }),
            let day = b[8] == 0x20 ? number(b, 9..<10) : number(b, 8..<10),
            let year = number(b, 20..<24), let clock = time(b, at: 11)
        else { return nil }
        return make(day: day, month: monthNumber(b[4..<7], anyCase), year: year, hour: clock.hour, minute: clock.minute, second: clock.second)
    }

    /// `Weekday, DD-Mmm-YY HH:MM:SS GMT`, the weekday spelled out.
    private static func parseRFC850(_ b: [UInt8], now: Date, anyCase: Bool) -> Date? {
        guard let comma = b.firstIndex(of: UInt8(ascii: ",")), b.count == comma + 24,
            longDayNames.contains(where: { spelled($0, b[0..<comma], anyCase) })
        else { return nil }
        let rest = Array(b[(comma + 1)...])  // " DD-Mmm-YY HH:MM:SS GMT"
        guard rest[0] == 0x20, rest[3] == UInt8(ascii: "-"), rest[7] == UInt8(ascii: "-"), rest[10] == 0x20, rest[19] == 0x20,
            spelled("GMT", rest[20..<23], anyCase),
            let day = number(rest, 1..<3), let yy = number(rest, 8..<10), let clock = time(rest, at: 11)
        else { return nil }
        let thisYear = Calendar(identifier: .gregorian).component(.year, from: now)
        var year = (thisYear / 100) * 100 + yy
        if year > thisYear + 50 { year -= 100 }
        return make(day: day, month: monthNumber(rest[4..<7], anyCase), year: year, hour: clock.hour, minute: clock.minute, second: clock.second)
    }

    /// Whether `bytes` spell `name` — exactly, or, `anyCase`, with its letters in any case.
    private static func spelled(_ name: String, _ bytes: ArraySlice<UInt8>, _ anyCase: Bool) -> Bool {
        guard anyCase else { return name.utf8.elementsEqual(bytes) }
        return name.utf8.elementsEqual(bytes) { expected, byte in
            // (ASCII letters only: setting bit 0x20 lowercases them; the names hold nothing else.)
            expected | 0x20 == byte | 0x20 && (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
        }
    }

    private static let longDayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

    /// The decimal number in `b[range]`, all digits.
    private static func number(_ b: [UInt8], _ range: Range<Int>) -> Int? {
        var value = 0
        for index in range {
            guard b[index] >= 0x30, b[index] <= 0x39 else { return nil }
            value = value * 10 + Int(b[index] - 0x30)
        }
        return value
    }

    /// `HH:MM:SS` at `offset`, two digits each.
    private static func time(_ b: [UInt8], at offset: Int) -> (hour: Int, minute: Int, second: Int)? {
        guard b[offset + 2] == UInt8(ascii: ":"), b[offset + 5] == UInt8(ascii: ":"),
            let hour = number(b, offset..<(offset + 2)), let minute = number(b, (offset + 3)..<(offset + 5)),
            let second = number(b, (offset + 6)..<(offset + 8))
        else { return nil }
        return (hour, minute, second)
    }

    /// The month of a name spelled as RFC 9110 does (`Jan` … `Dec`; `anyCase`: in any case).
    private static func monthNumber(_ name: ArraySlice<UInt8>, _ anyCase: Bool) -> Int? {
        monthNames.firstIndex(where: { spelled($0, name, anyCase) }).map { $0 + 1 }
    }

    private static func make(day: Int?, month: Int?, year: Int?, hour: Int, minute: Int, second: Int) -> Date? {
        guard let day, let month, let year, (1...31).contains(day), (1...9999).contains(year),
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
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
