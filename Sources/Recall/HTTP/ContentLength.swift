/// A message's `Content-Length` fields read as RFC 9110 §8.6 says, with the size checked before
/// any arithmetic is done with it.
///
/// The field is `1*DIGIT`: no sign, no spaces inside, no other characters. A list of identical
/// values (`5, 5`, or the field twice) is one length, as the RFC allows; differing values
/// (`5,6`) make the framing invalid. A number of more than ``maxDigits`` digits is beyond any
/// storage (and near `Int.max` a sum with it would trap): it is refused too, never converted.
/// A response whose field is ``invalid`` is never stored, and its body is not checked against it.
enum ContentLength: Equatable, Sendable {
    /// No `Content-Length` field.
    case absent
    /// One length, at most ``maxDigits`` digits.
    case length(Int)
    /// A field that is not one length this cache can take: not `1*DIGIT`, a list of differing
    /// values, or a number of more than ``maxDigits`` digits.
    case invalid

    /// The most digits a length may have: up to 10^18 - 1 bytes (888 PiB), so that sums of a few
    /// lengths and record overheads never come near `Int.max` (about 9.2 × 10^18).
    static let maxDigits = 18

    /// The `Content-Length` of `headers`: their values joined, as ``init(joined:)`` reads them
    /// (read in place: one field, as nearly always, makes no new string).
    init(_ headers: HeaderFields) {
        var joined: String?
        for field in headers where field.name.utf8.count == 14 && HeaderFields.namesEqual(field.name, "Content-Length") {
            joined = joined.map { $0 + "," + field.value } ?? field.value
        }
        self.init(joined: joined)
    }

    /// The `Content-Length` of a message whose `Content-Length` fields' values, joined with
    /// commas (RFC 9110 §5.3: the fields read as one list), are `value`; `nil`: no such field.
    init(joined value: String?) {
        guard var value else {
            self = .absent
            return
        }
        var found: Int?
        let valid = value.withUTF8 { bytes -> Bool in
            // (Empty members of a list are ignored, RFC 9110 §5.6.1: `5,` and `, 5` are `5`.)
            var start = 0
            while start <= bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
                let member = UnsafeBufferPointer(rebasing: bytes[start..<end])
                if member.contains(where: { $0 != 0x20 && $0 != 0x09 }) {
                    guard let length = Self.number(member), found == nil || found == length else { return false }
                    found = length
                }
                start = end + 1
            }
            return true
        }
        self = valid ? found.map { .length($0) } ?? .invalid : .invalid
    }

    /// The length, when there is one valid length.
    var value: Int? {
        if case .length(let value) = self { return value }
        return nil
    }

    /// `1*DIGIT` between optional whitespace, at most ``maxDigits`` digits, or `nil`.
    private static func number(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        func isOWS(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        guard let start = bytes.firstIndex(where: { !isOWS($0) }), let end = bytes.lastIndex(where: { !isOWS($0) }) else { return nil }
        let digits = bytes[start...end]
        guard digits.count <= maxDigits else { return nil }
        var value = 0
        for byte in digits {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }
}
