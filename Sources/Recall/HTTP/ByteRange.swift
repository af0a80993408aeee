/// One byte range of a `Range: bytes=…` request field (RFC 9110 §14.1.2): `first-last`,
/// `first-`, or the last `n` bytes (`-n`).
public enum ByteRange: Sendable, Hashable {
    /// Bytes `first` through `last`, both included (`last` may exceed the length: it is clamped).
    case closed(first: Int, last: Int)
    /// Bytes from `first` to the end.
    case from(Int)
    /// The last `count` bytes.
    case suffix(Int)

    /// The single range of a `Range` field value, or `nil` when it is not one well-formed byte
    /// range (several ranges, another unit, bad syntax): such requests go to the origin.
    public init?(rangeField value: String) {
        let trimmed = value.trimmingOWS
        guard trimmed.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = trimmed.dropFirst(6).trimmingOWS
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash].trimmingOWS, last = spec[spec.index(after: dash)...].trimmingOWS
        func number(_ text: String) -> Int? {
            guard !text.isEmpty, text.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return Int(text)
        }
        switch (first.isEmpty, last.isEmpty) {
        case (true, false):
            guard let count = number(last) else { return nil }
            self = .suffix(count)
        case (false, true):
            guard let start = number(first) else { return nil }
            self = .from(start)
        case (false, false):
            guard let start = number(first), let end = number(last), start <= end else { return nil }
            self = .closed(first: start, last: end)
        case (true, true):
            return nil
        }
    }

    /// The range as a `Range` field value (`bytes=first-last`, `bytes=first-`, `bytes=-count`).
    public var fieldValue: String {
        switch self {
        case .closed(let first, let last): "bytes=\(first)-\(last)"
        case .from(let first): "bytes=\(first)-"
        case .suffix(let count): "bytes=-\(count)"
        }
    }

    /// The byte positions this range selects in a representation of `length` bytes, or `nil`
    /// when it selects none (unsatisfiable: answered with 416).
    public func bounds(length: Int) -> ClosedRange<Int>? {
        switch self {
        case .closed(let first, let last):
            return first < length ? first...min(last, length - 1) : nil
        case .from(let first):
            return first < length ? first...(length - 1) : nil
        case .suffix(let count):
            return count > 0 && length > 0 ? max(0, length - count)...(length - 1) : nil
        }
    }
}
