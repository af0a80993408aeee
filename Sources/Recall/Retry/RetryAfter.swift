import Foundation

/// The `Retry-After` header field (RFC 9110 §10.2.3): delta-seconds or an HTTP-date.
public enum RetryAfter {
    /// The longest hint ever returned; larger or later values are cut to it, so arithmetic
    /// on hostile values cannot overflow.
    public static let ceiling: Duration = .seconds(86_400 * 365)

    /// The wait that `value` asks for, measured from `now`, or `nil` when it is not a valid
    /// `Retry-After` (negative, fractional, garbage). A date in the past asks for zero.
    public static func parse(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingOWS
        guard !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // All digits: delta-seconds (leading zeros allowed: 0000000000005 is 5 s). Anything
            // over the ceiling (even 10^30) is the ceiling.
            let digits = text.drop { $0 == "0" }
            guard !digits.isEmpty else { return .zero }
            guard digits.utf8.count <= 12, let seconds = Int64(digits) else { return ceiling }
            return min(.seconds(seconds), ceiling)
        }
        guard let date = HTTPDate.parse(text, now: now) else { return nil }
        let interval = date.timeIntervalSince(now)
        guard interval > 0 else { return .zero }
        return min(.seconds(interval), ceiling)
    }
}
