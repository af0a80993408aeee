/// Sums of byte counts that never trap: a size that comes from the wire (a `Content-Length`, a
/// `Content-Range`) or from stored bytes may be near `Int.max`, and `+` would stop the process.
enum ByteCount {
    /// `counts` added up, or `nil` when a count is negative or the sum would overflow.
    static func sum(_ counts: Int...) -> Int? {
        var total = 0
        for count in counts {
            guard count >= 0 else { return nil }
            let (next, overflow) = total.addingReportingOverflow(count)
            if overflow { return nil }
            total = next
        }
        return total
    }
}
